/// Identities shared by every module: records, revisions and clocks.
///
/// They live in `Merge` because the merge rules order things by them; `Merge` stays pure,
/// so minting (random ids, hashing, reading the wall clock) happens in `Peer`.

/// A 128-bit record id (notes and folders: UUIDv7, RFC 9562; derived records: UUIDv8).
public struct RecordID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The 16 bytes, most significant first (the UUID byte order).
    /// Inlinable so callers in other modules get a specialised loop: ids are decoded from
    /// every row the replica reads.
    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        var index = 0
        for byte in bytes {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
            index += 1
        }
        self.init(high: high, low: low)
    }

    /// Parses the canonical `8-4-4-4-12` hex form (either case); `nil` for anything else.
    public init?(_ text: String) {
        let hex = text.filter { $0 != "-" }
        guard text.count == 36, hex.count == 32,
              [8, 13, 18, 23].allSatisfy({ text[text.index(text.startIndex, offsetBy: $0)] == "-" }),
              let bytes = Hex.decode(hex) else { return nil }
        self.init(bytes: bytes)
    }

    public var bytes: [UInt8] { withBytes { Array($0) } }

    /// The 16 bytes, lent without an array (as `Hash256.withBytes`).
    @inlinable
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { try body($0) }
    }

    /// The canonical `8-4-4-4-12` lowercase hex form, written straight into the string's
    /// storage: every note summary and event names ids this way (a listing of 10,000 notes
    /// spent a fifth of its time here when it was built character by character).
    public var description: String {
        String(unsafeUninitializedCapacity: 36) { out in
            var position = 0
            for nibble in 0..<32 {
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                    out[position] = UInt8(ascii: "-")
                    position += 1
                }
                let word = nibble < 16 ? high : low
                let value = Int(truncatingIfNeeded: word >> UInt64(60 - 4 * (nibble % 16))) & 0x0F
                out[position] = Hex.digit(value)
                position += 1
            }
            return position
        }
    }

    public static func < (lhs: RecordID, rhs: RecordID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

public typealias NoteID = RecordID
public typealias FolderID = RecordID

/// A revision id: the hash of the revision's canonical encoding. The byte order breaks ties
/// between revisions with equal HLCs.
public typealias RevisionID = Hash256
/// A block's content address: the hash of `Block.encoded()`.
public typealias BlockHash = Hash256

/// A 256-bit content hash (BLAKE2b-256, computed in `Peer`), ordered byte-wise.
public struct Hash256: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let word0: UInt64, word1: UInt64, word2: UInt64, word3: UInt64

    /// Inlinable, with no intermediate array: hashes are decoded from every revision and block row.
    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        // Contiguous bytes (an array or a slice of one, as every decoder has): four loads.
        if let loaded = bytes.withContiguousStorageIfAvailable({ buffer in
            let raw = UnsafeRawBufferPointer(buffer)
            return (
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        }) {
            (word0, word1, word2, word3) = loaded
            return
        }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var index = 0
        for byte in bytes {
            switch index >> 3 {
            case 0: words.0 = words.0 << 8 | UInt64(byte)
            case 1: words.1 = words.1 << 8 | UInt64(byte)
            case 2: words.2 = words.2 << 8 | UInt64(byte)
            default: words.3 = words.3 << 8 | UInt64(byte)
            }
            index += 1
        }
        (word0, word1, word2, word3) = words
    }

    public init?(hex: String) {
        guard hex.count == 64, let bytes = Hex.decode(hex) else { return nil }
        self.init(bytes: bytes)
    }

    /// The 32 bytes, lent without an array: binding or writing an id this way allocates
    /// nothing (an array per id was a measurable share of a catch-up; docs/benchmarks.md).
    @inlinable
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: (word0.bigEndian, word1.bigEndian, word2.bigEndian, word3.bigEndian)) { try body($0) }
    }

    public var bytes: [UInt8] { withBytes { Array($0) } }

    /// Writes the 32 bytes at `offset` of `buffer`: four stores, where appending `withBytes`
    /// to an array copied them through a generic path (a catch-up writes some 370,000 ids).
    @inlinable
    public func store(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) {
        precondition(offset >= 0 && offset + 32 <= buffer.count, "32 bytes at \(offset) do not fit \(buffer.count)")
        buffer.storeBytes(of: word0.bigEndian, toByteOffset: offset, as: UInt64.self)
        buffer.storeBytes(of: word1.bigEndian, toByteOffset: offset + 8, as: UInt64.self)
        buffer.storeBytes(of: word2.bigEndian, toByteOffset: offset + 16, as: UInt64.self)
        buffer.storeBytes(of: word3.bigEndian, toByteOffset: offset + 24, as: UInt64.self)
    }

    public var description: String { Hex.encode(bytes) }
    /// The first 12 hex digits, for logs and `notesctl log`.
    public var short: String { String(description.prefix(12)) }

    public static func < (lhs: Hash256, rhs: Hash256) -> Bool {
        (lhs.word0, lhs.word1, lhs.word2, lhs.word3) < (rhs.word0, rhs.word1, rhs.word2, rhs.word3)
    }
}

/// A hybrid logical clock reading: 48 bits of Unix milliseconds, 16 bits of counter.
/// Orders revisions for "later wins" and for display; never decides correctness alone.
public struct HLC: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(milliseconds: UInt64, counter: UInt16) {
        rawValue = (milliseconds & 0xFFFF_FFFF_FFFF) << 16 | UInt64(counter)
    }

    public static let zero = HLC(rawValue: 0)

    public var milliseconds: UInt64 { rawValue >> 16 }
    public var counter: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    /// The reading for a local event at wall time `now` (ms), strictly after `self`.
    public func advanced(now: UInt64) -> HLC {
        if now > milliseconds { return HLC(milliseconds: now, counter: 0) }
        return HLC(rawValue: rawValue &+ 1)
    }

    /// The reading after receiving `remote` at wall time `now`: after both, so a clock that is
    /// behind catches up with what it has seen.
    public func receiving(_ remote: HLC, now: UInt64) -> HLC {
        let latest = Swift.max(self, remote)
        if now > latest.milliseconds { return HLC(milliseconds: now, counter: 0) }
        return HLC(rawValue: latest.rawValue &+ 1)
    }

    public var description: String { "\(milliseconds).\(counter)" }

    public static func < (lhs: HLC, rhs: HLC) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The canonical order of concurrent revisions: later HLC first, then larger revision id.
/// Every "who wins" and "which goes first" decision in the merge uses this, never who merges.
public struct Stamp: Hashable, Comparable, Sendable {
    public let hlc: HLC
    public let revision: RevisionID

    public init(hlc: HLC, revision: RevisionID) {
        self.hlc = hlc
        self.revision = revision
    }

    public static func < (lhs: Stamp, rhs: Stamp) -> Bool { (lhs.hlc, lhs.revision) < (rhs.hlc, rhs.revision) }
}

/// Lower-case hex, for ids in text form.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// The lowercase hex digit of `value` (0…15).
    @inline(__always)
    static func digit(_ value: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: value < 10 ? 48 + value : 87 + value)
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let hi = nibble(chars[index]), let lo = nibble(chars[index + 1]) else { return nil }
            out.append(hi << 4 | lo)
            index += 2
        }
        return out
    }
}
