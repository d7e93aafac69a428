import Control
import Foundation
import Synchronization

/// The `watch` events for `GET /api/events`: a bounded ring of recent ones (for
/// `Last-Event-ID`) and the open streams. Events are recorded while a stream is open and
/// for `lingerAfterLastStream` after the last one closed (a reload reconnects within
/// seconds); with no browser for longer, nothing is recorded, the engine skips building
/// events, and a client that comes back later gets a `resync`.
public final class EventHub: Sendable {
    public struct Limits: Sendable {
        /// Open streams at most; one more gets 503.
        public var maximumStreams = 64
        /// Events kept for resumption.
        public var ringCapacity = 1024
        /// A stream with more than this many bytes unsent is closed (it reconnects and resumes
        /// or resyncs), so a stalled browser costs bounded memory.
        public var maximumUnsentBytes = 1 << 20
        /// The comment line's period while any stream is open: under the 30 s a client or a
        /// proxy may treat as dead, and how soon a vanished client is noticed.
        public var keepaliveSeconds = 25
        public var lingerAfterLastStream: Duration = .seconds(600)

        public init() {}
    }

    public let limits: Limits
    private let state: Mutex<State>
    /// Signalled when the first stream opens and at stop, so the keepalive thread sleeps
    /// without a timeout while no stream is open (an idle daemon does not wake up).
    private let keepaliveWake = DispatchSemaphore(value: 0)
    private let keepaliveStopped = DispatchSemaphore(value: 0)

    private struct State {
        var ring: EventRing
        var streams: [UInt64: EventStream] = [:]
        var lastStreamID: UInt64 = 0
        /// When the last stream closed; `nil` while streams are open or before the first.
        var lastStreamClosed: ContinuousClock.Instant?
        var everOpened = false
        var stopped = false
    }

    public init(limits: Limits = Limits()) {
        self.limits = limits
        state = Mutex(State(ring: EventRing(capacity: limits.ringCapacity, epoch: Self.newEpoch())))
        let thread = Thread { [self] in keepaliveLoop() }
        thread.name = "notesd-web-keepalive"
        thread.start()
    }

    /// Whether events are wanted now; the engine skips building them otherwise.
    public var isRecording: Bool {
        state.withLock { Self.recording($0, limits: limits, now: .now) }
    }

    private static func recording(_ state: State, limits: Limits, now: ContinuousClock.Instant) -> Bool {
        if !state.streams.isEmpty { return true }
        guard let closed = state.lastStreamClosed else { return false }
        return now - closed < limits.lingerAfterLastStream
    }

    public var openStreams: Int { state.withLock { $0.streams.count } }

    /// Records `event` and sends it to every open stream.
    public func publish(_ event: ControlEvent) {
        guard let data = try? ControlJSON.encoder().encode(event) else { return }
        let (frame, streams) = state.withLock { state -> (Data?, [EventStream]) in
            guard Self.recording(state, limits: limits, now: .now) else { return (nil, []) }
            let entry = state.ring.append(type: event.payload.type, data: data)
            return (ServerSentEvents.event(id: entry.id, type: entry.type, data: entry.data), Array(state.streams.values))
        }
        guard let frame else { return }
        for stream in streams { stream.enqueue(frame) }
    }

    /// A new stream for a client that last saw `lastEventID`, its first bytes queued; `nil`
    /// when `maximumStreams` are open (or the hub stopped).
    public func open(lastEventID: String?) -> EventStream? {
        let opened = state.withLock { state -> (EventStream, Bool)? in
            guard !state.stopped, state.streams.count < limits.maximumStreams else { return nil }
            // Nothing was recorded for a while: ids from before cannot be resumed.
            if state.everOpened, !Self.recording(state, limits: limits, now: .now) { state.ring.restart(epoch: Self.newEpoch()) }
            state.everOpened = true
            state.lastStreamID += 1
            let stream = EventStream(id: state.lastStreamID, maximumUnsentBytes: limits.maximumUnsentBytes)
            var first = ServerSentEvents.retry
            let latest = state.ring.latestID
            switch lastEventID.map({ state.ring.events(after: $0) }) {
            case nil:
                first += ServerSentEvents.event(id: latest, type: "ready", data: Self.marker("ready", latest, nil))
            case .events(let missed)?:
                for entry in missed { first += ServerSentEvents.event(id: entry.id, type: entry.type, data: entry.data) }
                first += ServerSentEvents.event(id: nil, type: "ready", data: Self.marker("ready", latest, nil))
            case .gap?:
                first += ServerSentEvents.event(id: latest, type: "resync", data: Self.marker(
                    "resync", latest, "events since \(lastEventID ?? "") are no longer held (the daemon restarted or the gap is too long); re-read the notes"))
            }
            stream.enqueue(first)
            let wasEmpty = state.streams.isEmpty
            state.streams[stream.id] = stream
            state.lastStreamClosed = nil
            return (stream, wasEmpty)
        }
        guard let (stream, first) = opened else { return nil }
        if first { keepaliveWake.signal() }
        return stream
    }

