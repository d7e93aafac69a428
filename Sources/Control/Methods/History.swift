/// `notes.history` params.
public struct NoteHistoryParams: Codable, Hashable, Sendable {
    /// A full note id or a unique prefix.
    public var id: String
    /// `true`: each entry carries `patch`, its block-level diff against its first parent.
    public var patch: Bool?

    public init(id: String, patch: Bool? = nil) {
        self.id = id
        self.patch = patch
    }
}

/// One line of a revision's block-level diff against its first parent.
public struct BlockChange: Codable, Hashable, Sendable {
    public enum Operation: String, Codable, Hashable, Sendable {
        /// The block is in this revision, not in its first parent.
        case added = "+"
        /// The block was in the first parent and is not here.
        case removed = "-"
    }

    public var op: Operation
    /// The block's HTML, exactly as stored.
    public var html: String
    /// Its text (markup dropped), as `notesctl log --patch` prints it.
    public var text: String

    public init(op: Operation, html: String, text: String) {
        self.op = op
        self.html = html
        self.text = text
    }
}

/// `notes.getRevision` params: one note as it was at one revision.
public struct NoteRevisionParams: Codable, Hashable, Sendable {
    public var id: String
    /// A revision id or a unique prefix of it (at least 4 hex digits), as `notes.history` gives.
    public var revision: String
    /// Absent: `html`.
    public var format: NoteFormat?

    public init(id: String, revision: String, format: NoteFormat? = nil) {
        self.id = id
        self.revision = revision
        self.format = format
    }
}

/// `notes.restoreRevision` params.
public struct RestoreRevisionParams: Codable, Hashable, Sendable {
    public var id: String
    /// A revision id or a unique prefix of it (at least 4 hex digits).
    public var revision: String

    public init(id: String, revision: String) {
        self.id = id
        self.revision = revision
    }
}

/// `notes.restoreRevision` result.
public struct RestoreRevisionResult: Codable, Hashable, Sendable {
    /// The note as it now stands.
    public var note: NoteSummary
    /// The full id of the revision whose content was brought back.
    public var restoredFrom: String
    /// `false` when the note already showed that content (nothing was written).
    public var changed: Bool

    public init(note: NoteSummary, restoredFrom: String, changed: Bool) {
        self.note = note
        self.restoredFrom = restoredFrom
        self.changed = changed
    }
}

/// `notes.purge` params.
public struct NotePurgeParams: Codable, Hashable, Sendable {
    /// A full note id or a unique prefix.
    public var id: String
    /// The heads of the copy the person saw when deciding (`NoteDocument.heads`). When the note
    /// changed since, the delete is written on those heads, concurrent with the newer changes,
    /// and the changes win: the note stays (`PurgeResult.purged` is `false`). Absent: delete
    /// whatever the device holds now.
    public var baseHeads: [String]?

    public init(id: String, baseHeads: [String]? = nil) {
        self.id = id
        self.baseHeads = baseHeads
    }
}
