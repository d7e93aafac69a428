import Testing
@testable import Merge

@Suite struct DiffTests {
    /// Length of a longest common subsequence, by the textbook dynamic programme.
    static func lcsLength(_ a: [Int], _ b: [Int]) -> Int {
        var previous = [Int](repeating: 0, count: b.count + 1)
        for x in a {
            var current = [Int](repeating: 0, count: b.count + 1)
            for (j, y) in b.enumerated() {
                current[j + 1] = x == y ? previous[j] + 1 : Swift.max(previous[j + 1], current[j])
            }
            previous = current
        }
        return previous[b.count]
    }

    static func apply(_ hunks: [Diff.Hunk], to old: [Int], new: [Int]) -> [Int] {
        var out: [Int] = []
        var next = 0
        for hunk in hunks {
            out += old[next..<hunk.old.lowerBound]
            out += new[hunk.new]
            next = hunk.old.upperBound
        }
        return out + old[next...]
    }

    @Test func myersFindsAShortestEditScript() {
        for seed in Seeds.forProperty("myersFindsAShortestEditScript", count: 4_000) {
            var random = SeededGenerator(seed: seed)
            let alphabet = Int.random(in: 1...6, using: &random)
            let old = (0..<Int.random(in: 0...25, using: &random)).map { _ in Int.random(in: 0..<alphabet, using: &random) }
            let new = (0..<Int.random(in: 0...25, using: &random)).map { _ in Int.random(in: 0..<alphabet, using: &random) }
            let hunks = Diff.hunks(from: old, to: new)
            #expect(Self.apply(hunks, to: old, new: new) == new, "MERGE_SEED=\(seed): hunks do not rebuild new")
            let edits = hunks.reduce(0) { $0 + $1.old.count + $1.new.count }
            #expect(edits == old.count + new.count - 2 * Self.lcsLength(old, new), "MERGE_SEED=\(seed): not shortest")
            for (left, right) in zip(hunks, hunks.dropFirst()) {
                #expect(right.old.lowerBound > left.old.upperBound && right.new.lowerBound > left.new.upperBound,
                        "MERGE_SEED=\(seed): hunks touch")
            }
        }
    }

    @Test func myersOnLongSequencesWithScatteredEdits() {
        var random = SeededGenerator(seed: 7)
        let old = Array(0..<5_000)
        var new = old
        for _ in 0..<60 {
            let index = Int.random(in: 0..<new.count, using: &random)
            if random.chance(0.5) { new.remove(at: index) } else { new.insert(-index - 1, at: index) }
        }
        let hunks = Diff.hunks(from: old, to: new)
        #expect(Self.apply(hunks, to: old, new: new) == new)
        #expect(hunks.count <= 60)
        // Nothing in common at all.
        let disjoint = Diff.hunks(from: Array(0..<300), to: Array(1_000..<1_400))
        #expect(disjoint == [Diff.Hunk(old: 0..<300, new: 0..<400)])
    }

    /// Values whose fingerprint collides on purpose: the diff must notice and still be exact.
    struct Colliding: Fingerprinted {
        var value: Int
        var fingerprint: UInt64 { UInt64(value % 3) }
    }

    @Test func fingerprintCollisionsFallBackToComparingElements() {
        for seed in Seeds.forProperty("fingerprintCollisionsFallBackToComparingElements", count: 500) {
            var random = SeededGenerator(seed: seed)
            let old = (0..<Int.random(in: 0...15, using: &random)).map { _ in Int.random(in: 0..<9, using: &random) }
            let new = (0..<Int.random(in: 0...15, using: &random)).map { _ in Int.random(in: 0..<9, using: &random) }
            // Still a shortest edit script of the values themselves (when every fingerprint match
            // happens to be a true match, it may be another one of equal length).
            let keyed = Diff.hunks(from: old.map(Colliding.init), to: new.map(Colliding.init))
            #expect(Self.apply(keyed, to: old, new: new) == new, "MERGE_SEED=\(seed)")
            let edits = keyed.reduce(0) { $0 + $1.old.count + $1.new.count }
            #expect(edits == old.count + new.count - 2 * Self.lcsLength(old, new), "MERGE_SEED=\(seed)")
        }
    }

    @Test func diff3TakesWhatOneSideChanged() {
        let merged = Diff3.merge(base: [1, 2, 3, 4, 5], winner: [1, 20, 3, 4, 5], loser: [1, 2, 3, 5, 6])
        #expect(merged.elements == [1, 20, 3, 5, 6])
        #expect(merged.conflicts.isEmpty)
    }

    @Test func diff3TakesTheSameChangeOnce() {
        let merged = Diff3.merge(base: [1, 2, 3], winner: [1, 9, 3, 7], loser: [1, 9, 3, 7])
        #expect(merged.elements == [1, 9, 3, 7])
        #expect(merged.conflicts.isEmpty)
    }

    @Test func diff3KeepsBothInsertionsAtOnePointWinnerFirst() {
        let merged = Diff3.merge(base: [1, 2], winner: [1, 10, 11, 2], loser: [1, 20, 2])
        #expect(merged.elements == [1, 10, 11, 20, 2])
        #expect(merged.conflicts.isEmpty)
        let swapped = Diff3.merge(base: [1, 2], winner: [1, 20, 2], loser: [1, 10, 11, 2])
        #expect(swapped.elements == [1, 20, 10, 11, 2])
        // What both inserted is kept once.
        let shared = Diff3.merge(base: [], winner: [5, 6, 7], loser: [5, 8, 7])
        #expect(shared.elements == [5, 6, 8, 7])
    }

    @Test func diff3ConflictTakesTheWinnersRegion() {
        let merged = Diff3.merge(base: [1, 2, 3, 4], winner: [1, 20, 30, 4], loser: [1, 2, 33, 4])
        #expect(merged.elements == [1, 20, 30, 4])
        #expect(merged.conflicts == [2..<3])
        // Deleting what the other side changed is a conflict too.
        let deleted = Diff3.merge(base: [1, 2, 3], winner: [1, 3], loser: [1, 22, 3])
        #expect(deleted.elements == [1, 3])
        #expect(deleted.conflicts == [1..<2])
    }

    @Test func diff3MergesChangesThatOnlyTouch() {
        // An insertion right after a changed element, and changes of neighbouring elements:
        // GNU diff3 reports both as conflicts; editing different paragraphs must merge.
        let insertAfter = Diff3.merge(base: [1, 2, 3], winner: [1, 2, 9, 3], loser: [1, 20, 3])
        #expect(insertAfter.elements == [1, 20, 9, 3])
        #expect(insertAfter.conflicts.isEmpty)
        let insertBefore = Diff3.merge(base: [1, 2, 3], winner: [1, 9, 2, 3], loser: [1, 20, 3])
        #expect(insertBefore.elements == [1, 9, 20, 3])
        let neighbours = Diff3.merge(base: [1, 2, 3, 4], winner: [1, 20, 3, 4], loser: [1, 2, 30, 4])
        #expect(neighbours.elements == [1, 20, 30, 4])
        #expect(neighbours.conflicts.isEmpty)
        // An insertion strictly inside what the other side replaced does overlap.
        let inside = Diff3.merge(base: [1, 2, 3, 4], winner: [1, 2, 9, 3, 4], loser: [1, 50, 4])
        #expect(inside.conflicts == [1..<3])
        #expect(inside.elements == [1, 2, 9, 3, 4])
    }

    @Test func diff3ReadsEqualLengthReplacementsAsChangesInPlace() {
        // The winner changed 2 and 3 (one hunk of two elements); the loser changed 3 only.
        let merged = Diff3.merge(base: [1, 2, 3, 4], winner: [1, 20, 30, 4], loser: [1, 2, 33, 44])
        #expect(merged.elements == [1, 20, 30, 44])
        #expect(merged.conflicts == [2..<3])
        let reversed = Diff3.merge(base: [1, 2, 3, 4], winner: [1, 2, 33, 44], loser: [1, 20, 30, 4])
        #expect(reversed.elements == [1, 20, 33, 44])
        // Unequal lengths stay one change.
        let glued = Diff3.merge(base: [1, 2, 3, 4], winner: [1, 20, 25, 30, 4], loser: [1, 2, 33, 4])
        #expect(glued.conflicts == [1..<3])
    }

    @Test func diff3OfStrings() {
        let merged = Diff3.merge(base: ["a", "b", "c"], winner: ["a", "b", "c", "d"], loser: ["z", "a", "c"])
        #expect(merged.elements == ["z", "a", "c", "d"])
    }
}
