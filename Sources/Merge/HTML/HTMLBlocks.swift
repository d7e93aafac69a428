/// A note body's HTML as a list of blocks, and back. The block model and its rules are in
/// docs/merge.md; in short:
///
/// - `<p>`, `<h1>`–`<h6>`, `<blockquote>`, `<pre>`, `<hr>`, and a `<div>` holding only inline
///   content are one block each, attributes kept, inner HTML kept verbatim.
/// - Every `<li>` is its own block that remembers its containing `<ul>`/`<ol>`s (and their
///   attributes), so nested lists and checklists split into items and `join` rebuilds them.
/// - `<div>`, `<section>`, `<body>`, … holding blocks are wrappers: their start and end tags
///   become opaque blocks and their children are split.
/// - Everything else — tables, unknown elements, stray text between blocks, tags with no end —
///   is an opaque block holding its HTML verbatim.
///
/// Guarantees (property-tested): no character of text is dropped — the text of the input equals
/// the text of the blocks up to whitespace between blocks — and `split(join(split(h))) == split(h)`.
public enum HTMLBlocks {
    /// The blocks of `html`. Never fails: what it cannot classify, it keeps verbatim.
    public static func split(_ html: String) -> [Block] {
        var html = html
        return html.withUTF8 { bytes in
            var splitter = Splitter(bytes: bytes)
            splitter.splitRange(0..<splitter.tokens.count, depth: 0)
            return splitter.blocks
        }
    }

    /// How deep wrappers and lists are followed. Deeper nesting — never written by an editor,
    /// but possible in imported or hostile HTML — is kept verbatim (wrappers) or continues as a
    /// new top-level list (lists), so splitting never recurses without bound.
    static let maximumNesting = 48

    /// The HTML of `blocks`: consecutive list items share their lists, and an item followed by
    /// deeper items holds their list, so `<ul><li>a<ul><li>b</li></ul></li></ul>` comes back as
    /// it went in. Top-level blocks are separated by a newline.
    public static func join(_ blocks: [Block]) -> String {
        var out = ""
        /// The lists currently open, outermost first, and whether each has an `<li>` still open.
        var open: [(container: ListContainer, itemOpen: Bool)] = []

        func closeLists(downTo depth: Int) {
            while open.count > depth {
                let level = open.removeLast()
                if level.itemOpen { out += "</li>" }
                out += "</\(level.container.tagName)>"
            }
        }

        for block in blocks {
            guard case .listItem(let containers) = block.kind else {
                closeLists(downTo: 0)
                if !out.isEmpty { out += "\n" }
                appendHTML(of: block, to: &out)
                continue
            }
            var shared = 0
            while shared < open.count, shared < containers.count, open[shared].container == containers[shared] {
                shared += 1
            }
            closeLists(downTo: shared)
            if shared == containers.count {
                // A sibling of the item open at this depth.
                if open[shared - 1].itemOpen { out += "</li>" }
            } else {
                if open.isEmpty, !out.isEmpty { out += "\n" }
                for container in containers[shared...] {
                    out += "<\(container.tagName)"
                    appendAttributes(container.attributes, to: &out)
                    out += ">"
                    open.append((container, false))
                }
            }
            out += "<li"
            appendAttributes(block.attributes, to: &out)
            out += ">"
            out += block.content
            open[open.count - 1].itemOpen = true
        }
        closeLists(downTo: 0)
        return out
    }

    /// The plain text a reader sees in `html` (see `Block.text`).
    public static func text(_ html: String) -> String {
        HTMLText.plainText(of: html)
    }

    static func appendHTML(of block: Block, to out: inout String) {
        let tag: String
        switch block.kind {
        case .opaque:
            out += block.content
            return
        case .rule:
            out += "<hr"
            appendAttributes(block.attributes, to: &out)
            out += ">"
            return
        case .listItem:
            out += join([block])
            return
        case .paragraph: tag = "p"
        case .division: tag = "div"
        case .heading(let level): tag = "h\(level)"
        case .quote: tag = "blockquote"
        case .code: tag = "pre"
        }
        out += "<\(tag)"
        appendAttributes(block.attributes, to: &out)
        out += ">\(block.content)</\(tag)>"
    }

