import Merge

/// One log entry as it travels between replicas: its name, its revision, and either the
/// encoded revision with the blocks it adds over its parents (whole, or for a note edit with
/// its body as edits to its first parent's body), or — when the sender purged that content —
/// only the revision's place in the DAG.
public struct EntryPayload: Hashable, Sendable {
    /// A block's encoding. A received entry's are slices of the frame that brought them, read
    /// where they arrived rather than copied out one by one (docs/decisions.md, "A received
    /// block stays in its frame"); a sender's are whole arrays.
    public typealias EncodedBlock = ArraySlice<UInt8>

    public enum Content: Hashable, Sendable {
        case full(data: [UInt8], blocks: [EncodedBlock])
        /// The encoding cut around the body list, which is sent as `edits` to the first
        /// parent's body; the receiver rebuilds the encoding and checks its hash.
        case edited(prefix: [UInt8], edits: [BodyEdit], suffix: [UInt8], blocks: [EncodedBlock])
        case purged(RevisionHeader)
    }

    /// The checks `Replica.apply` makes of an entry that need nothing but the entry, made
    /// ahead of it (`checked()`): on the network thread, on the other core from the engine's,
    /// where a catch-up's engine thread is the bottleneck (docs/decisions.md).
    public struct Checks: Sendable {
        /// The encoded revision hashes to the entry's id; nil for edited content, whose
        /// encoding is only whole once rebuilt from the parent's body.
        public let revisionMatches: Bool?
        /// Each sent block's hash, in order; nil when one of them does not decode.
        public let blockHashes: [BlockHash]?
        /// The encoded revision decoded, or why it does not decode; nil for edited content.
        public let revisionDecoded: Result<RevisionCodec.Decoded, DecodeError>?
    }

    public let dot: Dot
    public let revision: RevisionID
    public let content: Content
    /// Made by `checked()`; not part of the entry's identity (`==` ignores it).
    public private(set) var checks: Checks?

    public init(dot: Dot, revision: RevisionID, content: Content) {
        self.dot = dot
        self.revision = revision
        self.content = content
    }

    /// Every field but `checks` (written out, so a field added to the entry must be added
    /// here and to `hash(into:)`).
    public static func == (left: EntryPayload, right: EntryPayload) -> Bool {
        left.dot == right.dot && left.revision == right.revision && left.content == right.content
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(dot)
        hasher.combine(revision)
        hasher.combine(content)
    }

    /// The record the entry's revision belongs to, as its content names it (every encoding
    /// starts with it; for full content, from the checks' decoding when made); throws why
    /// when the content does not say. The replica finds revisions by record and id (schema
    /// migration 14).
    public var record: RecordID {
        get throws {
            switch content {
            case .full(let data, _):
                if let decoded = checks?.revisionDecoded { return try decoded.get().header.record }
                return try BodyDelta.recordAndParents(inPrefix: data).record
            case .edited(let prefix, _, _, _): return try BodyDelta.recordAndParents(inPrefix: prefix).record
            case .purged(let header): return header.record
            }
        }
    }

    /// The entry with its `checks` made.
    public func checked() -> EntryPayload {
        var entry = self
        switch content {
        case .full(let data, let blocks):
            entry.checks = Checks(
                revisionMatches: Sodium.hash256(data) == revision, blockHashes: Self.blockHashes(blocks),
                revisionDecoded: Result { try RevisionCodec.decodeStored(data) }.mapError { $0 as? DecodeError ?? DecodeError("\($0)") })
        case .edited(_, _, _, let blocks):
            entry.checks = Checks(revisionMatches: nil, blockHashes: Self.blockHashes(blocks), revisionDecoded: nil)
        case .purged:
            break
        }
        return entry
    }

    /// Each block's hash, in order, or nil when one does not decode (the entry is refused).
    static func blockHashes(_ blocks: [EncodedBlock]) -> [BlockHash]? {
        var hashes: [BlockHash] = []
        hashes.reserveCapacity(blocks.count)
        for encoded in blocks {
            do { try Block.check(encoded: encoded) } catch { return nil }
            hashes.append(RevisionCodec.blockHash(encoded))
        }
        return hashes
    }

    /// Roughly what it costs on the wire, for batching.
    public var approximateSize: Int {
        switch content {
        case .full(let data, let blocks): 64 + data.count + blocks.reduce(0) { $0 + $1.count + 4 }
        case .edited(let prefix, let edits, let suffix, let blocks):
            64 + prefix.count + suffix.count + edits.reduce(0) { size, edit in
                if case .insert(let hashes) = edit { return size + 4 + hashes.count * 32 }
                return size + 4
            } + blocks.reduce(0) { $0 + $1.count + 4 }
        case .purged(let header): 128 + (header.parents.count + header.body.count) * 32
        }
    }
}

/// What an apply could not do without more data from the sender. Never guessed at.
public enum Need: Hashable, Sendable, CustomStringConvertible {
    /// Blocks the entry's body uses that were neither sent nor stored here.
    case blocks([BlockHash])
    /// Parent revisions this replica does not have.
    case parents([RevisionID])
    /// The entry skips ahead: this replica expects `expected` next from `replica`.
    case gap(replica: ReplicaID, expected: UInt64)

    public var description: String {
        switch self {
        case .blocks(let hashes): "\(hashes.count) missing block(s)"
        case .parents(let ids): "missing parent revision(s) \(ids.map(\.short).joined(separator: ", "))"
        case .gap(let replica, let expected): "entries of \(replica) from seq \(expected)"
        }
    }
}
