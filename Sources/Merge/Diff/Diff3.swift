/// Three-way merge of sequences: what changed from `base` to each side, combined.
///
/// Each side's changes are the hunks of its diff from the base, a hunk that replaces n elements
/// by n others being read as n changes in place (one per element). A hunk occupies the base
/// elements it replaces, and an insertion occupies the point between two base elements; hunks of
/// the two sides that occupy a common element or point (or an insertion point strictly inside
/// a replaced range) overlap, and overlapping hunks form one region:
///
/// - a region changed by one side only → that side's version;
/// - both sides made the region the same → that version, once;
/// - both sides inserted at the same point, differently → both insertions, the winner's first,
///   with elements both inserted (in the same order) kept once;
/// - both sides changed the same base elements differently → a conflict: the winner's version.
///
/// Hunks that only touch (an insertion right before or after the other side's change, or two
/// changes of neighbouring elements) do not overlap and both apply. GNU `diff3` calls those
/// conflicts; wherever it merges cleanly, this merges identically (tested).
public enum Diff3 {
    public struct Merged<Element> {
        public var elements: [Element]
        /// The base ranges both sides changed differently, where `elements` holds the winner's version.
        public var conflicts: [Range<Int>]
    }

    /// `winner` is the side with the later stamp: its version is taken in conflicts, and its
    /// insertions go first. Swapping which side wins changes only those two things.
    public static func merge<Element: Equatable>(base: [Element], winner: [Element], loser: [Element]) -> Merged<Element> {
        merge(base: base, winner: winner, loser: loser) { Diff.hunks(from: $0, to: $1) }
    }

    /// The same, diffing by fingerprints (blocks).
    public static func merge<Element: Fingerprinted>(base: [Element], winner: [Element], loser: [Element]) -> Merged<Element> {
        merge(base: base, winner: winner, loser: loser) { Diff.hunks(from: $0, to: $1) }
    }

    private static func merge<Element: Equatable>(
        base: [Element], winner: [Element], loser: [Element], diff: ([Element], [Element]) -> [Diff.Hunk]
    ) -> Merged<Element> {
        let winnerEdits = inPlace(diff(base, winner)).map { Edit(hunk: $0) }
        let loserEdits = inPlace(diff(base, loser)).map { Edit(hunk: $0) }
        var merged: [Element] = []
        merged.reserveCapacity(Swift.max(winner.count, loser.count))
        var conflicts: [Range<Int>] = []
        var baseNext = 0

        func version(of edits: ArraySlice<Edit>, side: [Element], region: Range<Int>) -> [Element] {
            var out: [Element] = []
            var position = region.lowerBound
            for edit in edits {
                out += base[position..<edit.hunk.old.lowerBound]
                out += side[edit.hunk.new]
                position = edit.hunk.old.upperBound
            }
            out += base[position..<region.upperBound]
            return out
        }

        for region in regions(winnerEdits, loserEdits) {
            merged += base[baseNext..<region.range.lowerBound]
            baseNext = region.range.upperBound
            let winnerVersion = version(of: region.winnerEdits, side: winner, region: region.range)
            if region.loserEdits.isEmpty {
                merged += winnerVersion
                continue
            }
            let loserVersion = version(of: region.loserEdits, side: loser, region: region.range)
            if region.winnerEdits.isEmpty || winnerVersion == loserVersion {
                merged += region.winnerEdits.isEmpty ? loserVersion : winnerVersion
            } else if region.range.isEmpty {
                merged += union(winnerVersion, loserVersion, diff: diff)
            } else {
                merged += winnerVersion
                conflicts.append(region.range)
            }
        }
        merged += base[baseNext...]
        return Merged(elements: merged, conflicts: conflicts)
    }

