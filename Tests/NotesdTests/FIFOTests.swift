import Testing
@testable import notesd

/// The control connection's queues (`FIFO`): order, and that what is popped is released at
/// once (a connection's spent answers were once kept until 1,024 of them piled up).
@Suite struct FIFOTests {
    final class Answer {}

    @Test func elementsComeOutInOrderAcrossCompactions() {
        var queue = FIFO<Int>()
        var next = 0
        for round in 0..<5 {
            for value in 0..<(700 * (round + 1)) { queue.append(round * 10_000 + value) }
            while let value = queue.popFirst() {
                #expect(value == round * 10_000 + next)
                next += 1
                if next == 300 { queue.replaceFirst(round * 10_000 + next) }
            }
            next = 0
        }
        #expect(queue.isEmpty && queue.first == nil)
    }

    @Test func aPoppedElementIsReleasedAtOnce() {
        var queue = FIFO<Answer>()
        weak var spent: Answer?
        do {
            let answer = Answer()
            spent = answer
            queue.append(answer)
            queue.append(Answer())
        }
        _ = queue.popFirst()
        #expect(spent == nil, "the popped answer is no longer held by the queue")
        #expect(queue.first != nil)
    }
}
