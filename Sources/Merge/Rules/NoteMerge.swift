/// The merge of two concurrent versions of one note (docs/merge.md).
///
/// Pure, deterministic and symmetric: `merge(o, a, b) == merge(o, b, a)`, exactly, conflict copy
/// included, because every choice between the sides is made by their stamps (later wins), never
/// by argument order.
public enum NoteMerge {
    /// - Parameters:
    ///   - note: the note's id, recorded in a conflict copy's `conflictOf`.
    ///   - base: the merge base; `nil` or `.tombstone` means no shared history, and `Note.empty`
    ///     is used as the base (so every difference counts as a change on both sides).
    public static func merge(note: NoteID, base: Record<Note>?, _ a: Version<Note>, _ b: Version<Note>) -> MergeOutcome {
        let (winner, loser) = FieldRules.ordered(a, b)
        let base = base?.live ?? .empty
        if let decided = FieldRules.deletion(base: base, winner.record, loser.record) {
            return MergeOutcome(merged: decided, conflict: nil)
        }
        guard case .live(let won) = winner.record, case .live(let lost) = loser.record else {
            preconditionFailure("FieldRules.deletion decides every case with a tombstone")
        }

        let body = Diff3.merge(base: base.body, winner: won.body, loser: lost.body)
        let titleConflicts = won.title != base.title && lost.title != base.title && won.title != lost.title
        let merged = Note(
            title: FieldRules.scalar(base: base.title, winner: won.title, loser: lost.title),
            body: body.elements,
            folder: FieldRules.scalar(base: base.folder, winner: won.folder, loser: lost.folder),
            trashed: FieldRules.scalar(base: base.trashed, winner: won.trashed, loser: lost.trashed),
            pinned: FieldRules.scalar(base: base.pinned, winner: won.pinned, loser: lost.pinned),
            color: FieldRules.scalar(base: base.color, winner: won.color, loser: lost.color),
            tags: FieldRules.set(base: base.tags, won.tags, lost.tags),
            created: displayTime(base: base.created, won.created, lost.created, bothChanged: min),
            modified: displayTime(base: base.modified, won.modified, lost.modified, bothChanged: max),
            conflictOf: FieldRules.scalar(base: base.conflictOf, winner: won.conflictOf, loser: lost.conflictOf))

        guard titleConflicts || !body.conflicts.isEmpty else {
            return MergeOutcome(merged: .live(merged), conflict: nil)
        }
        return MergeOutcome(
            merged: .live(merged),
            conflict: Conflict(
                winner: winner.stamp, loser: loser.stamp,
                copy: conflictCopy(of: lost, beside: merged, note: note)))
    }

    /// The loser's whole version, so that nothing it had is lost: titled "<title> (other
    /// version)", placed beside the merged note (same folder, in the Trash iff it is), not
    /// pinned (the original keeps its place; a copy should not crowd the pinned ones), and
    /// marked `conflictOf` the note. Tags, colour, body and times are the loser's.
    static func conflictCopy(of lost: Note, beside merged: Note, note: NoteID) -> Note {
        var copy = lost
        copy.title = lost.title.isEmpty ? "(other version)" : "\(lost.title) (other version)"
        copy.folder = merged.folder
        copy.trashed = merged.trashed
        copy.pinned = false
        copy.conflictOf = note
        return copy
    }

    /// `created`/`modified` are display only: one side changed → that side; both → min or max.
    private static func displayTime(
        base: UInt64, _ won: UInt64, _ lost: UInt64, bothChanged combine: (UInt64, UInt64) -> UInt64
    ) -> UInt64 {
        if won == base { return lost }
        if lost == base { return won }
        return combine(won, lost)
    }
}

/// The result of merging two versions of a note.
public struct MergeOutcome: Hashable, Sendable {
    /// The note's merged state (a tombstone only when neither side kept an edit).
    public var merged: Record<Note>
    /// Set when the title or a body region conflicted; `nil` when the sides merged cleanly.
    public var conflict: Conflict?

    public init(merged: Record<Note>, conflict: Conflict?) {
        self.merged = merged
        self.conflict = conflict
    }
}

/// A real conflict: the merged note took the winner's version of what both changed; the copy
/// keeps the loser's whole version. The copy depends only on the merge's inputs, so every device
/// that merges the same two revisions derives the same copy (the replica derives its id from the
/// note id and the two revision ids).
public struct Conflict: Hashable, Sendable {
    /// The later stamp, whose version the merged note took.
    public var winner: Stamp
    public var loser: Stamp
    /// The loser's whole version as a new note (see `NoteMerge.conflictCopy`).
    public var copy: Note

    public init(winner: Stamp, loser: Stamp, copy: Note) {
        self.winner = winner
        self.loser = loser
        self.copy = copy
    }
}
