/// The canonical byte encoding of a block, version 1. The replica hashes it with BLAKE2b to
/// content-address blocks, stores it, and sends it to peers, so it is deterministic (one block,
/// one byte string) and decoding accepts only that byte string.
///
/// ```
/// block      = version:u8(=1) kind:u8 [level:u8] [containers] [attributes] content:string
/// kind       = 0 paragraph | 1 division | 2 heading (then level 1…6) | 3 quote | 4 code | 5 rule
///            | 6 list item (then containers) | 7 opaque (no attributes)
/// containers = count:varint { ordered:u8(0|1) attributes }   (count ≥ 1, outermost first)
/// attributes = count:varint { name:string hasValue:u8(0|1) [value:string] }
/// string     = byteCount:varint UTF-8 bytes
/// varint     = unsigned LEB128, shortest form
/// ```
enum BlockEncoding {
    static let version: UInt8 = 1

    static func write(kind: Block.Kind, attributes: [HTMLAttribute], content: String, to sink: inout some ByteSink) {
        sink.append(version)
        switch kind {
        case .paragraph: sink.append(0)
        case .division: sink.append(1)
        case .heading(let level):
            sink.append(2)
            sink.append(UInt8(truncatingIfNeeded: level))
        case .quote: sink.append(3)
        case .code: sink.append(4)
        case .rule: sink.append(5)
        case .listItem(let containers):
            sink.append(6)
            writeVarint(containers.count, to: &sink)
            for container in containers {
                sink.append(container.ordered ? 1 : 0)
                writeAttributes(container.attributes, to: &sink)
            }
        case .opaque: sink.append(7)
        }
        if kind != .opaque { writeAttributes(attributes, to: &sink) }
        writeString(content, to: &sink)
    }

    private static func writeAttributes(_ attributes: [HTMLAttribute], to sink: inout some ByteSink) {
        writeVarint(attributes.count, to: &sink)
        for attribute in attributes {
            writeString(attribute.name, to: &sink)
            if let value = attribute.value {
                sink.append(1)
                writeString(value, to: &sink)
            } else {
                sink.append(0)
            }
        }
    }

    private static func writeString(_ string: String, to sink: inout some ByteSink) {
        writeVarint(string.utf8.count, to: &sink)
        sink.append(utf8Of: string)
    }

    private static func writeVarint(_ value: Int, to sink: inout some ByteSink) {
        var rest = UInt64(value)
        while rest >= 0x80 {
            sink.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        sink.append(UInt8(rest))
    }
}

/// Where an encoding goes: a byte array, or straight into a hash without building the array.
protocol ByteSink {
    mutating func append(_ byte: UInt8)
    mutating func append(utf8Of string: String)
}

extension Fingerprint: ByteSink {
    mutating func append(_ byte: UInt8) { add(byte) }
    mutating func append(utf8Of string: String) { add(string.utf8) }
}

struct ByteArraySink: ByteSink {
    var bytes: [UInt8] = []
    mutating func append(_ byte: UInt8) { bytes.append(byte) }
    mutating func append(utf8Of string: String) { bytes.append(contentsOf: string.utf8) }
}

/// A block encoding that is not exactly what `Block.encoded()` produces.
public struct BlockDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Byte offset in the encoding where the problem was found.
    public var offset: Int
    public var reason: String

    public var description: String {
        "cannot decode block at byte \(offset): \(reason)"
    }
}

extension Block {
    /// The canonical encoding (format above `BlockEncoding`). `Block(encoded: b.encoded()) == b`.
    public func encoded() -> [UInt8] {
        var sink = ByteArraySink()
        BlockEncoding.write(kind: kind, attributes: attributes, content: content, to: &sink)
        return sink.bytes
    }

    /// Decodes `encoded()` output, read back from disk or from a peer. Anything else — truncated,
    /// trailing bytes, a newer version, non-shortest varints, invalid UTF-8, impossible fields —
    /// is a `BlockDecodingError`, never a crash.
    public init(encoded: some Collection<UInt8>) throws(BlockDecodingError) {
        let bytes = Array(encoded)
        let fields = try BlockEncoding.read(bytes[...], building: true)
        // The input is exactly the canonical encoding (every field was checked to be in its only
        // form), so its hash is the fingerprint.
        self.init(
            unchecked: fields.kind, attributes: fields.attributes, content: fields.content ?? "", fingerprint: Fingerprint.of(bytes))
    }

