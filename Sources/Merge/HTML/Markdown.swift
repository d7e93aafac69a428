extension HTMLBlocks {
    /// The blocks as CommonMark (https://spec.commonmark.org), for `notesctl export --markdown`:
    /// headings, paragraphs with bold, italic, strikethrough, links, images and inline code,
    /// nested lists with `- [ ]`/`- [x]` for checklist items, fenced code blocks, quotes and
    /// rules. Opaque blocks (tables, unknown HTML) are written as raw HTML, which Markdown allows.
    /// Empty paragraphs are left out: Markdown has no way to say them.
    public static func markdown(_ blocks: [Block]) -> String {
        markdown(blocks, quoteDepth: 0, plainer: nil)
    }

    /// Says whether two renderings of one block's inline content (`plainer`, with only the
    /// backslashes a reader is likely to need, and `escaped`, with every one that can matter)
    /// read back the same; the writer then uses the plainer one. Markup answers it with cmark-gfm.
    public typealias ReadsTheSame = (_ plainer: String, _ escaped: String) -> Bool

    /// `markdown(blocks)` with plainer text wherever `readsTheSame` confirms it means the same
    /// (`milk [x] a_b` rather than `milk \[x\] a\_b`), and for each block the line (1-based,
    /// as cmark-gfm counts) its Markdown starts on, `nil` for a block with nothing to write:
    /// what an edit made in Markdown is compared against, block by block.
    public static func markdownWithLines(_ blocks: [Block], readsTheSame: ReadsTheSame? = nil) -> (text: String, startLines: [Int?]) {
        var writer = MarkdownWriter(quoteDepth: 0, plainer: readsTheSame)
        for block in blocks { writer.add(block) }
        return (writer.output.isEmpty ? "" : writer.output + "\n", writer.startLines)
    }

    fileprivate static func markdown(_ blocks: [Block], quoteDepth: Int, plainer: ReadsTheSame?) -> String {
        var writer = MarkdownWriter(quoteDepth: quoteDepth, plainer: plainer)
        for block in blocks { writer.add(block) }
        return writer.output.isEmpty ? "" : writer.output + "\n"
    }
}

private struct MarkdownWriter {
    /// How many quotes this text sits in. Each level splits its quote's content again, so past
    /// `maximumQuoteNesting` (deeper than email replies go) a quote is written as raw HTML.
    let quoteDepth: Int
    /// When set, inline text is written with fewer backslashes where this confirms it reads the same.
    let plainer: HTMLBlocks.ReadsTheSame?
    private(set) var output = ""
    /// Per block added: the line its text starts on, or nil when nothing was written for it.
    private(set) var startLines: [Int?] = []
    /// Lines in `output` so far (1 + its newlines).
    private var lineCount = 1
    static let maximumQuoteNesting = 8

    init(quoteDepth: Int, plainer: HTMLBlocks.ReadsTheSame?) {
        self.quoteDepth = quoteDepth
        self.plainer = plainer
    }

    /// A block's inline content as Markdown: plainer when `plainer` confirms it, read after
    /// `prefix` (the item's marker and checkbox, the heading's `#`s) as it will stand.
    func inline(_ html: String, after prefix: String = "") -> String {
        let escaped = MarkdownInline.render(html, plain: false)
        guard let plainer else { return escaped }
        let plain = MarkdownInline.render(html, plain: true)
        return plain == escaped || !plainer(prefix + plain, prefix + escaped) ? escaped : plain
    }

    /// The containers of the last list item written, if the last block was one.
    private var lastListContainers: [ListContainer]?
    /// Per depth of the current list nesting: the next number for ordered items.
    private var counters: [Int] = []
    /// Per depth: the column where the last item's content starts (nested items indent to it).
    private var contentColumns: [Int] = []
    /// Per depth: whether the list open there uses the other marker (`*` or `)`).
    private var alternates: [Bool] = []

