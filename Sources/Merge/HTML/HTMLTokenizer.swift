/// One lexical piece of HTML: a byte range of the UTF-8 source and what it is.
struct HTMLToken {
    enum Kind: Equatable {
        /// Characters, entities undecoded. Any `<` in it is a literal less-than sign.
        case text
        case startTag
        case endTag
        /// `<!-- … -->`, `<!DOCTYPE …>`, `<?…>`: markup that holds no text.
        case comment
        /// The inside of `<script>` or `<style>`: not markup, and not text a reader sees.
        case rawText
    }

    var kind: Kind
    var range: Range<Int>
    /// The tag name, lower-cased, for start and end tags; empty otherwise.
    var name: String = ""
    /// Where a start tag's attributes are (parsed on demand by `HTMLTokenizer.attributes`).
    var attributeRange: Range<Int> = 0..<0
}

/// A tolerant HTML tokenizer after the WHATWG tokenizer (https://html.spec.whatwg.org/#tokenization),
/// simplified, and never losing a character:
///
/// - A tag name is `[A-Za-z][A-Za-z0-9:_.-]*` and must be followed by whitespace, `/` or `>`.
/// - Anything that cannot be completed — a tag or comment that reaches the end of the input
///   unclosed, `<` before a non-letter (`a < b`, `x<5`), a `<script>` with no `</script>` — is text,
///   where a browser would swallow the rest of the document. So every token ends inside the
///   input's own bytes, and the same substring always tokenizes the same way wherever it sits.
enum HTMLTokenizer {
    static func tokenize(_ bytes: UnsafeBufferPointer<UInt8>) -> [HTMLToken] {
        var tokens: [HTMLToken] = []
        // About one token per eight bytes of HTML: a block's tokens in one allocation instead
        // of four or five as the array grows.
        tokens.reserveCapacity(min(bytes.count / 8 + 4, 1_024))
        var textStart = 0
        var index = 0
        var rawTextWithoutEnd: Set<String> = []
        let count = bytes.count
        while index < count {
            guard bytes[index] == Byte.lessThan, let tag = markup(bytes, at: index) else {
                index += 1
                continue
            }
            var next = tag.range.upperBound
            var rawText: Range<Int>?
            if tag.kind == .startTag, tag.name == "script" || tag.name == "style" {
                // Raw text runs to the matching end tag; without one the start tag is just text.
                guard !rawTextWithoutEnd.contains(tag.name),
                      let end = rawTextEnd(bytes, name: tag.name, from: next)
                else {
                    rawTextWithoutEnd.insert(tag.name)
                    index += 1
                    continue
                }
                rawText = next..<end
                next = end
            }
            if textStart < index { tokens.append(HTMLToken(kind: .text, range: textStart..<index)) }
            tokens.append(tag)
            if let rawText, !rawText.isEmpty { tokens.append(HTMLToken(kind: .rawText, range: rawText)) }
            index = next
            textStart = next
        }
        if textStart < count { tokens.append(HTMLToken(kind: .text, range: textStart..<count)) }
        return tokens
    }