    /// Throws what `init(encoded:)` would throw, and nothing when it would decode, without
    /// building the block: a receiver checks every block a peer sends before storing it, and
    /// most of a block is its content, whose UTF-8 is checked here but never copied into a
    /// string (nor hashed into a fingerprint) only to be dropped; its attributes are checked
    /// in their bytes too.
    public static func check(encoded: [UInt8]) throws(BlockDecodingError) {
        try check(encoded: encoded[...])
    }

    /// `check(encoded:)` of a block that is part of a larger buffer (a received frame's),
    /// checked where it is.
    public static func check(encoded: ArraySlice<UInt8>) throws(BlockDecodingError) {
        _ = try BlockEncoding.read(encoded, building: false)
    }

    /// `Block(encoded:).text`, checked as `check(encoded:)` checks, without building the
    /// block: a note's text for search is taken from its stored blocks, and building each
    /// block's strings and fingerprint cost more than taking its text.
    public static func text(encoded: [UInt8]) throws(BlockDecodingError) -> String {
        let content = try BlockEncoding.read(encoded[...], building: false).contentRange
        return encoded.withUnsafeBufferPointer { HTMLText.plainText(of: UnsafeBufferPointer(rebasing: $0[content])) }
    }
}

extension BlockEncoding {
    /// The fields of one encoded block, each checked to be in its only form and the block
    /// possible (`Block.problem`). The attributes and content are built only when `building`
    /// (a list item's containers are returned without their attributes when not).
    /// Offsets, and the content's range, count from the start of `bytes`.
    fileprivate static func read(
        _ bytes: ArraySlice<UInt8>, building: Bool
    ) throws(BlockDecodingError) -> (kind: Block.Kind, attributes: [HTMLAttribute], content: String?, contentRange: Range<Int>) {
        var reader = Reader(bytes: bytes, building: building)
        let version = try reader.byte("the version")
        guard version == BlockEncoding.version else {
            throw BlockDecodingError(
                offset: 0,
                reason: "encoding version \(version) is not version \(BlockEncoding.version), the only one this notesd reads; "
                    + "if a newer notesd wrote it, upgrade this one")
        }
        let kindOffset = reader.offset
        let kind: Block.Kind
        switch try reader.byte("the kind") {
        case 0: kind = .paragraph
        case 1: kind = .division
        case 2: kind = .heading(level: Int(try reader.byte("the heading level")))
        case 3: kind = .quote
        case 4: kind = .code
        case 5: kind = .rule
        case 6:
            let count = try reader.count("the list container count")
            var containers: [ListContainer] = []
            for _ in 0..<count {
                let ordered = try reader.flag("a list container's ordered flag")
                containers.append(ListContainer(ordered: ordered, attributes: try reader.attributes()))
            }
            kind = .listItem(containers: containers)
        case 7: kind = .opaque
        case let other:
            throw BlockDecodingError(offset: kindOffset, reason: "unknown block kind \(other)")
        }
        let attributes = kind == .opaque ? [] : try reader.attributes()
        // Its UTF-8 checked once: as the string is made when it is kept, in place when not.
        let content: String?, contentRange: Range<Int>
        if building {
            let text = try reader.string("the content")
            (content, contentRange) = (text, reader.offset - text.utf8.count..<reader.offset)
        } else {
            content = nil
            contentRange = try reader.utf8("the content")
        }
        let contentIsEmpty = contentRange.isEmpty
        guard reader.offset == reader.bytes.count else {
            throw BlockDecodingError(
                offset: reader.offset, reason: "\(reader.bytes.count - reader.offset) bytes follow the end of the block")
        }
        let problem = Block.problem(
            kind: kind, hasAttributes: reader.attributeCount > 0,
            firstAttributeProblem: reader.firstAttributeProblem, contentIsEmpty: contentIsEmpty)
        if let problem { throw BlockDecodingError(offset: kindOffset, reason: problem) }
        return (kind, attributes, content, contentRange)
    }
}

