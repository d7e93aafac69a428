import Merge

/// What kind of record a revision belongs to.
public enum RecordKind: UInt8, Sendable, CaseIterable {
    case note = 1
    case folder = 2
    case device = 3
}

/// A record's state as one revision states it.
public enum RecordContent: Hashable, Sendable {
    case note(Record<Note>)
    case folder(Record<Folder>)
    case device(Record<Device>)

    public var kind: RecordKind {
        switch self {
        case .note: .note
        case .folder: .folder
        case .device: .device
        }
    }

    public var isTombstone: Bool {
        switch self {
        case .note(let record): record == .tombstone
        case .folder(let record): record == .tombstone
        case .device(let record): record == .tombstone
        }
    }
}

/// One immutable change to one record (docs/architecture.md). Its id is the hash of its encoding.
public struct Revision: Hashable, Sendable {
    public var record: RecordID
    /// The record's heads this change was made on top of; sorted, no duplicates.
    public var parents: [RevisionID]
    public var author: ReplicaID
    public var hlc: HLC
    public var content: RecordContent

    public init(record: RecordID, parents: [RevisionID], author: ReplicaID, hlc: HLC, content: RecordContent) {
        self.record = record
        self.parents = Array(Set(parents)).sorted()
        self.author = author
        self.hlc = hlc
        self.content = content
    }

    public var kind: RecordKind { content.kind }
}

/// A revision in its canonical encoding, with its id and the blocks its body refers to.
public struct EncodedRevision: Sendable {
    public let id: RevisionID
    public let bytes: [UInt8]
    /// The body's blocks by hash (empty for folders and devices).
    public let blocks: [(hash: BlockHash, encoded: [UInt8])]
}

/// The parts of an encoded revision the log and the DAG need, read without loading blocks.
public struct RevisionHeader: Hashable, Sendable {
    public let kind: RecordKind
    public let record: RecordID
    public let parents: [RevisionID]
    public let author: ReplicaID
    public let hlc: HLC
    public let isTombstone: Bool
    /// The body's block hashes in order (notes only).
    public let body: [BlockHash]
}

/// The canonical revision encoding. Version 1 layout, after a format byte and the kind:
/// record id, parents, author, HLC, a live flag, then the kind's fields (see `encodeFields`).
public enum RevisionCodec {
    static let formatVersion: UInt8 = 1

    /// Limits checked before allocating while decoding data from disk or the network.
    public enum Limits {
        public static let parents = 4_096
        public static let title = 1 << 20
        public static let blocks = 1 << 20
        public static let tags = 10_000
        public static let tag = 1_024
        public static let shortText = 1_024
        public static let publicKey = 32
    }

    public static func blockHash(_ encodedBlock: [UInt8]) -> BlockHash { Sodium.hash256(encodedBlock) }
    public static func blockHash(_ encodedBlock: ArraySlice<UInt8>) -> BlockHash { Sodium.hash256(encodedBlock) }

    public static func encode(_ revision: Revision) -> EncodedRevision {
        var writer = ByteWriter(capacity: 256)
        writer.u8(formatVersion)
        writer.u8(revision.kind.rawValue)
        writer.record(revision.record)
        writer.varint(revision.parents.count)
        for parent in revision.parents { writer.hash(parent) }
        writer.record(revision.author.raw)
        writer.u64(revision.hlc.rawValue)
        var blocks: [(BlockHash, [UInt8])] = []
        switch revision.content {
        case .note(.live(let note)):
            writer.bool(true)
            writer.string(note.title)
            writer.varint(note.body.count)
            for block in note.body {
                let encoded = block.encoded()
                let hash = blockHash(encoded)
                blocks.append((hash, encoded))
                writer.hash(hash)
            }
            writer.optional(note.folder) { $0.record($1) }
            writer.bool(note.trashed)
            writer.bool(note.pinned)
            writer.optional(note.color) { $0.string($1) }
            let tags = note.tags.sorted()
            writer.varint(tags.count)
            for tag in tags { writer.string(tag) }
            writer.u64(note.created)
            writer.u64(note.modified)
            writer.optional(note.conflictOf) { $0.record($1) }
        case .folder(.live(let folder)):
            writer.bool(true)
            writer.string(folder.name)
            writer.optional(folder.parent) { $0.record($1) }
            writer.u64(folder.movedAt.rawValue)
        case .device(.live(let device)):
            writer.bool(true)
            writer.string(device.name)
            writer.data(device.publicKey)
            writer.bool(device.revoked)
            writer.u64(device.added)
        case .note(.tombstone), .folder(.tombstone), .device(.tombstone):
            writer.bool(false)
        }
        let bytes = writer.bytes
        return EncodedRevision(id: Sodium.hash256(bytes), bytes: bytes, blocks: blocks.map { (hash: $0.0, encoded: $0.1) })
    }

