import Dispatch
import Foundation
import Synchronization

/// A thread of the engine's own that brings network events and the engine's one timer onto
/// the engine's queue with `queue.sync`, which runs the block on the calling thread.
///
/// Why not `queue.async` and a dispatch timer source: both hand the work to a libdispatch
/// worker thread, and a worker that has been idle for 5 s exits, which is one more wake-up
/// 5 s after every keepalive (docs/benchmarks.md allows one per 30 s). This thread sleeps on a
/// semaphore until the next event or deadline, so a connected idle daemon wakes only for the
/// keepalive itself. It starts with the first event or deadline and ends at `stop()`.
final class EngineThread: Sendable {
    private struct State {
        var started = false
        var stopped = false
        /// Events waiting to run, oldest first.
        var jobs: [@Sendable () -> Void] = []
        var deadline: (time: DispatchTime, action: @Sendable () -> Void)?
    }

    private let queue: DispatchQueue
    private let state = Mutex(State())
    /// Signalled whenever `state` changes; the thread waits on it.
    private let wake = DispatchSemaphore(value: 0)

    init(queue: DispatchQueue) { self.queue = queue }

    /// Runs `job` on the queue, after the jobs posted before it. After `stop()`, jobs go to
    /// the queue directly (the engine ignores events once stopped).
    func post(_ job: @escaping @Sendable () -> Void) {
        let accepted = state.withLock { state in
            guard !state.stopped else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { changed() } else { queue.async(execute: job) }
    }

    /// Runs `action` on the queue at `time`, replacing the previous deadline; `nil` clears it.
    /// Ignored after `stop()`.
    func schedule(at time: DispatchTime?, _ action: @escaping @Sendable () -> Void) {
        state.withLock { state in
            guard !state.stopped else { return }
            state.deadline = time.map { ($0, action) }
        }
        changed()
    }

    /// Jobs posted so far still run; then the thread ends.
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
    }

    private func changed() {
        let start = state.withLock { state in
            defer { state.started = true }
            return !state.started && !state.stopped
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "notesd-engine"
            thread.start()
        }
        wake.signal()
    }

    private func run() {
        while true {
            let (jobs, due, deadline, stopped) = state.withLock { state in
                let jobs = state.jobs
                state.jobs = []
                var due: (@Sendable () -> Void)?
                if let deadline = state.deadline, deadline.time <= .now() {
                    due = deadline.action
                    state.deadline = nil
                }
                return (jobs, due, state.deadline?.time, state.stopped)
            }
            if !jobs.isEmpty || due != nil {
                queue.sync {
                    for job in jobs { job() }
                    due?()
                }
            } else if stopped {
                return
            } else {
                // Extra signals (one per change) only make the loop look again.
                _ = wake.wait(timeout: deadline ?? .distantFuture)
            }
        }
    }
}