    /// The stream's connection ended.
    public func close(_ stream: EventStream) {
        stream.close()
        state.withLock { state in
            guard state.streams.removeValue(forKey: stream.id) != nil else { return }
            if state.streams.isEmpty { state.lastStreamClosed = .now }
        }
    }

    /// Ends every open stream (every session was signed out: a tab must not keep receiving
    /// events after `notesctl ui --logout-all`); new streams can open. Returns how many ended.
    @discardableResult
    public func closeAll() -> Int {
        let streams = state.withLock { state in
            let streams = Array(state.streams.values)
            state.streams = [:]
            if !streams.isEmpty { state.lastStreamClosed = .now }
            return streams
        }
        for stream in streams { stream.close() }
        return streams.count
    }

    /// Ends every stream and the keepalive thread; later `open`s fail.
    public func stop() {
        let streams = state.withLock { state in
            state.stopped = true
            let streams = Array(state.streams.values)
            state.streams = [:]
            return streams
        }
        for stream in streams { stream.close() }
        keepaliveWake.signal()
        keepaliveStopped.wait()
    }

    private func keepaliveLoop() {
        while true {
            let (stopped, streams) = state.withLock { ($0.stopped, Array($0.streams.values)) }
            if stopped { break }
            if streams.isEmpty {
                keepaliveWake.wait()
                continue
            }
            guard keepaliveWake.wait(timeout: .now() + .seconds(limits.keepaliveSeconds)) == .timedOut else { continue }
            for stream in state.withLock({ Array($0.streams.values) }) { stream.enqueue(ServerSentEvents.keepalive) }
        }
        keepaliveStopped.signal()
    }

    private struct Marker: Encodable {
        let type: String
        let lastEventId: String
        let message: String?
    }

    private static func marker(_ type: String, _ id: String, _ message: String?) -> Data {
        (try? ControlJSON.encoder().encode(Marker(type: type, lastEventId: id, message: message))) ?? Data("{}".utf8)
    }

    /// Eight random hex digits: this ring's ids cannot be confused with another run's.
    static func newEpoch() -> String {
        String(format: "%08x", UInt32.random(in: 0...UInt32.max))
    }
}

/// One open event stream: bytes waiting for the connection, and the hooks the server sets
/// to park the connection while nothing is waiting and wake it when something arrives.
public final class EventStream: Sendable {
    public let id: UInt64
    private let maximumUnsentBytes: Int
    private let state = Mutex(State())

    private struct State {
        var pending = Data()
        var closed = false
        /// The server parked the connection (it is not polled until `wake` runs).
        var parked = false
        var wake: (@Sendable () -> Void)?
    }

    init(id: UInt64, maximumUnsentBytes: Int) {
        self.id = id
        self.maximumUnsentBytes = maximumUnsentBytes
    }

    /// How the server resumes the connection; called (once per park) under the stream's
    /// lock, so a park and a wake never cross.
    public func setWake(_ wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wake = wake }
    }

    public var isClosed: Bool { state.withLock { $0.closed } }

    /// The connection has ended: forget the wake hook, so nothing resumes it.
    public func detach() {
        state.withLock { state in
            state.wake = nil
            state.parked = false
            state.closed = true
        }
    }

    func enqueue(_ bytes: Data) {
        state.withLock { state in
            guard !state.closed else { return }
            if state.pending.count + bytes.count > maximumUnsentBytes {
                state.closed = true
                state.pending = Data()
            } else {
                state.pending.append(bytes)
            }
            Self.unpark(&state)
        }
    }

    func close() {
        state.withLock { state in
            state.closed = true
            Self.unpark(&state)
        }
    }

    private static func unpark(_ state: inout State) {
        guard state.parked else { return }
        state.parked = false
        state.wake?()
    }

    /// What the connection's reader does next.
    public enum Read {
        /// This many bytes were copied.
        case bytes(Int)
        /// Nothing waits: `park` was called (under the lock) and the server returns 0.
        case parked
        /// The stream is over.
        case ended
    }

    /// Copies up to `capacity` waiting bytes to `buffer`; with nothing waiting, calls `park`.
    public func read(into buffer: UnsafeMutableRawBufferPointer, park: () -> Void) -> Read {
        state.withLock { state in
            if !state.pending.isEmpty {
                let count = min(buffer.count, state.pending.count)
                state.pending.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: state.pending.startIndex..<(state.pending.startIndex + count))
                state.pending.removeFirst(count)
                return .bytes(count)
            }
            if state.closed { return .ended }
            state.parked = true
            park()
            return .parked
        }
    }
}