    mutating func add(_ block: Block) {
        guard case .listItem(let containers) = block.kind else {
            guard let text = render(block) else {
                startLines.append(nil)
                return
            }
            lastListContainers = nil
            counters = []
            contentColumns = []
            alternates = []
            separate(tight: false)
            startLines.append(lineCount)
            emit(text)
            return
        }
        let depth = containers.count
        let continuing = lastListContainers.map { Array($0.prefix(depth)) == containers } ?? false
        // A list that starts right after a sibling list of the same kind (same parent, other
        // attributes or start) takes the other marker (`*`, `)`): with the same one, Markdown
        // would read both as one list.
        let previous = lastListContainers ?? []
        var shared = 0
        while shared < min(depth, previous.count), previous[shared] == containers[shared] { shared += 1 }
        var newAlternates = Array(alternates.prefix(shared))
        for level in shared..<depth {
            let sibling = level < previous.count && level == shared && previous[level].ordered == containers[level].ordered
            newAlternates.append(sibling ? !(level < alternates.count && alternates[level]) : false)
        }
        alternates = newAlternates
        separate(tight: lastListContainers?.first == containers.first)
        if !continuing || counters.count < depth {
            counters = Array(counters.prefix(depth - 1))
            while counters.count < depth {
                let list = containers[counters.count]
                counters.append(list.attributes.value(of: "start").flatMap { $0 }.flatMap { Int($0) } ?? 1)
            }
        }
        counters = Array(counters.prefix(depth))
        contentColumns = Array(contentColumns.prefix(depth - 1))
        // Nested items indent to their parent's content; levels with no parent item add two spaces.
        let indent = (contentColumns.last ?? 0) + 2 * (depth - 1 - contentColumns.count)
        let indentation = String(repeating: " ", count: indent)
        let ordered = block.isOrderedListItem == true
        let alternate = alternates[depth - 1]
        let marker = ordered ? "\(counters[depth - 1])" + (alternate ? ")" : ".") : (alternate ? "*" : "-")
        if ordered { counters[depth - 1] += 1 }
        contentColumns.append(indentation.count + marker.count + 1)
        let checkbox = block.checked.map { $0 ? "[x] " : "[ ] " } ?? ""
        let continuation = "\n" + String(repeating: " ", count: indentation.count + marker.count + 1)
        let text = inline(block.content, after: marker + " " + checkbox).replacing("\n", with: continuation)
        startLines.append(lineCount)
        emit(indentation + marker + " " + checkbox + text)
        lastListContainers = containers
    }

    private mutating func separate(tight: Bool) {
        guard !output.isEmpty else { return }
        emit(tight ? "\n" : "\n\n")
    }

    private mutating func emit(_ text: String) {
        output += text
        lineCount += text.utf8.count(where: { $0 == 0x0A })
    }

