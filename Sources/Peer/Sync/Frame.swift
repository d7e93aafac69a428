import Merge

/// The sync protocol's messages (docs/protocol.md), one per secure-channel frame. Binary, versioned
/// by the Hello exchange; see docs/protocol.md for the byte layout.
public enum Frame: Hashable, Sendable {
    /// First frame each way: who this is and what it holds.
    case hello(Hello)
    /// The peer will not talk to us (version mismatch, not on the roster, a bad invite, …);
    /// the connection ends.
    case refuse(Refusal)
    /// A bounded batch of log entries, in the sender's storage order.
    case entries(EntriesBatch)
    /// The receiver applied batch `batch` and now holds `vector`.
    case ack(batch: UInt64, vector: VersionVector)
    /// Resend everything past `vector`, starting a new epoch (batches of older epochs are void).
    case rewind(epoch: UInt32, vector: VersionVector)
    /// Please send these blocks (an entry needed them and they were neither sent nor stored).
    case needBlocks([BlockHash])
    /// Blocks: the answer to `needBlocks`, or the body of a large entry sent ahead of it.
    case blocks([[UInt8]])
    /// What the sender now holds: sent when its vector grew without it having entries for us
    /// (e.g. it learned them from a third device), so we know it is caught up.
    case have(VersionVector)
    /// Keepalive, carrying what the sender holds so an idle peer's view never goes stale.
    case ping(UInt64, VersionVector)
    case pong(UInt64, VersionVector)
    /// Pairing (on a connection keyed by an invite): the joining device asks to be admitted.
    case joinRequest(deviceName: String)
    /// Pairing: admitted. The household key and the roster as the inviter has it.
    case joinAccepted(householdKey: [UInt8], roster: [RosterMember])
    /// Household keys sealed to members, and which keys members hold. Sent only where both
    /// devices advertised the `key-rotation` feature (never to a protocol-1 device).
    case householdKeys(HouseholdKeys)
}

/// Why a peer ends the conversation: a code programs can act on, and a sentence for people.
public struct Refusal: Hashable, Sendable {
    public enum Code: UInt8, Sendable {
        case other = 0, protocolVersion, notOnRoster, revoked, inviteUnknown, inviteExpired, inviteUsed, duplicate
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// A roster entry as pairing sends it.
public struct RosterMember: Hashable, Sendable {
    public var publicKey: [UInt8]
    public var name: String

    public init(publicKey: [UInt8], name: String) {
        self.publicKey = publicKey
        self.name = name
    }
}

public struct Hello: Hashable, Sendable {
    public var protocolVersion: UInt16
    public var replica: ReplicaID
    public var deviceName: String
    public var vector: VersionVector

    public init(protocolVersion: UInt16 = Hello.currentVersion, replica: ReplicaID, deviceName: String, vector: VersionVector) {
        self.protocolVersion = protocolVersion
        self.replica = replica
        self.deviceName = deviceName
        self.vector = vector
    }

    public static let currentVersion: UInt16 = 1
}

public struct EntriesBatch: Hashable, Sendable {
    public var batch: UInt64
    public var epoch: UInt32
    /// The sender's whole vector when it sent this, so the receiver knows what it could get.
    public var senderVector: VersionVector
    public var entries: [EntryPayload]

    public init(batch: UInt64, epoch: UInt32, senderVector: VersionVector, entries: [EntryPayload]) {
        self.batch = batch
        self.epoch = epoch
        self.senderVector = senderVector
        self.entries = entries
    }
}

extension Frame {
    /// The frame with its entries' checks made (`EntryPayload.checked()`), for a receiver to
    /// make them off the thread that applies the entries.
    public func checked() -> Frame {
        guard case .entries(var batch) = self else { return self }
        batch.entries = batch.entries.map { $0.checked() }
        return .entries(batch)
    }
}

/// Encodes and decodes frames. Every count and length is checked against a cap before
/// anything is allocated; malformed input is a `DecodeError`, never a crash.
public enum FrameCodec {
    public enum Limits {
        /// The largest encoded frame accepted; the secure channel enforces the same cap.
        public static let frameBytes = 16 << 20
        public static let entriesPerBatch = 10_000
        public static let blocksPerFrame = 100_000
        public static let blockBytes = 8 << 20
        public static let revisionBytes = 8 << 20
        public static let vectorEntries = 100_000
        public static let deviceName = 1_024
        public static let reason = 4_096
        public static let rosterMembers = 10_000
        public static let keyGrants = 100_000
        public static let sealedKey = 256
    }

    enum Tag: UInt8 {
        case hello = 1, refuse, entries, ack, rewind, needBlocks, blocks, ping, pong, have, joinRequest, joinAccepted, householdKeys
    }

