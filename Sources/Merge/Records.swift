/// The replicated records as plain values: what one revision says a note, folder or device is.
/// The merge rules (docs/merge.md) are functions of these values; `Peer` stores and ships them.

/// One note's content at one revision.
public struct Note: Hashable, Sendable {
    public var title: String
    /// The body, split into blocks (see `HTMLBlocks`).
    public var body: [Block]
    /// The folder it lives in; `nil` is Uncategorized.
    public var folder: FolderID?
    /// In the Trash. Trashing keeps `folder`, so restoring puts the note back where it was.
    public var trashed: Bool
    public var pinned: Bool
    public var color: String?
    public var tags: Set<String>
    /// Unix milliseconds of creation; display only.
    public var created: UInt64
    /// Unix milliseconds of the last edit; display only.
    public var modified: UInt64
    /// Set on conflict copies: the note this is the other version of.
    public var conflictOf: NoteID?

    public init(
        title: String = "", body: [Block] = [], folder: FolderID? = nil, trashed: Bool = false,
        pinned: Bool = false, color: String? = nil, tags: Set<String> = [], created: UInt64 = 0,
        modified: UInt64 = 0, conflictOf: NoteID? = nil
    ) {
        self.title = title
        self.body = body
        self.folder = folder
        self.trashed = trashed
        self.pinned = pinned
        self.color = color
        self.tags = tags
        self.created = created
        self.modified = modified
        self.conflictOf = conflictOf
    }

    /// The base used when two versions share no history: every field at its empty value.
    public static let empty = Note()
}

/// One folder's content at one revision.
public struct Folder: Hashable, Sendable {
    public var name: String
    /// The containing folder; `nil` is the top level.
    public var parent: FolderID?
    /// When `parent` was last set: the folder tree breaks move cycles by the latest move.
    public var movedAt: HLC

    public init(name: String, parent: FolderID? = nil, movedAt: HLC = .zero) {
        self.name = name
        self.parent = parent
        self.movedAt = movedAt
    }
}

/// One household device on the roster.
public struct Device: Hashable, Sendable {
    public var name: String
    /// The device's X25519 static public key (32 bytes); the device id is its fingerprint.
    public var publicKey: [UInt8]
    /// Revoked devices are refused after the handshake. Revocation is final.
    public var revoked: Bool
    /// Unix milliseconds when it joined the roster; display only.
    public var added: UInt64

    public init(name: String, publicKey: [UInt8], revoked: Bool = false, added: UInt64 = 0) {
        self.name = name
        self.publicKey = publicKey
        self.revoked = revoked
        self.added = added
    }
}

/// A record's state: alive, or a tombstone (permanently deleted; content gone).
public enum Record<Content: Hashable & Sendable>: Hashable, Sendable {
    case live(Content)
    case tombstone

    public var live: Content? {
        if case .live(let content) = self { return content }
        return nil
    }
}

/// A record state together with the stamp of the revision (or merged heads) it came from.
public struct Version<Content: Hashable & Sendable>: Hashable, Sendable {
    public var stamp: Stamp
    public var record: Record<Content>

    public init(stamp: Stamp, record: Record<Content>) {
        self.stamp = stamp
        self.record = record
    }
}