    /// A block other than a list item, or nil for one with nothing to show.
    func render(_ block: Block) -> String? {
        switch block.kind {
        case .paragraph, .division:
            let text = inline(block.content)
            return text.isEmpty ? nil : text
        case .heading(let level):
            var text = inline(block.content, after: String(repeating: "#", count: level) + " ").replacing("\\\n", with: " ")
            // `# a #` would end with a closing sequence, which Markdown drops: escape it.
            if text.hasSuffix("#"), let last = text.lastIndex(where: { $0 != "#" }), text[last] == " " {
                text.insert("\\", at: text.index(after: last))
            }
            return String(repeating: "#", count: level) + (text.isEmpty ? "" : " " + text)
        case .rule:
            return "---"
        case .code:
            return Self.codeFence(block)
        case .quote:
            guard quoteDepth < Self.maximumQuoteNesting else {
                var html = ""
                HTMLBlocks.appendHTML(of: block, to: &html)
                return html
            }
            let inner: String
            let children = HTMLBlocks.split(block.content)
            if children.allSatisfy({ $0.kind == .opaque && !Self.startsWithBlockElement($0.content) }) {
                inner = inline(block.content)
            } else {
                inner = HTMLBlocks.markdown(children, quoteDepth: quoteDepth + 1, plainer: plainer).trimmingSuffix(while: { $0 == "\n" })
            }
            return inner.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.isEmpty ? ">" : "> " + $0 }
                .joined(separator: "\n")
        case .opaque:
            return block.content
        case .listItem:
            preconditionFailure("list items are written by MarkdownWriter.add")
        }
    }

    /// Whether `html` opens with a block-level element (a table, not stray inline text).
    private static func startsWithBlockElement(_ html: String) -> Bool {
        guard html.hasPrefix("<") else { return false }
        let name = html.dropFirst().prefix(while: { $0.isLetter || $0.isNumber }).lowercased()
        return HTMLNames.blockLevel.contains(name)
    }

    private static func codeFence(_ block: Block) -> String {
        var code = HTMLText.plainText(of: block.content)
        // HTML drops a newline right after `<pre>`; Markdown's fence already ends the line.
        if block.content.hasPrefix("\n") { code.removeFirst() }
        // cmark-gfm ends every code block's text with one newline: the fence's line end says it.
        let endsWithNewline = code.hasSuffix("\n")
        if endsWithNewline { code.removeLast() }
        var longestRun = 0, run = 0
        for character in code {
            run = character == "`" ? run + 1 : 0
            longestRun = max(longestRun, run)
        }
        let fence = String(repeating: "`", count: max(3, longestRun + 1))
        return fence + language(of: block) + "\n" + code + (code.isEmpty && !endsWithNewline ? "" : "\n") + fence
    }

    /// `language-swift` / `lang-swift` in a class of the `<pre>` or of a `<code>` in it.
    private static func language(of block: Block) -> String {
        var classes: [String] = []
        if case .some(.some(let value)) = block.attributes.value(of: "class") { classes.append(value) }
        var content = block.content
        content.withUTF8 { bytes in
            for token in HTMLTokenizer.tokenize(bytes) where token.kind == .startTag && token.name == "code" {
                if case .some(.some(let value)) = HTMLTokenizer.attributes(of: token, in: bytes).value(of: "class") {
                    classes.append(value)
                }
            }
        }
        for word in classes.flatMap({ $0.split(separator: " ") }) {
            for prefix in ["language-", "lang-"] where word.hasPrefix(prefix) {
                let name = word.dropFirst(prefix.count)
                if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "+-#_.".contains($0) }) {
                    return String(name)
                }
            }
        }
        return ""
    }
}

/// Inline HTML (a block's content) as Markdown text on one or more lines.
private enum MarkdownInline {
    /// `plain`: only the backslashes a reader likely needs (the caller checks the result).
    static func render(_ html: String, plain: Bool) -> String {
        var html = html
        return html.withUTF8 { bytes in
            var renderer = Renderer(bytes: bytes, plain: plain)
            renderer.run()
            return renderer.finish()
        }
    }

    private struct Renderer {
        let bytes: UnsafeBufferPointer<UInt8>
        var out = ""
        /// Emphasis markers opened but not yet written: they are written just before the next
        /// text, so `<b> x</b>` gives ` **x**`, and dropped if no text comes.
        var pendingOpen = ""
        /// The markers open, innermost last, each with whether it was written.
        var openMarkers: [(marker: String, written: Bool)] = []
        var links: [String?] = []
        var pendingBreak = false
        var codeDepth = 0
        var codeText = ""

        let plain: Bool

        init(bytes: UnsafeBufferPointer<UInt8>, plain: Bool) {
            self.bytes = bytes
            self.plain = plain
        }

        mutating func run() {
            for token in HTMLTokenizer.tokenize(bytes) {
                let name = token.name
                switch token.kind {
                case .text:
                    let text = HTMLText.decodeEntities(UnsafeBufferPointer(rebasing: bytes[token.range]))
                    if codeDepth > 0 { codeText += text } else { appendText(text) }
                case .startTag:
                    start(name, HTMLTokenizer.attributes(of: token, in: bytes))
                case .endTag:
                    end(name)
                case .comment, .rawText:
                    continue
                }
            }
        }