    enum ContentTag: UInt8 {
        case full = 1, purged, edited
    }

    enum EditTag: UInt8 {
        case keep = 1, skip, insert
    }

    public static func encode(_ frame: Frame) -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        switch frame {
        case .hello(let hello):
            writer.u8(Tag.hello.rawValue)
            writer.u16(hello.protocolVersion)
            writer.record(hello.replica.raw)
            writer.string(hello.deviceName)
            write(hello.vector, to: &writer)
        case .refuse(let refusal):
            writer.u8(Tag.refuse.rawValue)
            writer.u8(refusal.code.rawValue)
            writer.string(refusal.message)
        case .entries(let batch):
            writer.u8(Tag.entries.rawValue)
            writer.u64(batch.batch)
            writer.u32(batch.epoch)
            write(batch.senderVector, to: &writer)
            writer.varint(batch.entries.count)
            for entry in batch.entries { write(entry, to: &writer) }
        case .ack(let batch, let vector):
            writer.u8(Tag.ack.rawValue)
            writer.u64(batch)
            write(vector, to: &writer)
        case .rewind(let epoch, let vector):
            writer.u8(Tag.rewind.rawValue)
            writer.u32(epoch)
            write(vector, to: &writer)
        case .needBlocks(let hashes):
            writer.u8(Tag.needBlocks.rawValue)
            writer.varint(hashes.count)
            for hash in hashes { writer.hash(hash) }
        case .blocks(let blocks):
            writer.u8(Tag.blocks.rawValue)
            writer.varint(blocks.count)
            for block in blocks { writer.data(block) }
        case .have(let vector):
            writer.u8(Tag.have.rawValue)
            write(vector, to: &writer)
        case .ping(let nonce, let vector):
            writer.u8(Tag.ping.rawValue)
            writer.u64(nonce)
            write(vector, to: &writer)
        case .pong(let nonce, let vector):
            writer.u8(Tag.pong.rawValue)
            writer.u64(nonce)
            write(vector, to: &writer)
        case .joinRequest(let name):
            writer.u8(Tag.joinRequest.rawValue)
            writer.string(name)
        case .joinAccepted(let key, let roster):
            writer.u8(Tag.joinAccepted.rawValue)
            writer.data(key)
            writer.varint(roster.count)
            for member in roster {
                writer.data(member.publicKey)
                writer.string(member.name)
            }
        case .householdKeys(let keys):
            writer.u8(Tag.householdKeys.rawValue)
            writer.data(keys.household)
            writer.varint(keys.grants.count)
            for grant in keys.grants {
                write(grant.key, to: &writer)
                writer.data(grant.member)
                writer.data(grant.sealed)
            }
            writer.varint(keys.holdings.count)
            for holding in keys.holdings {
                writer.data(holding.member)
                write(holding.key, to: &writer)
            }
        }
        return writer.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws -> Frame {
        guard bytes.count <= Limits.frameBytes else { throw DecodeError("frame of \(bytes.count) bytes is over the limit") }
        var reader = ByteReader(bytes)
        let tagByte = try reader.u8("frame type")
        guard let tag = Tag(rawValue: tagByte) else { throw DecodeError("unknown frame type \(tagByte)") }
        let frame: Frame
        switch tag {
        case .hello:
            let version = try reader.u16("protocol version")
            let replica = ReplicaID(try reader.record("replica id"))
            let name = try reader.string("device name", cap: Limits.deviceName)
            frame = .hello(Hello(protocolVersion: version, replica: replica, deviceName: name, vector: try readVector(&reader)))
        case .refuse:
            let code = Refusal.Code(rawValue: try reader.u8("refusal code")) ?? .other
            frame = .refuse(Refusal(code, try reader.string("reason", cap: Limits.reason)))
        case .entries:
            let batch = try reader.u64("batch number")
            let epoch = try reader.u32("epoch")
            let senderVector = try readVector(&reader)
            let count = try reader.count("entry count", cap: Limits.entriesPerBatch)
            var entries: [EntryPayload] = []
            entries.reserveCapacity(min(count, reader.remaining / 50))
            for _ in 0..<count { entries.append(try readEntry(&reader)) }
            frame = .entries(EntriesBatch(batch: batch, epoch: epoch, senderVector: senderVector, entries: entries))
        case .ack:
            frame = .ack(batch: try reader.u64("batch number"), vector: try readVector(&reader))
        case .rewind:
            frame = .rewind(epoch: try reader.u32("epoch"), vector: try readVector(&reader))
        case .needBlocks:
            let count = try reader.count("hash count", cap: Limits.blocksPerFrame)
            guard count * 32 <= reader.remaining else { throw DecodeError("truncated block hash list") }
            frame = .needBlocks(try (0..<count).map { _ in try reader.hash("block hash") })
        case .blocks:
            let count = try reader.count("block count", cap: Limits.blocksPerFrame)
            var blocks: [[UInt8]] = []
            blocks.reserveCapacity(min(count, reader.remaining))
            for _ in 0..<count { blocks.append(try reader.data("block", cap: Limits.blockBytes)) }
            frame = .blocks(blocks)
        case .have:
            frame = .have(try readVector(&reader))
        case .ping:
            frame = .ping(try reader.u64("ping nonce"), try readVector(&reader))
        case .pong:
            frame = .pong(try reader.u64("pong nonce"), try readVector(&reader))
        case .joinRequest:
            frame = .joinRequest(deviceName: try reader.string("device name", cap: Limits.deviceName))
        case .joinAccepted:
            let key = try reader.data("household key", cap: 32)
            guard key.count == 32 else { throw DecodeError("household key must be 32 bytes") }
            let count = try reader.count("roster size", cap: Limits.rosterMembers)
            var roster: [RosterMember] = []
            for _ in 0..<count {
                let publicKey = try readMemberKey(&reader)
                roster.append(RosterMember(publicKey: publicKey, name: try reader.string("member name", cap: Limits.deviceName)))
            }
            frame = .joinAccepted(householdKey: key, roster: roster)
        case .householdKeys:
            let household = try reader.data("household id", cap: 16)
            guard household.count == 16 else { throw DecodeError("a household id must be 16 bytes") }
            let grantCount = try reader.count("key grant count", cap: Limits.keyGrants)
            var grants: [KeyGrant] = []
            for _ in 0..<grantCount {
                let key = try readKeyVersion(&reader)
                let member = try readMemberKey(&reader)
                grants.append(KeyGrant(key: key, member: member, sealed: try reader.data("sealed key", cap: Limits.sealedKey)))
            }
            let holdingCount = try reader.count("key holding count", cap: Limits.keyGrants)
            var holdings: [KeyHolding] = []
            for _ in 0..<holdingCount {
                let member = try readMemberKey(&reader)
                holdings.append(KeyHolding(member: member, key: try readKeyVersion(&reader)))
            }
            frame = .householdKeys(HouseholdKeys(household: household, grants: grants, holdings: holdings))
        }
        try reader.expectEnd("frame")
        return frame
    }

