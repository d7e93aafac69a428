import Foundation

/// Work on a large answer split in two halves that run at once: the first on the calling
/// thread, the second on `SecondCore`'s thread (or on the caller too, if that thread is busy
/// with another request's half when the caller is done). Used where one request builds
/// megabytes — every note of a library, its summaries and its JSON — or ranks thousands of
/// search matches, while the engine's other work and the person waiting wait for it
/// (docs/decisions.md, "Listing answers written directly").
public enum TwoHalves {
    /// Below this many elements the split costs more than it saves: one pass, here.
    public static let minimumElements = 2_000

    /// `first` and `second` at once, one on each core; both results. `second` may be kept by
    /// the second core's queue after this returns (unrun: the caller ran it), never run twice.
    public static func both<First: Sendable, Second: Sendable>(
        _ first: @Sendable () -> First, _ second: @escaping @Sendable () -> Second
    ) -> (First, Second) {
        let result = SecondCore.Result<Second>()
        let job = SecondCore.Job { result.value = second() }
        SecondCore.shared.offer(job)
        let firstResult = first()
        job.finish()
        return (firstResult, result.value!)
    }

    /// `work` on `0..<count` as one range when small, else on its two halves at once; the
    /// results in order.
    public static func map<Result: Sendable>(count: Int, _ work: @escaping @Sendable (Range<Int>) -> Result) -> [Result] {
        guard count >= minimumElements else { return [work(0..<count)] }
        let middle = count / 2
        let (first, second) = both({ work(0..<middle) }, { work(middle..<count) })
        return [first, second]
    }
}

/// One thread for the second half of `TwoHalves` work, parked on a semaphore between jobs.
/// Not libdispatch's `concurrentPerform`: after it had run, libdispatch's manager thread woke
/// every second for as long as the daemon stayed idle (strace: 62 wake-ups a minute).
final class SecondCore: @unchecked Sendable {
    static let shared = SecondCore()

    /// Where the second half leaves its result; read once the job has finished.
    final class Result<Value>: @unchecked Sendable {
        var value: Value?
    }

    /// A half offered to the thread; whoever claims it first runs it.
    final class Job: @unchecked Sendable {
        /// Taken by whoever claims the job, so a claimed job holds nothing.
        private var work: (@Sendable () -> Void)?
        private let lock = NSLock()
        private let done = DispatchSemaphore(value: 0)

        init(_ work: @escaping @Sendable () -> Void) { self.work = work }

        /// Runs the work if nobody has claimed it; true when this call ran it.
        func runIfUnclaimed() -> Bool {
            guard let claimed = lock.withLock({ work.take() }) else { return false }
            claimed()
            return true
        }

        /// Called by the offering thread once its own half is done: runs the work itself if
        /// the second core has not started it, else waits for it to end.
        func finish() {
            if runIfUnclaimed() { return }
            done.wait()
        }

        fileprivate func ranThere() { done.signal() }
    }

    private let lock = NSLock()
    private var queue: [Job] = []
    private let waiting = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in
            while true {
                waiting.wait()
                guard let job = lock.withLock({ queue.isEmpty ? nil : queue.removeFirst() }) else { continue }
                if job.runIfUnclaimed() { job.ranThere() }
            }
        }
        thread.name = "notesd-second-core"
        thread.start()
    }

    func offer(_ job: Job) {
        lock.withLock { queue.append(job) }
        waiting.signal()
    }
}
