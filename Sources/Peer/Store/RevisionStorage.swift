import Merge
#if canImport(Glibc)
import Glibc
#endif

/// How a `revisions` row holds a revision (schema migration 8; docs/decisions.md, "History
/// storage"). The canonical encoding is never stored as such any more; it is rebuilt on read
/// from three parts, and its hash is still the revision id:
/// - the header (format, kind, record, parents, author, HLC) comes from the row's columns;
/// - `fields` is the rest of the encoding with a live note's body list cut out (the live flag,
///   title, folder, flags, tags, times);
/// - `body` is that list.
///
/// The `depth` column says how the row holds `fields` and `body`:
/// - NULL: a row written before migration 8: `data` is the whole canonical encoding and
///   `body` the whole list;
/// - 0: `data` is `fields` and `body` the whole list;
/// - n > 0: `body` is the edits that turn the first parent's body into this one, and `data`
///   is a tag byte then either `fields` whole (`0`) or as a change of the first parent's
///   fields (`1`: common prefix and suffix lengths, then the bytes between). The first parent
///   is n − 1 deltas from a whole body, so reading a row reads at most `maximumDepth` more.
///
/// A purged row keeps `body` (in whatever form) and loses `data`; before a row is purged or
/// deleted, the rows stored as deltas of it are stored whole (`detachDeltaChildren`).
enum RevisionStorage {
    /// The longest delta chain: a revision whose first parent is this many deltas from a whole
    /// body is stored whole. 16 keeps a read to at most 17 row lookups, and adds ~14 B per
    /// edit of a 7-block note for the whole bodies (docs/benchmarks.md).
    static let maximumDepth = 16

    /// A revision taken apart as the row holds it.
    struct Parts: Hashable {
        var fields: [UInt8]
        var body: [BlockHash]
    }

    /// The header the row's columns stand for, encoded as `RevisionCodec.encode` writes it.
    static func header(kind: RecordKind, record: RecordID, parents: [RevisionID], author: ReplicaID, hlc: HLC) -> [UInt8] {
        var writer = ByteWriter(capacity: 44 + parents.count * 32)
        writer.u8(RevisionCodec.formatVersion)
        writer.u8(kind.rawValue)
        writer.record(record)
        writer.varint(parents.count)
        for parent in parents { writer.hash(parent) }
        writer.record(author.raw)
        writer.u64(hlc.rawValue)
        return writer.bytes
    }

    /// The parts of `canonical`, or nil when it is not laid out as this notesd encodes
    /// revisions (then it is stored whole, as before). Compared and cut in place: every revision
    /// stored comes through here, and building the header's and the body list's bytes to
    /// compare them with was 6 % of a catch-up's `apply`.
    static func parts(of canonical: [UInt8], _ header: RevisionHeader) -> Parts? {
        let head = Self.header(kind: header.kind, record: header.record, parents: header.parents, author: header.author, hlc: header.hlc)
        guard canonical.count > head.count, sameBytes(canonical[..<head.count], head) else { return nil }
        let parts: Parts
        if header.kind == .note, !header.isTombstone {
            guard let bodyStart = try? titleEnd(canonical, fieldsAt: head.count) else { return nil }
            var count = ByteWriter(capacity: 4)
            count.varint(header.body.count)
            let hashesStart = bodyStart + count.bytes.count
            let bodyEnd = hashesStart + header.body.count * 32
            guard bodyEnd <= canonical.count, sameBytes(canonical[bodyStart..<hashesStart], count.bytes),
                  sameHashes(canonical, at: hashesStart, header.body) else { return nil }
            var fields: [UInt8] = []
            fields.reserveCapacity(canonical.count - head.count - (bodyEnd - bodyStart))
            fields.append(contentsOf: canonical[head.count..<bodyStart])
            fields.append(contentsOf: canonical[bodyEnd...])
            parts = Parts(fields: fields, body: header.body)
        } else {
            guard header.body.isEmpty else { return nil }
            parts = Parts(fields: Array(canonical[head.count...]), body: [])
        }
        // Cut from `canonical` itself around a list equal to the body's: joined again, they
        // are `canonical` (checked in debug builds; the tests read every stored revision back).
        assert((try? canonicalEncoding(head: head, parts)) == canonical, "stored parts rebuild the encoding")
        return parts
    }

    /// Byte-wise equality through `memcmp` (every revision stored compares its body list so).
    private static func sameBytes(_ slice: ArraySlice<UInt8>, _ bytes: [UInt8]) -> Bool {
        slice.count == bytes.count && slice.withUnsafeBytes { left in
            bytes.withUnsafeBytes { right in left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0 }
        }
    }