        mutating func finish() -> String {
            while !openMarkers.isEmpty { end(marker: openMarkers.last!.marker) }
            var lines = out.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                escapeLineStart(String(line.drop(while: { $0 == " " })))
            }
            while let last = lines.last, last.isEmpty || last == "\\" { lines.removeLast() }
            return lines.joined(separator: "\n").trimmingSuffix(while: { $0 == " " })
        }

        private mutating func start(_ name: String, _ attributes: [HTMLAttribute]) {
            if codeDepth > 0 {
                if name == "code" { codeDepth += 1 } else if name == "br" { codeText += " " }
                return
            }
            switch name {
            case "b", "strong": open("**")
            case "i", "em": open("*")
            case "s", "del", "strike": open("~~")
            case "code", "kbd", "samp", "tt":
                codeDepth = 1
                codeText = ""
            case "a":
                let href = attributes.value(of: "href").flatMap { $0 }
                links.append(href)
                if href != nil { appendMarkup("[") }
            case "img":
                let source = attributes.value(of: "src").flatMap { $0 } ?? ""
                let alternative = attributes.value(of: "alt").flatMap { $0 } ?? ""
                appendMarkup("![\(escape(alternative))](\(destination(source)))")
            case "br":
                hardBreak()
            default:
                if HTMLNames.blockLevel.contains(name) { pendingBreak = true }
            }
        }

        private mutating func end(_ name: String) {
            if codeDepth > 0 {
                if ["code", "kbd", "samp", "tt"].contains(name) {
                    codeDepth -= 1
                    if codeDepth == 0 { appendCodeSpan() }
                }
                return
            }
            switch name {
            case "b", "strong": end(marker: "**")
            case "i", "em": end(marker: "*")
            case "s", "del", "strike": end(marker: "~~")
            case "a":
                if let href = links.popLast(), let href { appendMarkup("](\(destination(href)))") }
            default:
                if HTMLNames.blockLevel.contains(name) { pendingBreak = true }
            }
        }

        private mutating func open(_ marker: String) {
            pendingOpen += marker
            openMarkers.append((marker, false))
        }

        private mutating func end(marker: String) {
            guard let index = openMarkers.lastIndex(where: { $0.marker == marker }) else { return }
            let closing = openMarkers[index...].reversed()
            openMarkers.removeSubrange(index...)
            for entry in closing {
                if !entry.written {
                    if pendingOpen.hasSuffix(entry.marker) { pendingOpen.removeLast(entry.marker.count) }
                    continue
                }
                // A closing marker must follow non-space text.
                var trailing = ""
                while out.last == " " {
                    out.removeLast()
                    trailing += " "
                }
                out += entry.marker + trailing
            }
        }

        private mutating func appendText(_ text: String) {
            var collapsed = ""
            var lastWasSpace = out.isEmpty || out.last == " " || out.last == "\n"
            for character in text {
                if character == " " || character == "\t" || character == "\n" || character == "\r" || character == "\u{0C}" {
                    if !lastWasSpace { collapsed.append(" ") }
                    lastWasSpace = true
                } else {
                    collapsed.append(character)
                    lastWasSpace = false
                }
            }
            guard !collapsed.isEmpty else { return }
            let leadingSpace = collapsed.hasPrefix(" ")
            let body = leadingSpace ? String(collapsed.dropFirst()) : collapsed
            if leadingSpace { out += " " }
            if body.isEmpty { return }
            appendMarkup(escape(body))
        }

        /// Writes markup or escaped text, first any pending break and opening markers.
        private mutating func appendMarkup(_ markup: String) {
            if pendingBreak {
                if !out.isEmpty { hardBreak() }
                pendingBreak = false
            }
            if !pendingOpen.isEmpty {
                out += pendingOpen
                pendingOpen = ""
                for index in openMarkers.indices { openMarkers[index].written = true }
            }
            out += markup
        }

        private mutating func hardBreak() {
            while out.last == " " { out.removeLast() }
            if out.isEmpty || out.hasSuffix("\\\n") { return }
            out += "\\\n"
            pendingBreak = false
        }

