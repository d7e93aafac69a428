import Control
import Dispatch
import Foundation
import Synchronization

/// Watches a daemon's events on a thread of its own and notes the moment a remote change to
/// an expected note arrives: the end of "an edit on A is visible on B". A second thread, not
/// the one sending the edit, so the arrival is timed when it happens rather than after the
/// edit's own answer was read.
final class ArrivalWatcher: Sendable {
    private struct State {
        var expected: String?
        var arrival: ContinuousClock.Instant?
        var stopped = false
        var failure: String?
    }

    private let state = Mutex(State())
    private let arrived = DispatchSemaphore(value: 0)

    /// Connects, subscribes, and returns once the subscription is confirmed.
    init(socketPath: String) throws {
        let subscribed = DispatchSemaphore(value: 0)
        Thread { [self] in watch(socketPath: socketPath, subscribed: subscribed) }.start()
        subscribed.wait()
        if let failure = state.withLock({ $0.failure }) { throw BenchError("cannot watch \(socketPath): \(failure)") }
    }

    private func watch(socketPath: String, subscribed: DispatchSemaphore) {
        let client: ControlClient
        do {
            client = try ControlClient(socketPath: socketPath)
            try client.watch()
        } catch {
            state.withLock { $0.failure = error.description }
            subscribed.signal()
            return
        }
        subscribed.signal()
        while !state.withLock({ $0.stopped }) {
            let event: ControlEvent?
            do { event = try client.nextEvent(timeout: .milliseconds(200)) } catch {
                state.withLock { $0.failure = error.description }
                arrived.signal()
                return
            }
            guard case .noteChanged(let change) = event?.payload, change.origin == .remote else { continue }
            let now = ContinuousClock.now
            let matched = state.withLock { state in
                guard state.expected == change.note, state.arrival == nil else { return false }
                state.arrival = now
                return true
            }
            if matched { arrived.signal() }
        }
    }

    /// Call before making the change, so an early arrival is not missed.
    func expect(note: String) {
        state.withLock {
            $0.expected = note
            $0.arrival = nil
        }
    }

    /// When the expected change arrived; nil when it did not within `timeout`.
    func waitForArrival(timeout: Duration) throws -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            _ = arrived.wait(timeout: .now() + .milliseconds(Int(Measure.milliseconds(ContinuousClock.now.duration(to: deadline))) + 1))
            let (arrival, failure) = state.withLock { ($0.arrival, $0.failure) }
            if let failure { throw BenchError("watching failed: \(failure)") }
            if let arrival { return arrival }
        }
        return nil
    }

    func stop() { state.withLock { $0.stopped = true } }
}