    /// Reads the header and, through `fields`, the kind's fields.
    private static func read<T>(
        _ bytes: [UInt8], fields: (inout ByteReader, RevisionHeaderPrefix) throws -> T
    ) throws -> T {
        var reader = ByteReader(bytes)
        let format = try reader.u8("format")
        guard format == formatVersion else {
            throw DecodeError("revision format \(format) is not known to this notesd (expected \(formatVersion))")
        }
        let kindByte = try reader.u8("kind")
        guard let kind = RecordKind(rawValue: kindByte) else { throw DecodeError("unknown record kind \(kindByte)") }
        let record = try reader.record()
        let parentCount = try reader.count("parent count", cap: Limits.parents)
        var parents = [RevisionID]()
        parents.reserveCapacity(parentCount)
        for _ in 0..<parentCount { parents.append(try reader.hash("parent")) }
        guard zip(parents, parents.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw DecodeError("revision parents are not sorted and unique")
        }
        let author = ReplicaID(try reader.record("author"))
        let hlc = HLC(rawValue: try reader.u64("hlc"))
        let live = try reader.bool("live flag")
        let prefix = RevisionHeaderPrefix(kind: kind, record: record, parents: parents, author: author, hlc: hlc, live: live)
        let result = try fields(&reader, prefix)
        try reader.expectEnd("revision")
        return result
    }

    struct RevisionHeaderPrefix {
        let kind: RecordKind, record: RecordID, parents: [RevisionID], author: ReplicaID, hlc: HLC, live: Bool
    }

    /// The header only (body as hashes); cheap, needs no blocks.
    public static func header(_ bytes: [UInt8]) throws -> RevisionHeader {
        try read(bytes) { reader, prefix in
            var body: [BlockHash] = []
            if prefix.live {
                switch prefix.kind {
                case .note: body = try readNote(&reader) { $0 }.body
                case .folder: _ = try readFolder(&reader)
                case .device: _ = try readDevice(&reader)
                }
            }
            return RevisionHeader(
                kind: prefix.kind, record: prefix.record, parents: prefix.parents, author: prefix.author,
                hlc: prefix.hlc, isTombstone: !prefix.live, body: body)
        }
    }

    /// A note revision's fields with the body in some form `B`: hashes as stored, or blocks.
    public struct NoteFields<B: Hashable & Sendable>: Hashable, Sendable {
        public var title: String, body: [B], folder: FolderID?, trashed: Bool, pinned: Bool, color: String?
        public var tags: Set<String>, created: UInt64, modified: UInt64, conflictOf: NoteID?

        public init(_ note: Note, body: [B]) {
            (title, self.body, folder, trashed, pinned, color) = (note.title, body, note.folder, note.trashed, note.pinned, note.color)
            (tags, created, modified, conflictOf) = (note.tags, note.created, note.modified, note.conflictOf)
        }

        init(title: String, body: [B], folder: FolderID?, trashed: Bool, pinned: Bool, color: String?,
             tags: Set<String>, created: UInt64, modified: UInt64, conflictOf: NoteID?) {
            (self.title, self.body, self.folder, self.trashed, self.pinned, self.color) = (title, body, folder, trashed, pinned, color)
            (self.tags, self.created, self.modified, self.conflictOf) = (tags, created, modified, conflictOf)
        }