    private static func write(_ key: KeyVersion, to writer: inout ByteWriter) {
        writer.varint(key.epoch)
        writer.data(key.fingerprint)
    }

    private static func readKeyVersion(_ reader: inout ByteReader) throws -> KeyVersion {
        let epoch = try reader.storableVarint("key epoch")
        let fingerprint = try reader.data("key fingerprint", cap: 16)
        guard fingerprint.count == 16 else { throw DecodeError("a key fingerprint must be 16 bytes") }
        return KeyVersion(epoch: epoch, fingerprint: fingerprint)
    }

    private static func readMemberKey(_ reader: inout ByteReader) throws -> [UInt8] {
        let key = try reader.data("member key", cap: 32)
        guard key.count == 32 else { throw DecodeError("a member's key must be 32 bytes") }
        return key
    }

    private static func write(_ vector: VersionVector, to writer: inout ByteWriter) {
        let counters = vector.counters.sorted { $0.key < $1.key }
        writer.varint(counters.count)
        for (replica, seq) in counters {
            writer.record(replica.raw)
            writer.varint(seq)
        }
    }

    private static func readVector(_ reader: inout ByteReader) throws -> VersionVector {
        let count = try reader.count("vector size", cap: Limits.vectorEntries)
        var counters: [ReplicaID: UInt64] = [:]
        for _ in 0..<count {
            let replica = ReplicaID(try reader.record("vector replica"))
            let seq = try reader.storableVarint("vector seq")
            guard counters.updateValue(seq, forKey: replica) == nil else { throw DecodeError("vector names replica \(replica) twice") }
        }
        return VersionVector(counters)
    }