    /// Whether `hashes` are written one after the other at `offset` of `bytes` (the caller has
    /// checked that they fit).
    private static func sameHashes(_ bytes: [UInt8], at offset: Int, _ hashes: [BlockHash]) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var position = offset
            for hash in hashes {
                let same = hash.withBytes { memcmp(buffer.baseAddress! + position, $0.baseAddress!, 32) == 0 }
                guard same else { return false }
                position += 32
            }
            return true
        }
    }

    /// The canonical encoding again from the header and the parts.
    static func canonicalEncoding(head: [UInt8], _ parts: Parts) throws -> [UInt8] {
        let live = parts.fields.first == 1
        guard live, head.count > 1, head[1] == RecordKind.note.rawValue else {
            guard parts.body.isEmpty else { throw DecodeError("a stored revision that is not a live note has a body") }
            return head + parts.fields
        }
        let bodyStart = try titleEnd(parts.fields, fieldsAt: 0)
        var writer = ByteWriter(capacity: head.count + parts.fields.count + 4 + parts.body.count * 32)
        writer.raw(head)
        writer.raw(parts.fields[..<bodyStart])
        writer.varint(parts.body.count)
        for hash in parts.body { writer.hash(hash) }
        writer.raw(parts.fields[bodyStart...])
        return writer.bytes
    }

    /// Where a live note's title ends in `bytes`, whose fields (the live flag, then the title)
    /// start at `fieldsAt`.
    private static func titleEnd(_ bytes: [UInt8], fieldsAt start: Int) throws -> Int {
        var reader = ByteReader(bytes, offset: start + 1)
        _ = try reader.dataSlice("title", cap: RevisionCodec.Limits.title)
        return reader.offset
    }

    // MARK: - Body edits as stored

    /// `BodyDelta` edits in a few bytes: each a varint of (count << 2 | kind), inserts followed
    /// by their hashes.
    static func encode(_ edits: [BodyEdit]) -> [UInt8] {
        var writer = ByteWriter(capacity: 16)
        for edit in edits {
            switch edit {
            case .keep(let count): writer.varint(UInt64(count) << 2)
            case .skip(let count): writer.varint(UInt64(count) << 2 | 1)
            case .insert(let hashes):
                writer.varint(UInt64(hashes.count) << 2 | 2)
                for hash in hashes { writer.hash(hash) }
            }
        }
        return writer.bytes
    }

    static func decodeEdits(_ bytes: [UInt8]) throws -> [BodyEdit] {
        var reader = ByteReader(bytes)
        var edits: [BodyEdit] = []
        while !reader.isAtEnd {
            let word = try reader.varint("body edit")
            let count = Int(clamping: word >> 2)
            guard count <= RevisionCodec.Limits.blocks else { throw DecodeError("a stored body edit of \(count) blocks is over the limit") }
            switch word & 3 {
            case 0: edits.append(.keep(count))
            case 1: edits.append(.skip(count))
            case 2:
                guard count * 32 <= reader.remaining else { throw DecodeError("truncated stored body edit") }
                edits.append(.insert(try (0..<count).map { _ in try reader.hash("block hash") }))
            default: throw DecodeError("unknown stored body edit \(word & 3)")
            }
        }
        return edits
    }

    // MARK: - Fields as stored

    /// `data` of a delta row: the fields whole, or their change from the parent's when smaller.
    static func storedFields(_ fields: [UInt8], parent: [UInt8]?) -> [UInt8] {
        guard let parent else { return [0] + fields }
        let limit = min(parent.count, fields.count)
        var prefix = 0
        while prefix < limit, parent[prefix] == fields[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < limit - prefix, parent[parent.count - 1 - suffix] == fields[fields.count - 1 - suffix] { suffix += 1 }
        var writer = ByteWriter(capacity: 8 + fields.count - prefix - suffix)
        writer.u8(1)
        writer.varint(prefix)
        writer.varint(suffix)
        writer.raw(fields[prefix..<fields.count - suffix])
        return writer.bytes.count < fields.count + 1 ? writer.bytes : [0] + fields
    }

    /// The fields a delta row's `data` stands for.
    static func fields(stored data: [UInt8], parent: [UInt8]?) throws -> [UInt8] {
        guard let tag = data.first else { throw DecodeError("a stored revision has no fields") }
        switch tag {
        case 0: return Array(data.dropFirst())
        case 1:
            guard let parent else { throw DecodeError("a stored revision's fields are a change of a parent whose content is gone") }
            var reader = ByteReader(data, offset: 1)
            let prefix = try reader.count("fields prefix", cap: parent.count)
            let suffix = try reader.count("fields suffix", cap: parent.count - prefix)
            let middle = try reader.raw(reader.remaining, "fields")
            return Array(parent[..<prefix]) + middle + parent[(parent.count - suffix)...]
        default: throw DecodeError("unknown stored fields tag \(tag)")
        }
    }
}