    /// Reads a hunk that replaces n elements by n others as n changes in place, one per element,
    /// so that editing a paragraph and ticking the checklist item right after it are two changes,
    /// and a concurrent edit of the paragraph conflicts with the first only.
    private static func inPlace(_ hunks: [Diff.Hunk]) -> [Diff.Hunk] {
        guard hunks.contains(where: { $0.old.count > 1 && $0.old.count == $0.new.count }) else { return hunks }
        return hunks.flatMap { hunk -> [Diff.Hunk] in
            guard hunk.old.count > 1, hunk.old.count == hunk.new.count else { return [hunk] }
            return (0..<hunk.old.count).map { offset in
                Diff.Hunk(old: hunk.old.lowerBound + offset..<hunk.old.lowerBound + offset + 1,
                          new: hunk.new.lowerBound + offset..<hunk.new.lowerBound + offset + 1)
            }
        }
    }

    /// Both insertions, the winner's first, each run both share (by diff) kept once.
    private static func union<Element: Equatable>(
        _ winner: [Element], _ loser: [Element], diff: ([Element], [Element]) -> [Diff.Hunk]
    ) -> [Element] {
        var out: [Element] = []
        var winnerNext = 0
        for hunk in diff(winner, loser) {
            out += winner[winnerNext..<hunk.old.upperBound]
            out += loser[hunk.new]
            winnerNext = hunk.old.upperBound
        }
        out += winner[winnerNext...]
        return out
    }

    private struct Edit {
        var hunk: Diff.Hunk

        /// The base positions the hunk occupies, doubled so that points and elements interleave:
        /// the point before element `i` is `2i`, element `i` is `2i + 1`. An insertion at `p`
        /// occupies `[2p, 2p]`; replacing `[s, e)` occupies `[2s + 1, 2e - 1]`, which includes
        /// the points strictly inside but not the points at its edges.
        var occupied: ClosedRange<Int> {
            let old = hunk.old
            return old.isEmpty ? 2 * old.lowerBound...2 * old.lowerBound : 2 * old.lowerBound + 1...2 * old.upperBound - 1
        }
    }

    private struct Region {
        var range: Range<Int>
        var winnerEdits: ArraySlice<Edit>
        var loserEdits: ArraySlice<Edit>
    }

    /// Groups the two sides' edits (each sorted, never overlapping their own side) into regions
    /// of transitively overlapping edits, in base order.
    private static func regions(_ winnerEdits: [Edit], _ loserEdits: [Edit]) -> [Region] {
        var regions: [Region] = []
        var nextWinner = 0, nextLoser = 0
        while nextWinner < winnerEdits.count || nextLoser < loserEdits.count {
            let takeWinner = nextLoser == loserEdits.count
                || (nextWinner < winnerEdits.count
                    && winnerEdits[nextWinner].occupied.lowerBound <= loserEdits[nextLoser].occupied.lowerBound)
            let first = takeWinner ? winnerEdits[nextWinner] : loserEdits[nextLoser]
            let winnerStart = nextWinner, loserStart = nextLoser
            if takeWinner { nextWinner += 1 } else { nextLoser += 1 }
            var reach = first.occupied.upperBound
            var range = first.hunk.old
            while true {
                if nextWinner < winnerEdits.count, winnerEdits[nextWinner].occupied.lowerBound <= reach {
                    let edit = winnerEdits[nextWinner]
                    reach = Swift.max(reach, edit.occupied.upperBound)
                    range = Swift.min(range.lowerBound, edit.hunk.old.lowerBound)..<Swift.max(range.upperBound, edit.hunk.old.upperBound)
                    nextWinner += 1
                } else if nextLoser < loserEdits.count, loserEdits[nextLoser].occupied.lowerBound <= reach {
                    let edit = loserEdits[nextLoser]
                    reach = Swift.max(reach, edit.occupied.upperBound)
                    range = Swift.min(range.lowerBound, edit.hunk.old.lowerBound)..<Swift.max(range.upperBound, edit.hunk.old.upperBound)
                    nextLoser += 1
                } else {
                    break
                }
            }
            regions.append(Region(
                range: range,
                winnerEdits: winnerEdits[winnerStart..<nextWinner],
                loserEdits: loserEdits[loserStart..<nextLoser]))
        }
        return regions
    }
}

extension Diff3.Merged: Equatable where Element: Equatable {}
extension Diff3.Merged: Sendable where Element: Sendable {}