    static func appendAttributes(_ attributes: [HTMLAttribute], to out: inout String) {
        for attribute in attributes {
            out += " \(attribute.name)"
            if let value = attribute.value { out += "=\"\(HTMLText.escapeAttribute(value))\"" }
        }
    }
}

/// One pass over the tokens of one HTML string, appending blocks.
private struct Splitter {
    let bytes: UnsafeBufferPointer<UInt8>
    let tokens: [HTMLToken]
    /// For a start tag of a block-level element, the index of its end tag, found by pairing start
    /// and end tags of the same name like brackets; -1 when it has none. Lists and items are not
    /// paired: their ends are implied (`join` adds `</li>` and `</ul>` that the source may lack,
    /// which must not change any pairing).
    let matchingEnd: [Int]
    var blocks: [Block] = []

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        tokens = HTMLTokenizer.tokenize(bytes)
        var matchingEnd = [Int](repeating: -1, count: tokens.count)
        var openByName: [String: [Int]] = [:]
        for (index, token) in tokens.enumerated()
        where HTMLNames.blockLevel.contains(token.name) && !HTMLNames.void.contains(token.name)
            && !HTMLNames.listStructure.contains(token.name) {
            if token.kind == .startTag {
                openByName[token.name, default: []].append(index)
            } else if token.kind == .endTag, let start = openByName[token.name]?.popLast() {
                matchingEnd[start] = index
            }
        }
        self.matchingEnd = matchingEnd
    }

    /// Splits `tokens[range]` like the top level of a document, `depth` wrappers deep.
    mutating func splitRange(_ range: Range<Int>, depth: Int) {
        var index = range.lowerBound
        while index < range.upperBound {
            let token = tokens[index]
            switch token.kind {
            case .text where isWhitespace(token):
                index += 1
            case .startTag where HTMLNames.blockLevel.contains(token.name):
                index = splitElement(at: index, end: range.upperBound, depth: depth)
            case .endTag where HTMLNames.blockLevel.contains(token.name):
                appendOpaque(index..<index + 1)
                index += 1
            case .text, .startTag, .endTag, .comment, .rawText:
                index = splitStrayRun(from: index, end: range.upperBound)
            }
        }
    }

    /// Text, inline elements and comments between blocks: one opaque block up to the next
    /// block-level tag.
    private mutating func splitStrayRun(from start: Int, end: Int) -> Int {
        var index = start
        while index < end, !isBlockBoundary(tokens[index]) { index += 1 }
        appendOpaque(start..<index)
        return index
    }

    /// The block-level element starting at `tokens[start]`; returns the index after it.
    private mutating func splitElement(at start: Int, end: Int, depth: Int) -> Int {
        let token = tokens[start]
        let attributes = HTMLTokenizer.attributes(of: token, in: bytes)
        guard attributes.allSatisfy({ $0.problem == nil }) else {
            // An attribute `join` could not write back as it was: keep the tag verbatim.
            appendOpaque(start..<start + 1)
            return start + 1
        }
        let name = token.name
        let close = matchingEnd(of: start, before: end)
        if name == "p" { return splitParagraph(at: start, attributes: attributes, end: end) }
        if name == "hr" {
            append(.rule, attributes: attributes, content: "")
            return start + 1
        }
        if name == "ul" || name == "ol" { return splitList(at: start, enclosing: [], end: end).next }
        guard let close else {
            // No end tag: the start tag alone is kept verbatim, and what follows is split as if
            // it were not there (so `join` writes the same bytes back).
            appendOpaque(start..<start + 1)
            return start + 1
        }
        let inner = start + 1..<close
        if let level = HTMLNames.headingLevels[name] {
            guard !containsBlockBoundary(inner) else {
                appendOpaque(start..<start + 1)
                return start + 1
            }
            append(.heading(level: level), attributes: attributes, content: canonicalHTML(inner, trim: true))
        } else if name == "blockquote" {
            append(.quote, attributes: attributes, content: canonicalHTML(inner, trim: true))
        } else if name == "pre" {
            append(.code, attributes: attributes, content: canonicalHTML(inner, trim: false))
        } else if name == "div", !containsBlockBoundary(inner) {
            append(.division, attributes: attributes, content: canonicalHTML(inner, trim: true))
        } else if HTMLNames.wrappers.contains(name), depth < HTMLBlocks.maximumNesting {
            appendOpaque(start..<start + 1)
            splitRange(inner, depth: depth + 1)
            appendOpaque(close..<close + 1)
        } else {
            appendOpaque(start..<close + 1)
        }
        return close + 1
    }

    /// A `<p>` ends at `</p>`, before any other block-level tag, or at the end (HTML's implied end).
    private mutating func splitParagraph(at start: Int, attributes: [HTMLAttribute], end: Int) -> Int {
        var index = start + 1
        while index < end {
            let token = tokens[index]
            if token.kind == .endTag, token.name == "p" {
                append(.paragraph, attributes: attributes, content: canonicalHTML(start + 1..<index, trim: true))
                return index + 1
            }
            if isBlockBoundary(token) { break }
            index += 1
        }
        append(.paragraph, attributes: attributes, content: canonicalHTML(start + 1..<index, trim: true))
        return index
    }

    /// The list starting at `tokens[start]` (a `<ul>` or `<ol>`) inside the lists `enclosing`.
    /// Anything in a list that is not an item, a nested list or the list's end tag ends every
    /// open list (`interrupted`), and is split as top-level content. A list that ends up holding
    /// no item at all cannot be rebuilt by `join` (which writes lists around items), so it is
    /// kept verbatim as one opaque block instead.
    private mutating func splitList(
        at start: Int, enclosing: [ListContainer], end: Int
    ) -> (next: Int, interrupted: Bool) {
        let firstBlock = blocks.count
        let result = splitListItems(at: start, enclosing: enclosing, end: end)
        if !blocks[firstBlock...].contains(where: { $0.depth > 0 }) {
            blocks.removeSubrange(firstBlock...)
            appendOpaque(start..<result.next)
        }
        return result
    }

    private mutating func splitListItems(
        at start: Int, enclosing: [ListContainer], end: Int
    ) -> (next: Int, interrupted: Bool) {
        let token = tokens[start]
        let containers = enclosing + [ListContainer(
            ordered: token.name == "ol", attributes: HTMLTokenizer.attributes(of: token, in: bytes))]
        var index = start + 1
        while index < end {
            let token = tokens[index]
            switch token.kind {
            case .text where isWhitespace(token):
                index += 1
            case .startTag where token.name == "li" && hasWritableAttributes(token):
                let item = splitItem(at: index, containers: containers, end: end)
                if item.interrupted { return item }
                index = item.next
            case .startTag where (token.name == "ul" || token.name == "ol") && hasWritableAttributes(token)
                && containers.count < HTMLBlocks.maximumNesting:
                let nested = splitList(at: index, enclosing: containers, end: end)
                if nested.interrupted { return nested }
                index = nested.next
            case .endTag where token.name == "ul" || token.name == "ol":
                return (index + 1, false)
            case .text, .startTag, .endTag, .comment, .rawText:
                return (index, true)
            }
        }
        return (end, false)
    }

    /// The item starting at `tokens[start]` (an `<li>`). It ends at `</li>`, the next `<li>`, the
    /// list's end tag, or the end. A list nested in it is split into items of its own; content
    /// after such a list becomes a further item at this depth (without the `<li>`'s attributes).
    private mutating func splitItem(
        at start: Int, containers: [ListContainer], end: Int
    ) -> (next: Int, interrupted: Bool) {
        var attributes: [HTMLAttribute]? = HTMLTokenizer.attributes(of: tokens[start], in: bytes)
        var contentStart = start + 1
        var index = contentStart

        func flush(_ splitter: inout Splitter, upTo contentEnd: Int) {
            let content = splitter.canonicalHTML(contentStart..<contentEnd, trim: true)
            // The `<li>` itself is always kept (an empty checklist line is still a line);
            // text after a nested list only when there is some.
            if let itemAttributes = attributes {
                splitter.append(.listItem(containers: containers), attributes: itemAttributes, content: content)
                attributes = nil
            } else if !content.isEmpty {
                splitter.append(.listItem(containers: containers), attributes: [], content: content)
            }
        }

        while index < end {
            let token = tokens[index]
            let isList = (token.name == "ul" || token.name == "ol")
            if token.kind == .endTag, token.name == "li" {
                flush(&self, upTo: index)
                return (index + 1, false)
            }
            if token.kind == .startTag, token.name == "li" || (isList && !hasWritableAttributes(token)) {
                flush(&self, upTo: index)
                return (index, false)
            }
            if token.kind == .startTag, isList, containers.count >= HTMLBlocks.maximumNesting {
                flush(&self, upTo: index)
                return (index, true)
            }
            if token.kind == .endTag, isList {
                flush(&self, upTo: index)
                return (index, false)
            }
            if token.kind == .startTag, isList {
                flush(&self, upTo: index)
                let nested = splitList(at: index, enclosing: containers, end: end)
                if nested.interrupted { return nested }
                index = nested.next
                contentStart = index
                continue
            }
            if token.kind == .startTag, let close = matchingEnd(of: index, before: end) {
                // A block inside the item (`<li><p>…</p></li>`, TipTap's `<div>`): part of the
                // item's content, including any list inside it.
                index = close + 1
                continue
            }
            index += 1
        }
        flush(&self, upTo: end)
        return (end, false)
    }

    // MARK: Helpers

    private func matchingEnd(of start: Int, before end: Int) -> Int? {
        let close = matchingEnd[start]
        return close >= 0 && close < end ? close : nil
    }

    private func isWhitespace(_ token: HTMLToken) -> Bool {
        token.kind == .text && bytes[token.range].allSatisfy(Byte.isWhitespace)
    }

    private func isBlockBoundary(_ token: HTMLToken) -> Bool {
        (token.kind == .startTag || token.kind == .endTag) && HTMLNames.blockLevel.contains(token.name)
    }

    private func containsBlockBoundary(_ range: Range<Int>) -> Bool {
        tokens[range].contains(where: isBlockBoundary)
    }

    private func hasWritableAttributes(_ token: HTMLToken) -> Bool {
        HTMLTokenizer.attributes(of: token, in: bytes).allSatisfy { $0.problem == nil }
    }

    private mutating func append(_ kind: Block.Kind, attributes: [HTMLAttribute], content: String) {
        blocks.append(Block(unchecked: kind, attributes: attributes, content: content))
    }

    private mutating func appendOpaque(_ range: Range<Int>) {
        let html = canonicalHTML(range, trim: true)
        if !html.isEmpty { blocks.append(Block(unchecked: .opaque, attributes: [], content: html)) }
    }

    /// The source of `tokens[range]` with every `<` in text written as `&lt;` (so no stray `<`
    /// can turn into a tag next to other HTML), optionally without edge whitespace.
    func canonicalHTML(_ range: Range<Int>, trim: Bool) -> String {
        guard !range.isEmpty else { return "" }
        var out: [UInt8] = []
        out.reserveCapacity(tokens[range.upperBound - 1].range.upperBound - tokens[range.lowerBound].range.lowerBound)
        for token in tokens[range] {
            if token.kind == .text {
                for byte in bytes[token.range] {
                    if byte == Byte.lessThan { out.append(contentsOf: [0x26, 0x6C, 0x74, 0x3B]) } else { out.append(byte) }
                }
            } else {
                out.append(contentsOf: bytes[token.range])
            }
        }
        var lower = 0
        var upper = out.count
        if trim {
            while lower < upper, Byte.isWhitespace(out[lower]) { lower += 1 }
            while upper > lower, Byte.isWhitespace(out[upper - 1]) { upper -= 1 }
        }
        return String(decoding: out[lower..<upper], as: UTF8.self)
    }
}
