import Control
import Foundation
import Synchronization
import Testing

/// `TwoHalves`: both halves run exactly once and their results come back in order, whether
/// the second core's thread or the caller runs the second half, and with many callers at once
/// (connections write their answers' JSON concurrently).
@Suite struct TwoHalvesTests {
    @Test func bothHalvesRunOnceAndComeBackInOrder() {
        let (first, second) = TwoHalves.both({ (0..<1_000).reduce(0, +) }, { "second" })
        #expect(first == 499_500 && second == "second")
        #expect(TwoHalves.map(count: 10) { Array($0) } == [Array(0..<10)])
        let count = TwoHalves.minimumElements * 3 + 1
        let halves = TwoHalves.map(count: count) { Array($0) }
        #expect(halves.count == 2 && halves.joined().elementsEqual(0..<count))
    }

    /// While the second core's thread is held by one caller's long half, another caller's
    /// second half does not wait for it: the caller claims and runs it itself.
    @Test func aBusySecondCoreLeavesTheSecondHalfToTheCaller() {
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        Thread {
            // The first half waits until the second has started, so the second can only be
            // running on the second core's thread, which it then holds until released.
            _ = TwoHalves.both({ started.wait() }, {
                started.signal()
                holding.signal()
                release.wait()
            })
        }.start()
        #expect(holding.wait(timeout: .now() + 30) == .success)
        // Another caller, on a thread of its own so that a wrong implementation (waiting for
        // the busy thread) shows as a timeout here rather than a hung test.
        let ranOnCaller = Mutex(false)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            let caller = pthread_self()
            let (_, ranOn) = TwoHalves.both({ () }, { pthread_self() })
            ranOnCaller.withLock { $0 = pthread_equal(ranOn, caller) != 0 }
            finished.signal()
        }.start()
        let result = finished.wait(timeout: .now() + 30)
        release.signal()
        #expect(result == .success, "the second half waited for the busy thread")
        #expect(ranOnCaller.withLock { $0 })
    }

    /// Eight threads splitting work at once all get their own, complete results.
    @Test func manyCallersAtOnceEachGetTheirOwnResults() {
        let results = Mutex<[Int: [Int]]>([:])
        DispatchQueue.concurrentPerform(iterations: 8) { caller in
            for round in 0..<50 {
                let count = TwoHalves.minimumElements + caller * 10 + round
                let halves = TwoHalves.map(count: count) { range in range.map { $0 * caller } }
                let joined = Array(halves.joined())
                if joined != (0..<count).map({ $0 * caller }) { results.withLock { $0[caller, default: []].append(round) } }
            }
        }
        #expect(results.withLock { $0.isEmpty })
    }
}
