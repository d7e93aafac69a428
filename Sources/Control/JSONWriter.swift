import Foundation

/// JSON written straight into bytes, for the answers that are large by nature or frequent —
/// every note of a listing, a search's hits at each keystroke — where Foundation's `JSONEncoder` (a tree of boxed values, then
/// sorted dictionaries) cost more than building the answer itself (docs/decisions.md,
/// "Listing answers written directly"). The output is byte for byte what `ControlJSON.encoder()`
/// writes for the same value — keys sorted, `/` unescaped — and a test holds it to that.
public protocol DirectJSONEncodable: Encodable, Sendable {
    /// Appends the value's JSON, members in sorted key order.
    func writeJSON(to writer: inout JSONWriter)
    /// About how many bytes `writeJSON` writes: the writer's buffer is sized once from it, not
    /// grown (and copied) step by step through a listing's megabytes.
    var estimatedJSONBytes: Int { get }
}

/// The bytes of one JSON text, in a buffer it owns and grows with `realloc` (which moves a
/// large buffer's pages instead of copying them), handed over to `Data` without a copy.
public struct JSONWriter: ~Copyable {
    private var start: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int

    public init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        guard let buffer = malloc(self.capacity) else { fatalError("out of memory for a \(self.capacity)-byte answer") }
        start = buffer.assumingMemoryBound(to: UInt8.self)
    }

    deinit { free(start) }

    /// What was written, as `Data` that now owns the buffer.
    public consuming func data() -> Data {
        let data = Data(bytesNoCopy: start, count: count, deallocator: .free)
        discard self
        return data
    }

    /// Room for `extra` more bytes.
    private mutating func reserve(_ extra: Int) {
        guard count + extra > capacity else { return }
        let wanted = max(capacity * 2, count + extra)
        guard let moved = realloc(start, wanted) else { fatalError("out of memory for a \(wanted)-byte answer") }
        start = moved.assumingMemoryBound(to: UInt8.self)
        capacity = wanted
    }

    private mutating func append(_ byte: UInt8) {
        reserve(1)
        start[count] = byte
        count += 1
    }

    /// Bytes already JSON (a part written by another writer).
    public mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (start + count).update(from: base, count: bytes.count)
        count += bytes.count
    }

    public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { append($0) }
    }

    public mutating func string(_ value: String) {
        append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            reserve(utf8.count + 1)
            var start = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                append(UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(byte)
                case 0x08: append(UInt8(ascii: "b"))
                case 0x0C: append(UInt8(ascii: "f"))
                case 0x0A: append(UInt8(ascii: "n"))
                case 0x0D: append(UInt8(ascii: "r"))
                case 0x09: append(UInt8(ascii: "t"))
                default:
                    raw("u00")
                    append(Self.hexDigit(byte >> 4))
                    append(Self.hexDigit(byte & 0x0F))
                }
            }
            append(UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        append(UInt8(ascii: "\""))
    }

    public mutating func optionalString(_ value: String?) {
        if let value { string(value) } else { raw("null") }
    }

    public mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// Decimal digits written in place (two per note of a listing: no string made for each).
    public mutating func integer(_ value: Int64) {
        reserve(20)
        if value < 0 { start[count] = UInt8(ascii: "-"); count += 1 }
        var magnitude = value.magnitude
        var digits = 0
        repeat {
            start[count + digits] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
            digits += 1
        } while magnitude > 0
        // Written least significant first: reversed in place.
        var low = count, high = count + digits - 1
        while low < high {
            (start[low], start[high]) = (start[high], start[low])
            low += 1
            high -= 1
        }
        count += digits
    }

    /// A finite number as `JSONEncoder` writes it: Swift's shortest round-tripping text,
    /// without a trailing `.0` (`JSONWriterTests` holds the two together).
    public mutating func double(_ value: Double) {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        text.withUTF8 { append($0) }
    }

    /// `"key":` — keys are written by their callers in sorted order.
    public mutating func key(_ name: StaticString) {
        append(UInt8(ascii: "\""))
        raw(name)
        raw("\":")
    }

    public mutating func array<Element>(_ elements: [Element], _ write: (inout JSONWriter, Element) -> Void) {
        append(UInt8(ascii: "["))
        // By index: an element is lent to `write`, not copied out (a copy of a note summary
        // retains and releases each of its strings).
        for index in elements.indices {
            if index > 0 { append(UInt8(ascii: ",")) }
            write(&self, elements[index])
        }
        append(UInt8(ascii: "]"))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}

extension Array: DirectJSONEncodable where Element: DirectJSONEncodable {
    /// A large array (every note of a library) is written in two halves at once
    /// (`TwoHalves.both`): the first straight into `writer`, the second into a buffer of its
    /// own on the other core, appended after. Specialised for the listing's summaries: answers
    /// reach this through `any DirectJSONEncodable`, where the generic form would copy (retain
    /// and release) each element out of the array.
    @_specialize(where Element == NoteSummary)
    public func writeJSON(to writer: inout JSONWriter) {
        writer.raw("[")
        if count < TwoHalves.minimumElements {
            writeElements(0..<count, to: &writer)
        } else {
            let elements = self, middle = count / 2
            let second = withUnsafeMutablePointer(to: &writer) { pointer in
                // `writer` is the first half's alone until `both` returns.
                nonisolated(unsafe) let first = pointer
                return TwoHalves.both(
                    { elements.writeElements(0..<middle, to: &first.pointee) },
                    {
                        var part = JSONWriter(capacity: elements[middle...].estimatedJSONBytes)
                        elements.writeElements(middle..<elements.count, to: &part)
                        return part.data()
                    }).1
            }
            second.withUnsafeBytes { writer.append($0.bindMemory(to: UInt8.self)) }
        }
        writer.raw("]")
    }

    /// The elements at `range`, each after a comma but the array's first.
    private func writeElements(_ range: Range<Int>, to writer: inout JSONWriter) {
        for index in range {
            if index > 0 { writer.raw(",") }
            self[index].writeJSON(to: &writer)
        }
    }

}

extension Collection where Element: DirectJSONEncodable {
    /// The elements' estimates, with the brackets and a comma each (an array's, or one half's).
    public var estimatedJSONBytes: Int { reduce(2) { $0 + $1.estimatedJSONBytes + 1 } }
}
