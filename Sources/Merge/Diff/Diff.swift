/// A shortest edit script between two sequences: Myers' O(ND) algorithm in its linear-space
/// form ("An O(ND) Difference Algorithm and Its Variations", E. Myers, 1986, §4b), after
/// trimming the common prefix and suffix at every step.
///
/// Deterministic: the result depends only on the two sequences and `==`, never on hashing.
/// Blocks compare by fingerprint first, so a diff of 2,000 blocks mostly compares integers.
public enum Diff {
    /// One change: `old[old]` is replaced by `new[new]`. An insertion has an empty `old` range
    /// (its lower bound says where), a deletion an empty `new` range. Between two hunks at least
    /// one element is common to both sequences.
    public struct Hunk: Hashable, Sendable {
        public var old: Range<Int>
        public var new: Range<Int>

        public init(old: Range<Int>, new: Range<Int>) {
            self.old = old
            self.new = new
        }
    }

    /// The changes that turn `old` into `new`, in order, touching as few elements as possible.
    public static func hunks<Element: Equatable>(from old: [Element], to new: [Element]) -> [Hunk] {
        comparingElements(old, new)
    }

    /// The same for elements that carry a fingerprint: the search compares fingerprints (plain
    /// integers, no copies of the elements), then every matched pair is checked with `==`. If
    /// two different elements ever share a fingerprint, the diff is redone on the elements.
    public static func hunks<Element: Fingerprinted>(from old: [Element], to new: [Element]) -> [Hunk] {
        var matcher = Matcher(old: old.map(\.fingerprint), new: new.map(\.fingerprint))
        var pairs: [(Int, Int)] = []
        matcher.match { pairs.append(($0, $1)) }
        let verified = old.withUnsafeBufferPointer { old in
            new.withUnsafeBufferPointer { new in pairs.allSatisfy { old[$0.0] == new[$0.1] } }
        }
        guard verified else { return comparingElements(old, new) }
        return hunks(oldCount: old.count, newCount: new.count) { report in
            for (oldIndex, newIndex) in pairs { report(oldIndex, newIndex) }
        }
    }

    private static func comparingElements<Element: Equatable>(_ old: [Element], _ new: [Element]) -> [Hunk] {
        var matcher = Matcher(old: old, new: new)
        return hunks(oldCount: old.count, newCount: new.count) { matcher.match($0) }
    }

    /// Hunks from the matched pairs that `match` reports in order: the gaps between them.
    private static func hunks(oldCount: Int, newCount: Int, match: ((Int, Int) -> Void) -> Void) -> [Hunk] {
        var hunks: [Hunk] = []
        var oldNext = 0
        var newNext = 0
        func close(atOld oldIndex: Int, new newIndex: Int) {
            if oldIndex > oldNext || newIndex > newNext {
                hunks.append(Hunk(old: oldNext..<oldIndex, new: newNext..<newIndex))
            }
            oldNext = oldIndex + 1
            newNext = newIndex + 1
        }
        match(close)
        close(atOld: oldCount, new: newCount)
        return hunks
    }
}

/// Elements carrying a deterministic 64-bit hash, equal for equal elements (a block's
/// fingerprint), which lets the diff compare integers instead of elements.
public protocol Fingerprinted: Equatable {
    var fingerprint: UInt64 { get }
}

extension Block: Fingerprinted {}

/// Finds a longest common subsequence and reports its pairs `(oldIndex, newIndex)` in order.
private struct Matcher<Element: Equatable> {
    let old: [Element]
    let new: [Element]
    /// Furthest-reaching x per diagonal, forward and backward; reused across recursive calls.
    var forward: [Int] = []
    var backward: [Int] = []

    init(old: [Element], new: [Element]) {
        self.old = old
        self.new = new
    }

    /// Reports the pairs of a longest common subsequence of the whole sequences.
    mutating func match(_ report: (Int, Int) -> Void) {
        match(old: 0..<old.count, new: 0..<new.count, report)
    }

