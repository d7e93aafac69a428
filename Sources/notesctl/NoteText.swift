/// Pure conversions between plain text, HTML documents and note bodies, for `new`, `edit`,
/// `export` and `import`. Byte-level scanning of ASCII tag names keeps indexes exact for
/// any Unicode content.
enum NoteText {
    /// `&`, `<`, `>` and `"` escaped, so the text reads the same as HTML content or attribute.
    static func escapeHTML(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }

    /// Plain text as HTML paragraphs: text separated by blank lines becomes `<p>…</p>` each,
    /// a single line break inside a paragraph becomes `<br>`. The inverse of the daemon's
    /// `text` format, so `show --text | edit --text` changes nothing.
    static func paragraphs(fromPlainText text: String) -> String {
        let lines = normalizedLines(text)
        var paragraphs: [[String]] = [[]]
        for line in lines {
            if line.allSatisfy(\.isWhitespace) {
                if !paragraphs[paragraphs.count - 1].isEmpty { paragraphs.append([]) }
            } else {
                paragraphs[paragraphs.count - 1].append(line)
            }
        }
        return paragraphs.filter { !$0.isEmpty }
            .map { "<p>" + $0.map(escapeHTML).joined(separator: "<br>") + "</p>" }
            .joined(separator: "\n")
    }

    /// The first line with text, trimmed: the title of a plain-text note.
    static func title(fromPlainText text: String) -> String? {
        normalizedLines(text).lazy.map(collapsingWhitespace).first { !$0.isEmpty }
    }

    /// A Markdown file's title: a first non-blank line `# Title` is taken out of the body.
    static func splitMarkdownTitle(_ text: String) -> (title: String?, body: String) {
        var lines = normalizedLines(text)[...]
        while let first = lines.first, first.allSatisfy(\.isWhitespace) { lines.removeFirst() }
        guard let first = lines.first, first.hasPrefix("# ") else { return (nil, text) }
        let title = collapsingWhitespace(String(first.dropFirst(2)))
        return (title.isEmpty ? nil : title, lines.dropFirst().joined(separator: "\n"))
    }

    /// The title an HTML file gives itself: its `<title>`, else its first heading.
    static func title(fromHTML html: String) -> String? {
        let bytes = Array(html.utf8)
        for names in [["title"], ["h1", "h2", "h3", "h4", "h5", "h6"]] {
            if let content = firstElementContent(in: bytes, names: names) {
                let text = textContent(ofHTML: String(decoding: content, as: UTF8.self))
                if !text.isEmpty { return text }
            }
        }
        return nil
    }

    /// The note body of an HTML file: what is inside `<body>` when it is a whole document
    /// (one newline right inside each tag dropped, as `document` writes them), else the file.
    static func bodyFragment(ofHTML html: String) -> String {
        let bytes = Array(html.utf8)
        guard let content = firstElementContent(in: bytes, names: ["body"]) else { return html }
        var slice = content[...]
        if slice.first == UInt8(ascii: "\n") { slice = slice.dropFirst() }
        if slice.last == UInt8(ascii: "\n") { slice = slice.dropLast() }
        return String(decoding: slice, as: UTF8.self)
    }

    /// A standalone HTML document for `export`, read back by `title(fromHTML:)` and
    /// `bodyFragment(ofHTML:)` to the same title and body.
    static func document(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html>
        <head>
        <meta charset="utf-8">
        <title>\(escapeHTML(title))</title>
        </head>
        <body>
        \(body)
        </body>
        </html>

        """
    }

    /// The text of an HTML fragment: tags dropped, entities decoded, white space collapsed.
    static func textContent(ofHTML html: String) -> String {
        var text = ""
        var inTag = false
        for character in html {
            switch character {
            case "<": inTag = true
            case ">" where inTag:
                inTag = false
                text.append(" ")
            default: if !inTag { text.append(character) }
            }
        }
        return collapsingWhitespace(decodeEntities(text))
    }

    /// Decodes the character references people and editors write: the five XML ones,
    /// `&nbsp;`, and numeric ones. Anything else is left as written.
    static func decodeEntities(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = text[...]
        while let ampersand = rest.firstIndex(of: "&") {
            out += rest[..<ampersand]
            rest = rest[ampersand...]
            guard let semicolon = rest.prefix(12).firstIndex(of: ";") else {
                out.append("&")
                rest = rest.dropFirst()
                continue
            }
            let name = rest[rest.index(after: rest.startIndex)..<semicolon]
            if let decoded = decodeEntity(name) {
                out.append(decoded)
                rest = rest[rest.index(after: semicolon)...]
            } else {
                out.append("&")
                rest = rest.dropFirst()
            }
        }
        return out + rest
    }

    private static func decodeEntity(_ name: Substring) -> Character? {
        switch name {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        case "nbsp": return "\u{A0}"
        default:
            guard name.hasPrefix("#") else { return nil }
            let digits = name.dropFirst()
            let value = digits.hasPrefix("x") || digits.hasPrefix("X")
                ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            return value.flatMap(Unicode.Scalar.init).map(Character.init)
        }
    }

    static func collapsingWhitespace(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    private static func normalizedLines(_ text: String) -> [String] {
        text.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// The bytes between the first opening tag named one of `names` (ASCII, any case) and
    /// its closing tag; `nil` when there is no such element.
    private static func firstElementContent(in bytes: [UInt8], names: [String]) -> ArraySlice<UInt8>? {
        var index = 0
        while let open = bytes[index...].firstIndex(of: UInt8(ascii: "<")) {
            index = open + 1
            guard let name = names.first(where: { tagName($0, matches: bytes, at: open + 1) }),
                  let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: ">")) else { continue }
            var search = close + 1
            while let end = bytes[search...].firstIndex(of: UInt8(ascii: "<")) {
                if end + 1 < bytes.count, bytes[end + 1] == UInt8(ascii: "/"), tagName(name, matches: bytes, at: end + 2) {
                    return bytes[(close + 1)..<end]
                }
                search = end + 1
            }
            return nil
        }
        return nil
    }

    /// Whether `bytes` at `offset` hold tag name `name` (ASCII, any case), followed by
    /// white space, `>` or `/`.
    private static func tagName(_ name: String, matches bytes: [UInt8], at offset: Int) -> Bool {
        let expected = Array(name.utf8)
        guard offset + expected.count < bytes.count else { return false }
        for (position, byte) in expected.enumerated() where bytes[offset + position] | 0x20 != byte {
            return false
        }
        let next = bytes[offset + expected.count]
        return next == UInt8(ascii: ">") || next == UInt8(ascii: "/") || next == 0x20 || (0x09...0x0D).contains(next)
    }
}

/// Folder paths as people type them: names separated by `/`, blanks ignored.
enum FolderPath {
    /// The names of `path`, trimmed, empty ones dropped: `" /Work//Projects/"` → `[Work, Projects]`.
    static func components(_ path: String) -> [String] {
        path.split(separator: "/").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Whether `reference` names the root: Uncategorized for notes, the top level for folders.
    static func isRoot(_ reference: String) -> Bool { components(reference).isEmpty }
}

import Foundation