    /// The markup token that starts at `bytes[start] == "<"`, or nil if that `<` is text.
    private static func markup(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> HTMLToken? {
        let count = bytes.count
        guard start + 1 < count else { return nil }
        let next = bytes[start + 1]
        if next == Byte.exclamation {
            if start + 3 < count, bytes[start + 2] == Byte.dash, bytes[start + 3] == Byte.dash {
                // Searching from the first dash accepts `<!-->` and `<!--->`, as HTML does.
                guard let end = find(bytes, Byte.commentEnd, from: start + 2) else { return nil }
                return HTMLToken(kind: .comment, range: start..<end + 3)
            }
            guard let end = find(bytes, [Byte.greaterThan], from: start + 2) else { return nil }
            return HTMLToken(kind: .comment, range: start..<end + 1)
        }
        if next == Byte.question {
            guard let end = find(bytes, [Byte.greaterThan], from: start + 2) else { return nil }
            return HTMLToken(kind: .comment, range: start..<end + 1)
        }
        let isEnd = next == Byte.slash
        let nameStart = isEnd ? start + 2 : start + 1
        guard nameStart < count, Byte.isLetter(bytes[nameStart]) else { return nil }
        var nameEnd = nameStart + 1
        while nameEnd < count, Byte.isNameCharacter(bytes[nameEnd]) { nameEnd += 1 }
        guard nameEnd < count, Byte.isWhitespace(bytes[nameEnd]) || bytes[nameEnd] == Byte.slash
                || bytes[nameEnd] == Byte.greaterThan,
              let end = scanAttributes(bytes, from: nameEnd)
        else { return nil }
        return HTMLToken(
            kind: isEnd ? .endTag : .startTag, range: start..<end.next,
            name: lowercased(bytes, nameStart..<nameEnd), attributeRange: nameEnd..<end.attributesEnd)
    }

    private static func scanAttributes(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (attributesEnd: Int, next: Int)? {
        var unused: [HTMLAttribute] = []
        return scanAttributes(bytes, from: start, collecting: false, into: &unused)
    }

    /// Walks a tag's attributes (honouring quotes) to its closing `>`; nil if the input ends first.
    /// With `collecting`, also parses them into `attributes`.
    @discardableResult
    private static func scanAttributes(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, collecting: Bool, into attributes: inout [HTMLAttribute]
    ) -> (attributesEnd: Int, next: Int)? {
        let count = bytes.count
        var index = start
        while true {
            while index < count, Byte.isWhitespace(bytes[index]) { index += 1 }
            guard index < count else { return nil }
            if bytes[index] == Byte.greaterThan { return (index, index + 1) }
            if bytes[index] == Byte.slash {
                if index + 1 < count, bytes[index + 1] == Byte.greaterThan { return (index, index + 2) }
                index += 1
                continue
            }
            let nameStart = index
            index += 1  // a name has at least one character, even `=`
            while index < count, !Byte.isWhitespace(bytes[index]), bytes[index] != Byte.slash,
                  bytes[index] != Byte.greaterThan, bytes[index] != Byte.equals {
                index += 1
            }
            let nameEnd = index
            while index < count, Byte.isWhitespace(bytes[index]) { index += 1 }
            var value: Range<Int>?
            if index < count, bytes[index] == Byte.equals {
                index += 1
                while index < count, Byte.isWhitespace(bytes[index]) { index += 1 }
                guard index < count else { return nil }
                let quote = bytes[index]
                if quote == Byte.doubleQuote || quote == Byte.singleQuote {
                    let valueStart = index + 1
                    guard let close = find(bytes, [quote], from: valueStart) else { return nil }
                    value = valueStart..<close
                    index = close + 1
                } else {
                    let valueStart = index
                    while index < count, !Byte.isWhitespace(bytes[index]), bytes[index] != Byte.greaterThan { index += 1 }
                    value = valueStart..<index
                }
            }
            if collecting {
                attributes.append(HTMLAttribute(
                    name: lowercased(bytes, nameStart..<nameEnd),
                    value: value.map { HTMLText.decodeEntities(UnsafeBufferPointer(rebasing: bytes[$0])) }))
            }
        }
    }

    /// A start tag's attributes. Rescanning from the same place reaches the same `>` as before.
    static func attributes(of token: HTMLToken, in bytes: UnsafeBufferPointer<UInt8>) -> [HTMLAttribute] {
        guard token.kind == .startTag, !token.attributeRange.isEmpty else { return [] }
        var attributes: [HTMLAttribute] = []
        scanAttributes(bytes, from: token.attributeRange.lowerBound, collecting: true, into: &attributes)
        return attributes
    }

    /// Where `</name` (any case) followed by whitespace, `/` or `>` starts a complete end tag.
    private static func rawTextEnd(_ bytes: UnsafeBufferPointer<UInt8>, name: String, from start: Int) -> Int? {
        let nameBytes = Array(name.utf8)
        var index = start
        while let candidate = find(bytes, [Byte.lessThan, Byte.slash], from: index) {
            let nameStart = candidate + 2
            let nameEnd = nameStart + nameBytes.count
            if nameEnd <= bytes.count,
               zip(bytes[nameStart..<nameEnd], nameBytes).allSatisfy({ Byte.lowercase($0) == $1 }),
               let tag = markup(bytes, at: candidate), tag.kind == .endTag, tag.name == name {
                return candidate
            }
            index = candidate + 1
        }
        return nil
    }

    private static func find(_ bytes: UnsafeBufferPointer<UInt8>, _ needle: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, needle.count <= bytes.count else { return nil }
        var index = start
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first {
                var matched = true
                for offset in 1..<needle.count where bytes[index + offset] != needle[offset] {
                    matched = false
                    break
                }
                if matched { return index }
            }
            index += 1
        }
        return nil
    }

    private static func lowercased(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> String {
        String(unsafeUninitializedCapacity: range.count) { buffer in
            for (offset, byte) in bytes[range].enumerated() { buffer[offset] = Byte.lowercase(byte) }
            return range.count
        }
    }
}

/// The ASCII bytes the tokenizer cares about.
enum Byte {
    static let lessThan = UInt8(ascii: "<")
    static let greaterThan = UInt8(ascii: ">")
    static let slash = UInt8(ascii: "/")
    static let exclamation = UInt8(ascii: "!")
    static let question = UInt8(ascii: "?")
    static let dash = UInt8(ascii: "-")
    static let equals = UInt8(ascii: "=")
    static let doubleQuote = UInt8(ascii: "\"")
    static let singleQuote = UInt8(ascii: "'")
    static let ampersand = UInt8(ascii: "&")
    static let newline = UInt8(ascii: "\n")
    static let commentEnd: [UInt8] = Array("-->".utf8)

    /// HTML's ASCII whitespace: space, tab, LF, FF, CR.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    static func isNameCharacter(_ byte: UInt8) -> Bool {
        isLetter(byte) || isDigit(byte) || byte == dash || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ".")
    }

    static func lowercase(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
    }
}
