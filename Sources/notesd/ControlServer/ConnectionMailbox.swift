#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// What other threads hand to the poll loop for one connection: the answer of the request
/// in progress and the `watch` events; and what the loop tells them back: that the
/// connection closed. Every change wakes the loop.
final class ConnectionMailbox: Sendable {
    let id: ControlConnectionID
    /// `nil` for a web request's mailbox, which no poll loop reads.
    private let waker: LoopWaker?
    private let maximumUnsentEventBytes: Int
    private let state = Mutex(State())

    private struct State {
        var closed = false
        /// Numbers the connection's requests, so each can be answered once only.
        var lastRequest: UInt64 = 0
        /// The request in progress that has not been answered yet.
        var unanswered: UInt64?
        /// The answer to the request in progress, not yet taken by the loop.
        var response: Data?
        var watch = WatchState.off
        /// Events accepted and not yet taken by the loop (only while `.streaming`).
        var events: [Data] = []
        /// Bytes of events accepted and not yet written to the socket.
        var unsentEventBytes = 0
        /// More than `maximumUnsentEventBytes` were waiting: the loop disconnects the client.
        var overflowed = false
    }

    private enum WatchState {
        /// No `watch` on this connection.
        case off
        /// `startWatch()` was called by the request in progress; its events wait for its answer.
        case awaitingResponse(WatchSink)
        /// The `watch` answer is queued; events go out as they come.
        case streaming(WatchSink)
    }

    init(id: ControlConnectionID, waker: LoopWaker?, maximumUnsentEventBytes: Int) {
        self.id = id
        self.waker = waker
        self.maximumUnsentEventBytes = maximumUnsentEventBytes
    }

    // MARK: Called by handlers and the engine, from any thread

    var isClosed: Bool { state.withLock { $0.closed } }

    /// The `reply` for the request the loop is starting: the first call hands over its
    /// answer; later calls (a handler bug) are dropped, so they can never pass for the answer
    /// to the connection's next request. Answers after the connection closed are dropped too.
    func replyForNextRequest() -> @Sendable (Data) -> Void {
        let request = state.withLock { state in
            state.lastRequest += 1
            state.unanswered = state.lastRequest
            return state.lastRequest
        }
        return { [self] line in deliverResponse(line, to: request) }
    }

    private func deliverResponse(_ line: Data, to request: UInt64) {
        let accepted = state.withLock { state in
            guard !state.closed, state.unanswered == request else { return false }
            state.unanswered = nil
            state.response = line
            return true
        }
        if accepted { waker?.wake() }
    }

    func startWatch() -> WatchSink {
        state.withLock { state in
            switch state.watch {
            case .off:
                let sink = WatchSink(mailbox: self)
                state.watch = .awaitingResponse(sink)
                return sink
            case .awaitingResponse(let sink), .streaming(let sink):
                return sink
            }
        }
    }

    /// Queues one event line; `false` when the connection is closed, or has just been
    /// marked for disconnection because the client fell too far behind.
    func sendEvent(_ line: Data) -> Bool {
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            guard state.unsentEventBytes + line.count <= maximumUnsentEventBytes else {
                state.overflowed = true
                state.closed = true
                state.events = []
                return false
            }
            state.unsentEventBytes += line.count
            state.events.append(line)
            return true
        }
        // An overflow wakes the loop too, so that it disconnects the client now.
        waker?.wake()
        return accepted
    }

    // MARK: Called by the poll loop

    /// What the loop takes on each pass: the answer (at most one), then the events that may
    /// follow it, and whether the watcher overflowed.
    struct Delivery {
        var response: Data?
        var events: [Data]
        var overflowed: Bool
    }

    func collect() -> Delivery {
        state.withLock { state in
            let response = state.response
            state.response = nil
            if response != nil, case .awaitingResponse(let sink) = state.watch { state.watch = .streaming(sink) }
            var events: [Data] = []
            if case .streaming = state.watch {
                events = state.events
                state.events = []
            }
            return Delivery(response: response, events: events, overflowed: state.overflowed)
        }
    }

    var isWatching: Bool {
        state.withLock { if case .off = $0.watch { false } else { true } }
    }

    /// `count` bytes of events reached the socket.
    func eventBytesWritten(_ count: Int) {
        state.withLock { $0.unsentEventBytes -= count }
    }

    /// The connection is gone: later answers and events are dropped, sinks report closed.
    func close() {
        state.withLock { state in
            state.closed = true
            state.response = nil
            state.events = []
        }
    }
}

/// Wakes the poll loop from other threads: a byte written to a pipe the loop polls.
final class LoopWaker: Sendable {
    /// The pipe's ends; `nil` once closed, so a late `wake()` cannot write to a reused
    /// descriptor number.
    private let pipe: Mutex<(read: Int32, write: Int32)?>
    let readDescriptor: Int32

    init() throws(FileSystemError) {
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else { throw FileSystemError(code: errno, operation: "create", path: "the control server's wake-up pipe", hint: nil) }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, fcntl(end, F_GETFD) | FD_CLOEXEC)
        }
        readDescriptor = ends[0]
        pipe = Mutex((read: ends[0], write: ends[1]))
    }

    /// A full pipe means a wake-up is already pending, so a failed write is fine.
    func wake() {
        pipe.withLock { ends in
            guard let ends else { return }
            var byte: UInt8 = 1
            _ = write(ends.write, &byte, 1)
        }
    }

    /// Empties the pipe, so the next `poll` sleeps until the next `wake()`.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(readDescriptor, &buffer, buffer.count) > 0 {}
    }

    func close() {
        pipe.withLock { ends in
            guard let open = ends else { return }
            _ = Glibc.close(open.read)
            _ = Glibc.close(open.write)
            ends = nil
        }
    }
}