/// Reads an encoding front to back; every length is checked against what is left before use.
/// What is being read is described only when there is an error to report (every block of a
/// catch-up is decoded, and building the descriptions cost more than the decoding).
private struct Reader {
    /// Read through `offset`, which counts from its start (a slice's indices need not).
    let bytes: ArraySlice<UInt8>
    /// Whether attributes are built; when not (a receiver's check), each is checked in its
    /// bytes and none is returned: building a block's attributes cost more than checking its
    /// content.
    let building: Bool
    var offset = 0
    /// Attributes read so far, the containing lists' included.
    var attributeCount = 0
    /// The first attribute, in encoding order, that could not be written back (`HTMLAttribute.problem`).
    var firstAttributeProblem: String?

    mutating func byte(_ what: @autoclosure () -> String) throws(BlockDecodingError) -> UInt8 {
        guard offset < bytes.count else {
            throw BlockDecodingError(offset: offset, reason: "the encoding ends before \(what())")
        }
        defer { offset += 1 }
        return bytes[bytes.startIndex + offset]
    }

    /// The bytes at `range`, counted from the start of the encoding.
    func slice(_ range: Range<Int>) -> ArraySlice<UInt8> {
        bytes[bytes.startIndex + range.lowerBound..<bytes.startIndex + range.upperBound]
    }

    mutating func flag(_ what: @autoclosure () -> String) throws(BlockDecodingError) -> Bool {
        let start = offset
        switch try byte(what()) {
        case 0: return false
        case 1: return true
        case let other: throw BlockDecodingError(offset: start, reason: "\(what()) is \(other), not 0 or 1")
        }
    }

    mutating func varint(_ what: @autoclosure () -> String) throws(BlockDecodingError) -> UInt64 {
        let start = offset
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte(what())
            guard shift < 63 || (shift == 63 && next <= 1) else {
                throw BlockDecodingError(offset: start, reason: "\(what()) does not fit in 64 bits")
            }
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 {
                guard next != 0 || offset - start == 1 else {
                    throw BlockDecodingError(offset: start, reason: "\(what()) is not in its shortest form")
                }
                return value
            }
            shift += 7
        }
    }

    /// A count of items that each take at least one byte, so it cannot exceed what is left.
    mutating func count(_ what: @autoclosure () -> String) throws(BlockDecodingError) -> Int {
        let start = offset
        let value = try varint(what())
        guard value <= UInt64(bytes.count - offset) else {
            throw BlockDecodingError(offset: start, reason: "\(what()) \(value) exceeds the \(bytes.count - offset) bytes left")
        }
        return Int(value)
    }

    /// The range of a string's UTF-8 bytes, checked to be valid UTF-8 but not copied out.
    mutating func utf8(_ what: @autoclosure () -> String) throws(BlockDecodingError) -> Range<Int> {
        let start = offset
        let length = try count("the length of \(what())")
        let range = offset..<offset + length
        do {
            _ = try UTF8Span(validating: bytes.span.extracting(range))
        } catch {
            throw BlockDecodingError(offset: start, reason: "\(what()) is not valid UTF-8")
        }
        offset += length
        return range
    }

    mutating func string(_ what: @autoclosure () -> String) throws(BlockDecodingError) -> String {
        let start = offset
        let length = try count("the length of \(what())")
        guard let string = String(validating: slice(offset..<offset + length), as: UTF8.self) else {
            throw BlockDecodingError(offset: start, reason: "\(what()) is not valid UTF-8")
        }
        offset += length
        return string
    }

    mutating func attributes() throws(BlockDecodingError) -> [HTMLAttribute] {
        let count = try count("the attribute count")
        attributeCount += count
        var attributes: [HTMLAttribute] = []
        if building { attributes.reserveCapacity(count) }
        for _ in 0..<count {
            if building {
                let name = try string("an attribute name")
                let value = try flag("an attribute's has-value flag") ? try string("an attribute value") : nil
                let attribute = HTMLAttribute(name: name, value: value)
                if firstAttributeProblem == nil { firstAttributeProblem = attribute.problem }
                attributes.append(attribute)
            } else {
                let name = try utf8("an attribute name")
                if firstAttributeProblem == nil { firstAttributeProblem = HTMLAttribute.problem(ofName: slice(name)) }
                if try flag("an attribute's has-value flag") { _ = try utf8("an attribute value") }
            }
        }
        return attributes
    }
}
