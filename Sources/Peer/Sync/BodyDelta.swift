import Merge

/// One step of rebuilding a note body from its first parent's body: keep the next `n` block
/// hashes, skip the next `n`, or insert new ones. A one-paragraph edit of a 2,000-block note is
/// three small steps instead of 2,000 hashes, so resync bytes follow what changed.
public enum BodyEdit: Hashable, Sendable {
    case keep(Int)
    case skip(Int)
    case insert([BlockHash])
}

/// A note revision's canonical encoding cut around its body list: what the wire sends as
/// `prefix`, body edits, `suffix`, and what the receiver joins back to verify the hash.
struct RevisionBodySplit {
    let prefix: ArraySlice<UInt8>
    let body: [BlockHash]
    let suffix: ArraySlice<UInt8>
    let parents: [RevisionID]
}

enum BodyDelta {
    /// The edits that turn `parent` into `body` (a Myers diff over the block hashes).
    static func edits(from parent: [BlockHash], to body: [BlockHash]) -> [BodyEdit] {
        var edits: [BodyEdit] = []
        var position = 0
        for hunk in Diff.hunks(from: parent, to: body) {
            if hunk.old.lowerBound > position { edits.append(.keep(hunk.old.lowerBound - position)) }
            if !hunk.old.isEmpty { edits.append(.skip(hunk.old.count)) }
            if !hunk.new.isEmpty { edits.append(.insert(Array(body[hunk.new]))) }
            position = hunk.old.upperBound
        }
        if parent.count > position { edits.append(.keep(parent.count - position)) }
        return edits
    }

    /// Rebuilds a body; edits that run past the parent's end are malformed.
    static func apply(_ edits: [BodyEdit], to parent: [BlockHash]) throws -> [BlockHash] {
        var body: [BlockHash] = []
        var position = 0
        for edit in edits {
            switch edit {
            case .keep(let count), .skip(let count):
                guard count >= 0, count <= parent.count - position else { throw DecodeError("body edits run past the parent's \(parent.count) blocks") }
                if case .keep = edit { body.append(contentsOf: parent[position..<position + count]) }
                position += count
            case .insert(let hashes):
                body.append(contentsOf: hashes)
            }
        }
        guard position == parent.count else { throw DecodeError("body edits cover \(position) of the parent's \(parent.count) blocks") }
        return body
    }

    /// Splits a live note revision around its body list; nil for any other revision.
    static func split(_ data: [UInt8]) throws -> RevisionBodySplit? {
        var reader = ByteReader(data)
        let (_, parents) = try readThroughParents(&reader)
        guard data[1] == RecordKind.note.rawValue else { return nil }
        _ = try reader.record("author")
        _ = try reader.u64("hlc")
        guard try reader.bool("live flag") else { return nil }
        _ = try reader.string("title", cap: RevisionCodec.Limits.title)
        let bodyStart = reader.offset
        let count = try reader.count("block count", cap: RevisionCodec.Limits.blocks)
        guard count * 32 <= reader.remaining else { throw DecodeError("truncated body: \(count) blocks announced") }
        let body = try (0..<count).map { _ in try reader.hash("block hash") }
        return RevisionBodySplit(prefix: data[..<bodyStart], body: body, suffix: data[reader.offset...], parents: parents)
    }

    /// The record and the parents named in an encoding's prefix (all that precedes the body).
    static func recordAndParents(inPrefix prefix: [UInt8]) throws -> (record: RecordID, parents: [RevisionID]) {
        var reader = ByteReader(prefix)
        return try readThroughParents(&reader)
    }

    /// The canonical encoding again: prefix, body list, suffix.
    static func join(prefix: some Collection<UInt8>, body: [BlockHash], suffix: some Collection<UInt8>) -> [UInt8] {
        var writer = ByteWriter(capacity: prefix.count + body.count * 32 + suffix.count + 4)
        writer.raw(prefix)
        writer.varint(body.count)
        for hash in body { writer.hash(hash) }
        writer.raw(suffix)
        return writer.bytes
    }

    private static func readThroughParents(_ reader: inout ByteReader) throws -> (record: RecordID, parents: [RevisionID]) {
        guard try reader.u8("format") == RevisionCodec.formatVersion else { throw DecodeError("unknown revision format") }
        _ = try reader.u8("kind")
        let record = try reader.record()
        let count = try reader.count("parent count", cap: RevisionCodec.Limits.parents)
        guard count * 32 <= reader.remaining else { throw DecodeError("truncated parent list") }
        return (record, try (0..<count).map { _ in try reader.hash("parent") })
    }
}