        public func note(body blocks: [Block]) -> Note {
            Note(
                title: title, body: blocks, folder: folder, trashed: trashed, pinned: pinned, color: color,
                tags: tags, created: created, modified: modified, conflictOf: conflictOf)
        }
    }

    /// A revision's content as stored: note bodies as block hashes.
    public enum StoredContent: Hashable, Sendable {
        case note(Record<NoteFields<BlockHash>>)
        case folder(Record<Folder>)
        case device(Record<Device>)
    }

    /// A revision decoded with its note body as block hashes (`decodeStored`).
    public typealias Decoded = (header: RevisionHeader, content: StoredContent)

    /// The whole revision with note bodies as block hashes (no block is loaded).
    public static func decodeStored(_ bytes: [UInt8]) throws -> Decoded {
        try read(bytes) { reader, prefix in
            let content: StoredContent
            var body: [BlockHash] = []
            switch (prefix.kind, prefix.live) {
            case (.note, true):
                let note = try readNote(&reader) { $0 }
                body = note.body
                content = .note(.live(note))
            case (.folder, true): content = .folder(.live(try readFolder(&reader)))
            case (.device, true): content = .device(.live(try readDevice(&reader)))
            case (.note, false): content = .note(.tombstone)
            case (.folder, false): content = .folder(.tombstone)
            case (.device, false): content = .device(.tombstone)
            }
            let header = RevisionHeader(
                kind: prefix.kind, record: prefix.record, parents: prefix.parents, author: prefix.author,
                hlc: prefix.hlc, isTombstone: !prefix.live, body: body)
            return (header, content)
        }
    }

    private static func readNote<B>(_ reader: inout ByteReader, block: (BlockHash) throws -> B) throws -> NoteFields<B> {
        let title = try reader.string("title", cap: Limits.title)
        let blockCount = try reader.count("block count", cap: Limits.blocks)
        guard blockCount * 32 <= reader.remaining else { throw DecodeError("truncated body: \(blockCount) blocks announced") }
        var body = [B]()
        body.reserveCapacity(blockCount)
        for _ in 0..<blockCount { body.append(try block(try reader.hash("block hash"))) }
        let folder = try reader.optional("folder") { try $0.record("folder") }
        let trashed = try reader.bool("trashed")
        let pinned = try reader.bool("pinned")
        let color = try reader.optional("color") { try $0.string("color", cap: Limits.shortText) }
        let tagCount = try reader.count("tag count", cap: Limits.tags)
        var tags = [String]()
        for _ in 0..<tagCount { tags.append(try reader.string("tag", cap: Limits.tag)) }
        guard zip(tags, tags.dropFirst()).allSatisfy({ $0 < $1 }) else { throw DecodeError("tags are not sorted and unique") }
        let created = try reader.storableU64("created")
        let modified = try reader.storableU64("modified")
        let conflictOf = try reader.optional("conflictOf") { try $0.record("conflictOf") }
        return NoteFields(
            title: title, body: body, folder: folder, trashed: trashed, pinned: pinned, color: color,
            tags: Set(tags), created: created, modified: modified, conflictOf: conflictOf)
    }

    private static func readFolder(_ reader: inout ByteReader) throws -> Folder {
        let name = try reader.string("folder name", cap: Limits.title)
        let parent = try reader.optional("parent") { try $0.record("parent") }
        let movedAt = HLC(rawValue: try reader.u64("movedAt"))
        return Folder(name: name, parent: parent, movedAt: movedAt)
    }

    private static func readDevice(_ reader: inout ByteReader) throws -> Device {
        let name = try reader.string("device name", cap: Limits.shortText)
        let key = try reader.data("public key", cap: Limits.publicKey)
        guard key.count == Limits.publicKey else { throw DecodeError("device public key must be 32 bytes") }
        let revoked = try reader.bool("revoked")
        let added = try reader.storableU64("added")
        return Device(name: name, publicKey: key, revoked: revoked, added: added)
    }
}
