/// Canonical binary encoding shared by blocks, revisions and wire frames: big-endian fixed
/// integers, LEB128 varints for counts and lengths, strings as length + UTF-8.
/// Deterministic by construction (callers sort sets first), so equal values hash equally.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }
    public mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    public mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    public mutating func u32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// Big-endian, the eight bytes appended at once (byte by byte, the header of every revision
    /// stored cost a catch-up five of these loops).
    public mutating func u64(_ value: UInt64) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    public mutating func varint(_ value: Int) { varint(UInt64(value)) }

    public mutating func raw(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    /// Length-prefixed bytes.
    public mutating func data(_ data: some Collection<UInt8>) {
        varint(data.count)
        bytes.append(contentsOf: data)
    }

    public mutating func string(_ text: String) {
        varint(text.utf8.count)
        bytes.append(contentsOf: text.utf8)
    }

    public mutating func optional<T>(_ value: T?, _ write: (inout ByteWriter, T) -> Void) {
        if let value {
            u8(1)
            write(&self, value)
        } else {
            u8(0)
        }
    }

    public mutating func hash(_ value: Hash256) { value.withBytes { bytes.append(contentsOf: $0) } }
    public mutating func record(_ value: RecordID) {
        u64(value.high)
        u64(value.low)
    }
}

/// Reads what `ByteWriter` wrote. Every length is checked against the bytes that remain (and
/// against the caller's cap) before anything is allocated; malformed input is a thrown
/// `DecodeError`, never a crash.
public struct ByteReader {
    private let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset == bytes.count }

    private mutating func take(_ count: Int, _ what: @autoclosure () -> String) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= remaining else {
            throw DecodeError("truncated \(what()): needs \(count) bytes, \(remaining) left")
        }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    public mutating func u8(_ what: @autoclosure () -> String = "byte") throws -> UInt8 { try take(1, what()).first! }

    public mutating func bool(_ what: @autoclosure () -> String = "flag") throws -> Bool {
        switch try u8(what()) {
        case 0: return false
        case 1: return true
        case let other: throw DecodeError("\(what()) must be 0 or 1, found \(other)")
        }
    }

    public mutating func u16(_ what: @autoclosure () -> String = "u16") throws -> UInt16 {
        try take(2, what()).reduce(0) { $0 << 8 | UInt16($1) }
    }

    public mutating func u32(_ what: @autoclosure () -> String = "u32") throws -> UInt32 {
        try take(4, what()).reduce(0) { $0 << 8 | UInt32($1) }
    }

    public mutating func u64(_ what: @autoclosure () -> String = "u64") throws -> UInt64 {
        try take(8, what()).reduce(0) { $0 << 8 | UInt64($1) }
    }

    public mutating func varint(_ what: @autoclosure () -> String = "varint") throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try u8(what())
            guard shift < 64, shift != 63 || byte <= 1 else { throw DecodeError("\(what()) overflows 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                guard byte != 0 || shift == 0 else { throw DecodeError("\(what()) is not minimally encoded") }
                return value
            }
            shift += 7
        }
    }

    /// The largest time or sequence number a replica stores: SQLite integers are signed 64-bit.
    public static let storableMaximum = UInt64(Int64.max)

    /// `u64` for a time or sequence number: refused above `storableMaximum`, which only a
    /// broken or hostile peer sends (and which would not fit the database).
    public mutating func storableU64(_ what: @autoclosure () -> String) throws -> UInt64 {
        try storable(u64(what()), what())
    }

    /// `varint` for a sequence number, refused like `storableU64`.
    public mutating func storableVarint(_ what: @autoclosure () -> String) throws -> UInt64 {
        try storable(varint(what()), what())
    }

    private func storable(_ value: UInt64, _ what: @autoclosure () -> String) throws -> UInt64 {
        guard value <= Self.storableMaximum else { throw DecodeError("\(what()) \(value) is beyond the largest storable value \(Self.storableMaximum)") }
        return value
    }

    /// A count or length, refused when above `cap`.
    public mutating func count(_ what: @autoclosure () -> String, cap: Int) throws -> Int {
        let value = try varint(what())
        guard value <= UInt64(cap) else { throw DecodeError("\(what()) \(value) is over the limit of \(cap)") }
        return Int(value)
    }

    public mutating func raw(_ count: Int, _ what: @autoclosure () -> String = "bytes") throws -> [UInt8] { Array(try take(count, what())) }

    /// Length-prefixed bytes as a slice of what is read, not copied out: a received frame's
    /// blocks stay in the frame (docs/decisions.md, "A received block stays in its frame").
    public mutating func dataSlice(_ what: @autoclosure () -> String = "bytes", cap: Int) throws -> ArraySlice<UInt8> {
        let length = try count("\(what()) length", cap: cap)
        return try take(length, what())
    }

    public mutating func data(_ what: @autoclosure () -> String = "bytes", cap: Int) throws -> [UInt8] {
        Array(try dataSlice(what(), cap: cap))
    }

    public mutating func string(_ what: @autoclosure () -> String = "text", cap: Int) throws -> String {
        let utf8 = try data(what(), cap: cap)
        guard let text = String(validating: utf8, as: UTF8.self) else { throw DecodeError("\(what()) is not valid UTF-8") }
        return text
    }

    public mutating func optional<T>(_ what: @autoclosure () -> String, _ read: (inout ByteReader) throws -> T) throws -> T? {
        try bool("\(what()) presence") ? try read(&self) : nil
    }

    public mutating func hash(_ what: @autoclosure () -> String = "hash") throws -> Hash256 {
        Hash256(bytes: try take(32, what()))!
    }

    public mutating func record(_ what: @autoclosure () -> String = "record id") throws -> RecordID {
        RecordID(high: try u64(what()), low: try u64(what()))
    }

    /// Throws unless every byte was consumed: trailing garbage is malformed, not ignored.
    public func expectEnd(_ what: @autoclosure () -> String) throws {
        guard isAtEnd else { throw DecodeError("\(remaining) unexpected bytes after \(what())") }
    }
}

/// Malformed encoded data (from disk or the network), with what was wrong.
public struct DecodeError: Error, CustomStringConvertible, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