    private static func write(_ entry: EntryPayload, to writer: inout ByteWriter) {
        writer.record(entry.dot.replica.raw)
        writer.varint(entry.dot.seq)
        writer.hash(entry.revision)
        switch entry.content {
        case .full(let data, let blocks):
            writer.u8(ContentTag.full.rawValue)
            writer.data(data)
            writer.varint(blocks.count)
            for block in blocks { writer.data(block) }
        case .edited(let prefix, let edits, let suffix, let blocks):
            writer.u8(ContentTag.edited.rawValue)
            writer.data(prefix)
            writer.varint(edits.count)
            for edit in edits {
                switch edit {
                case .keep(let count):
                    writer.u8(EditTag.keep.rawValue)
                    writer.varint(count)
                case .skip(let count):
                    writer.u8(EditTag.skip.rawValue)
                    writer.varint(count)
                case .insert(let hashes):
                    writer.u8(EditTag.insert.rawValue)
                    writer.varint(hashes.count)
                    for hash in hashes { writer.hash(hash) }
                }
            }
            writer.data(suffix)
            writer.varint(blocks.count)
            for block in blocks { writer.data(block) }
        case .purged(let header):
            writer.u8(ContentTag.purged.rawValue)
            writer.u8(header.kind.rawValue)
            writer.record(header.record)
            writer.varint(header.parents.count)
            for parent in header.parents { writer.hash(parent) }
            writer.record(header.author.raw)
            writer.u64(header.hlc.rawValue)
            writer.bool(header.isTombstone)
            writer.varint(header.body.count)
            for hash in header.body { writer.hash(hash) }
        }
    }

    private static func readEntry(_ reader: inout ByteReader) throws -> EntryPayload {
        let replica = ReplicaID(try reader.record("entry replica"))
        let seq = try reader.storableVarint("entry seq")
        guard seq > 0 else { throw DecodeError("entry seq must be at least 1") }
        let revision = try reader.hash("entry revision")
        let contentTag = try reader.u8("entry content type")
        let content: EntryPayload.Content
        switch ContentTag(rawValue: contentTag) {
        case .full:
            let data = try reader.data("revision", cap: Limits.revisionBytes)
            let count = try reader.count("entry block count", cap: Limits.blocksPerFrame)
            var blocks: [EntryPayload.EncodedBlock] = []
            blocks.reserveCapacity(min(count, reader.remaining))
            for _ in 0..<count { blocks.append(try reader.dataSlice("block", cap: Limits.blockBytes)) }
            content = .full(data: data, blocks: blocks)
        case .purged:
            let kindByte = try reader.u8("record kind")
            guard let kind = RecordKind(rawValue: kindByte) else { throw DecodeError("unknown record kind \(kindByte)") }
            let record = try reader.record("record id")
            let parentCount = try reader.count("parent count", cap: RevisionCodec.Limits.parents)
            guard parentCount * 32 <= reader.remaining else { throw DecodeError("truncated parent list") }
            let parents = try (0..<parentCount).map { _ in try reader.hash("parent") }
            guard zip(parents, parents.dropFirst()).allSatisfy({ $0 < $1 }) else { throw DecodeError("parents are not sorted and unique") }
            let author = ReplicaID(try reader.record("author"))
            let hlc = HLC(rawValue: try reader.u64("hlc"))
            let tombstone = try reader.bool("tombstone flag")
            let bodyCount = try reader.count("body count", cap: RevisionCodec.Limits.blocks)
            guard bodyCount * 32 <= reader.remaining else { throw DecodeError("truncated body list") }
            let body = try (0..<bodyCount).map { _ in try reader.hash("block hash") }
            content = .purged(RevisionHeader(kind: kind, record: record, parents: parents, author: author, hlc: hlc, isTombstone: tombstone, body: body))
        case .edited:
            let prefix = try reader.data("revision prefix", cap: Limits.revisionBytes)
            let editCount = try reader.count("body edit count", cap: RevisionCodec.Limits.blocks)
            var edits: [BodyEdit] = []
            edits.reserveCapacity(min(editCount, reader.remaining))
            for _ in 0..<editCount {
                let tag = try reader.u8("body edit")
                switch EditTag(rawValue: tag) {
                case .keep: edits.append(.keep(try reader.count("kept blocks", cap: RevisionCodec.Limits.blocks)))
                case .skip: edits.append(.skip(try reader.count("skipped blocks", cap: RevisionCodec.Limits.blocks)))
                case .insert:
                    let count = try reader.count("inserted blocks", cap: RevisionCodec.Limits.blocks)
                    guard count * 32 <= reader.remaining else { throw DecodeError("truncated inserted blocks") }
                    edits.append(.insert(try (0..<count).map { _ in try reader.hash("block hash") }))
                case nil: throw DecodeError("unknown body edit \(tag)")
                }
            }
            let suffix = try reader.data("revision suffix", cap: Limits.revisionBytes)
            let count = try reader.count("entry block count", cap: Limits.blocksPerFrame)
            var blocks: [EntryPayload.EncodedBlock] = []
            blocks.reserveCapacity(min(count, reader.remaining))
            for _ in 0..<count { blocks.append(try reader.dataSlice("block", cap: Limits.blockBytes)) }
            content = .edited(prefix: prefix, edits: edits, suffix: suffix, blocks: blocks)
        case nil:
            throw DecodeError("unknown entry content type \(contentTag)")
        }
        return EntryPayload(dot: Dot(replica: replica, seq: seq), revision: revision, content: content)
    }
}