    private mutating func match(old oldRange: Range<Int>, new newRange: Range<Int>, _ report: (Int, Int) -> Void) {
        var oldLow = oldRange.lowerBound, oldHigh = oldRange.upperBound
        var newLow = newRange.lowerBound, newHigh = newRange.upperBound
        while oldLow < oldHigh, newLow < newHigh, old[oldLow] == new[newLow] {
            report(oldLow, newLow)
            oldLow += 1
            newLow += 1
        }
        var suffix = 0
        while oldLow < oldHigh, newLow < newHigh, old[oldHigh - 1] == new[newHigh - 1] {
            oldHigh -= 1
            newHigh -= 1
            suffix += 1
        }
        if oldLow < oldHigh, newLow < newHigh {
            let (oldSplit, newSplit) = split(old: oldLow..<oldHigh, new: newLow..<newHigh)
            match(old: oldLow..<oldSplit, new: newLow..<newSplit, report)
            match(old: oldSplit..<oldHigh, new: newSplit..<newHigh, report)
        }
        for step in 0..<suffix { report(oldHigh + step, newHigh + step) }
    }

    /// A point on a shortest path through the edit graph of the two ranges (both non-empty, with
    /// different first and different last elements), found where the path searched forward from
    /// the start meets the one searched backward from the end (Myers' middle snake). Diagonals
    /// that run off the grid are dropped from the search, as in Google's diff-match-patch.
    private mutating func split(old oldRange: Range<Int>, new newRange: Range<Int>) -> (Int, Int) {
        let n = oldRange.count, m = newRange.count
        let oldLow = oldRange.lowerBound, newLow = newRange.lowerBound
        let oldHigh = oldRange.upperBound, newHigh = newRange.upperBound
        let delta = n - m
        let odd = delta & 1 != 0
        let maxD = (n + m + 1) / 2
        let offset = maxD + 1
        let size = 2 * maxD + 3
        if forward.count < size {
            forward = [Int](repeating: -1, count: size)
            backward = [Int](repeating: -1, count: size)
        } else {
            for index in 0..<size {
                forward[index] = -1
                backward[index] = -1
            }
        }
        forward[offset + 1] = 0
        backward[offset + 1] = 0
        // Diagonals trimmed off either end of the search because their paths left the grid.
        var forwardLowTrim = 0, forwardHighTrim = 0, backwardLowTrim = 0, backwardHighTrim = 0
        for d in 0...maxD {
            for k in stride(from: -d + forwardLowTrim, through: d - forwardHighTrim, by: 2) {
                var x = k == -d || (k != d && forward[offset + k - 1] < forward[offset + k + 1])
                    ? forward[offset + k + 1] : forward[offset + k - 1] + 1
                var y = x - k
                while x < n, y < m, old[oldLow + x] == new[newLow + y] {
                    x += 1
                    y += 1
                }
                forward[offset + k] = x
                if x > n {
                    forwardHighTrim += 2
                } else if y > m {
                    forwardLowTrim += 2
                } else if odd {
                    let mirror = offset + delta - k
                    if mirror >= 0, mirror < size, backward[mirror] != -1, x >= n - backward[mirror] {
                        return (oldLow + x, newLow + y)
                    }
                }
            }
            for k in stride(from: -d + backwardLowTrim, through: d - backwardHighTrim, by: 2) {
                var x = k == -d || (k != d && backward[offset + k - 1] < backward[offset + k + 1])
                    ? backward[offset + k + 1] : backward[offset + k - 1] + 1
                var y = x - k
                while x < n, y < m, old[oldHigh - 1 - x] == new[newHigh - 1 - y] {
                    x += 1
                    y += 1
                }
                backward[offset + k] = x
                if x > n {
                    backwardHighTrim += 2
                } else if y > m {
                    backwardLowTrim += 2
                } else if !odd {
                    let mirror = offset + delta - k
                    if mirror >= 0, mirror < size, forward[mirror] != -1 {
                        let forwardX = forward[mirror]
                        let forwardY = forwardX - (mirror - offset)
                        if forwardX >= n - x { return (oldLow + forwardX, newLow + forwardY) }
                    }
                }
            }
        }
        preconditionFailure("Myers: no middle snake within D = \(maxD) for \(n)×\(m)")
    }
}