        private mutating func appendCodeSpan() {
            let code = codeText.replacing("\n", with: " ")
            guard !code.isEmpty else { return }
            var longestRun = 0, run = 0
            for character in code {
                run = character == "`" ? run + 1 : 0
                longestRun = max(longestRun, run)
            }
            let fence = String(repeating: "`", count: longestRun + 1)
            let padding = code.hasPrefix("`") || code.hasSuffix("`") ? " " : ""
            appendMarkup(fence + padding + code + padding + fence)
        }

        /// Backslash-escapes what Markdown would read as syntax inside a line.
        private func escape(_ text: String) -> String {
            if plain { return escapePlainly(text) }
            var out = ""
            var characters = text.makeIterator()
            var next = characters.next()
            while let character = next {
                next = characters.next()
                switch character {
                case "\\", "`", "*", "_", "[", "]", "<", ">", "~", "|":
                    out += "\\" + String(character)
                case "&" where next.map { $0.isLetter || $0 == "#" } ?? false:
                    out += "\\&"
                default:
                    out.append(character)
                }
            }
            return out
        }

        /// The backslashes text most likely needs, judged from its neighbours in this run of
        /// text (the writer keeps the result only when cmark-gfm reads it as `escape` would).
        private func escapePlainly(_ text: String) -> String {
            let characters = Array(text)
            var out = ""
            for (index, character) in characters.enumerated() {
                let previous = index > 0 ? characters[index - 1] : nil
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                let spaced = { (c: Character?) in c.map { $0 == " " } ?? false }
                let word = { (c: Character?) in c.map { $0.isLetter || $0.isNumber } ?? false }
                let needed: Bool = switch character {
                case "\\": next.map { $0.isASCII && $0.isPunctuation || $0.isASCII && $0.isSymbol } ?? true
                case "`", "~": true
                case "*": !(spaced(previous) && spaced(next))
                case "_": !(word(previous) && word(next)) && !(spaced(previous) && spaced(next))
                case "<": next.map { $0.isLetter || "/!?".contains($0) } ?? true
                case "[": out.isEmpty && self.out.allSatisfy({ $0 == " " }) || characters[index...].contains("]")
                    && (characters[index...].firstIndex(of: "]").map { characters.index(after: $0) < characters.count
                        && "([:".contains(characters[characters.index(after: $0)]) } ?? false)
                case "&": next.map { $0.isLetter || $0 == "#" } ?? false
                default: false
                }
                if needed { out.append("\\") }
                out.append(character)
            }
            return out
        }

        /// A link destination, in `<…>` when it holds spaces or parentheses.
        private func destination(_ url: String) -> String {
            guard url.contains(where: { $0 == " " || $0 == "(" || $0 == ")" }) else { return url }
            return "<" + url.replacing("<", with: "%3C").replacing(">", with: "%3E") + ">"
        }

        /// Escapes a line start that Markdown would read as a heading, quote, list item or rule.
        private func escapeLineStart(_ line: String) -> String {
            guard let first = line.first else { return line }
            if plain {
                if first == ">" { return "\\" + line }
                if first == "#" {
                    let rest = line.drop(while: { $0 == "#" })
                    if line.count - rest.count <= 6, rest.isEmpty || rest.first == " " { return "\\" + line }
                    return line
                }
                if "+-".contains(first) {
                    let rest = line.dropFirst()
                    if rest.isEmpty || rest.first == " " || rest.allSatisfy({ $0 == first || $0 == " " }) { return "\\" + line }
                    return line
                }
                if first == "=", line.allSatisfy({ $0 == "=" || $0 == " " }) { return "\\" + line }
                if first == "=" { return line }
            } else if "#+-=".contains(first) {
                return "\\" + line
            }
            let digits = line.prefix(while: { $0.isASCII && $0.isNumber })
            if !digits.isEmpty, digits.count <= 9, let after = line.dropFirst(digits.count).first, after == "." || after == ")" {
                return digits + "\\" + line.dropFirst(digits.count)
            }
            return line
        }
    }
}

extension String {
    func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var result = self
        while let last = result.last, predicate(last) { result.removeLast() }
        return result
    }
}
