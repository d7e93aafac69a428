#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CMicroHTTPD
import Foundation
import Synchronization

/// The request deadline (docs/web.md, "Limits"): a request must arrive whole — head and body —
/// within `limit` of the moment it could begin (the connection opening, or the previous answer
/// finishing on a kept-alive connection). libmicrohttpd's own timeout only counts silence, so
/// a client sending one byte every 29 s would otherwise hold its slot forever.
///
/// Each open connection is tracked by its libmicrohttpd handle with its socket and, while a
/// request is awaited, its deadline. One thread sleeps until the earliest deadline — with no
/// timeout at all while none is armed, so an idle daemon does not wake — and then writes a
/// 408 with our headers and shuts the socket down; libmicrohttpd sees the end of the stream
/// and closes the connection itself, so the socket keeps its single owner. The lock is held
/// from the table lookup through `shutdown`, and libmicrohttpd reports a close (`closed`,
/// which takes the lock) before it closes the socket, so a number reused by a new socket is
/// never shut down by mistake.
final class RequestDeadlines: Sendable {
    /// One connection: its socket, and when its awaited request is overdue (`nil`: the
    /// request is in, or answered, so nothing is awaited).
    private struct Entry {
        let socket: Int32
        var deadline: DispatchTime?
        /// The deadline passed: the 408 went out and the socket is shut down.
        var expired = false
    }

    private struct State {
        private(set) var entries: [UInt: Entry] = [:]
        /// Entries with a deadline.
        private(set) var armed = 0
        /// What the thread sleeps until: `.distantFuture` while it waits without a timeout.
        var sleepingUntil: DispatchTime = .distantFuture
        var stopping = false

        mutating func add(_ key: UInt, socket: Int32, deadline: DispatchTime) {
            remove(key)
            entries[key] = Entry(socket: socket, deadline: deadline)
            armed += 1
        }

        mutating func remove(_ key: UInt) {
            if entries.removeValue(forKey: key)?.deadline != nil { armed -= 1 }
        }

        /// Sets a tracked connection's deadline; false if it is not tracked.
        @discardableResult
        mutating func set(_ key: UInt, deadline: DispatchTime?) -> Bool {
            guard let old = entries[key] else { return false }
            armed += (deadline == nil ? 0 : 1) - (old.deadline == nil ? 0 : 1)
            entries[key]?.deadline = deadline
            return true
        }

        mutating func markExpired(_ key: UInt) {
            set(key, deadline: nil)
            entries[key]?.expired = true
        }

        /// Whether the thread must be woken for a deadline that is now the earliest (it then
        /// counts as what the thread sleeps until), or because none is left and it should stop
        /// sleeping with a timeout — after the last connection goes, an idle daemon does not
        /// wake again.
        mutating func needsWake(for deadline: DispatchTime?) -> Bool {
            if let deadline, deadline < sleepingUntil {
                sleepingUntil = deadline
                return true
            }
            if armed == 0, sleepingUntil != .distantFuture {
                sleepingUntil = .distantFuture
                return true
            }
            return false
        }
    }

    let limit: Duration
    private let timeoutAnswer: Data
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let log: @Sendable (String) -> Void

    init(limit: Duration, timeoutAnswer: Data, log: @escaping @Sendable (String) -> Void) {
        self.limit = limit
        self.timeoutAnswer = timeoutAnswer
        self.log = log
        let thread = Thread { [self] in run() }
        thread.start()
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }

    private var nextDeadline: DispatchTime {
        let (seconds, attoseconds) = limit.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        return DispatchTime.now() + .nanoseconds(Int(clamping: nanoseconds))
    }

    /// A connection opened: its first request is awaited from now.
    func opened(_ connection: OpaquePointer, socket: Int32) {
        arm(connection, socket: socket)
    }

    /// The previous request on a kept-alive connection is finished: the next is awaited.
    func awaitNext(_ connection: OpaquePointer) {
        arm(connection, socket: nil)
    }

    private func arm(_ connection: OpaquePointer, socket: Int32?) {
        let deadline = nextDeadline
        let signal = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            let key = Self.key(connection)
            if let socket {
                state.add(key, socket: socket, deadline: deadline)
            } else if !state.set(key, deadline: deadline) {
                return false
            }
            // Every deadline is now + limit, so only a thread with nothing to wait for needs
            // waking; one waiting for an earlier deadline looks again when it passes.
            return state.needsWake(for: deadline)
        }
        if signal { wake.signal() }
    }

    /// The whole request is in, or an answer is queued: nothing is awaited until it ends.
    /// False when the deadline beat it (the client was told 408 and the socket is shut
    /// down): the request must not be acted on, or a client that sends it again would have
    /// it done twice.
    @discardableResult
    func settled(_ connection: OpaquePointer) -> Bool {
        let (signal, expired) = state.withLock { state in
            let key = Self.key(connection)
            let expired = state.entries[key]?.expired ?? false
            return (state.set(key, deadline: nil) && state.needsWake(for: nil), expired)
        }
        if signal { wake.signal() }
        return !expired
    }

    /// libmicrohttpd is closing the connection (before it closes the socket).
    func closed(_ connection: OpaquePointer) {
        let signal = state.withLock { state in
            state.remove(Self.key(connection))
            return state.needsWake(for: nil)
        }
        if signal { wake.signal() }
    }

    /// Ends the thread; call after the daemon has stopped (every connection closed).
    func stop() {
        state.withLock { $0.stopping = true }
        wake.signal()
        finished.wait()
    }

    /// The thread's name as `ps -L` and /proc show it (15 bytes at most).
    static let threadName = "web-deadlines"

    private func run() {
        notesd_name_this_thread(Self.threadName)
        while true {
            let until = state.withLock { state -> DispatchTime? in
                guard !state.stopping else { return nil }
                let earliest = state.entries.values.compactMap(\.deadline).min() ?? .distantFuture
                state.sleepingUntil = earliest
                return earliest
            }
            guard let until else { break }
            if until == .distantFuture {
                wake.wait()
                continue
            }
            // Woken early (a new deadline, or stop): look again.
            guard wake.wait(timeout: until) == .timedOut else { continue }
            expire()
        }
        finished.signal()
    }

    /// Answers and shuts down every connection past its deadline.
    private func expire() {
        let now = DispatchTime.now()
        let overdue = state.withLock { state -> Int in
            var count = 0
            for (key, entry) in state.entries {
                guard let deadline = entry.deadline, deadline <= now else { continue }
                state.markExpired(key)
                // Best effort: a client that does not read may leave no room; it is closed anyway.
                _ = timeoutAnswer.withUnsafeBytes { send(entry.socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
                _ = shutdown(entry.socket, Int32(SHUT_RDWR))
                count += 1
            }
            return count
        }
        if overdue > 0 { log("closed \(overdue) connection(s) whose request did not arrive within \(limit)") }
    }
}
