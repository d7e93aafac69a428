import Dispatch

/// Work on a large answer split in two halves that run at once, the second on the machine's
/// other core (libdispatch's `concurrentPerform`; the first runs on the calling thread, so
/// nothing blocks waiting for a worker). Used where one request builds megabytes — every
/// note of a library, its summaries and its JSON — and the engine's other work, and the
/// person waiting, wait for it (docs/decisions.md, "Listing answers written directly").
public enum TwoHalves {
    /// Below this many elements the split costs more than it saves: one pass, here.
    public static let minimumElements = 2_000

    /// `first` and `second` at once, one on each core; both results.
    public static func both<First: Sendable, Second: Sendable>(_ first: @Sendable () -> First, _ second: @Sendable () -> Second) -> (First, Second) {
        nonisolated(unsafe) var firstResult: First?
        nonisolated(unsafe) var secondResult: Second?
        // Each iteration writes its own result, and concurrentPerform returns after both.
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            if half == 0 { firstResult = first() } else { secondResult = second() }
        }
        return (firstResult!, secondResult!)
    }

    /// `work` on `0..<count` as one range when small, else on its two halves at once; the
    /// results in order.
    public static func map<Result: Sendable>(count: Int, _ work: @Sendable (Range<Int>) -> Result) -> [Result] {
        guard count >= minimumElements else { return [work(0..<count)] }
        let middle = count / 2
        let halves = [0..<middle, middle..<count]
        let results = UnsafeMutableBufferPointer<Result?>.allocate(capacity: 2)
        results.initialize(repeating: nil)
        defer { results.deinitialize().deallocate() }
        // Each iteration writes its own slot, and concurrentPerform returns after both.
        nonisolated(unsafe) let slots = results
        DispatchQueue.concurrentPerform(iterations: 2) { half in slots[half] = work(halves[half]) }
        return results.map { $0! }
    }
}
