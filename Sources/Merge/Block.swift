/// One block of a note body: a paragraph, heading, quote, code block, rule, list item, or a piece
/// of HTML kept verbatim. `HTMLBlocks.split` makes them, `HTMLBlocks.join` turns them back into
/// HTML, and the merge diffs bodies block by block (the rules are in docs/merge.md).
///
/// A block is a value: two blocks are equal when their kind, attributes and content are equal.
/// Its `fingerprint` is a deterministic 64-bit hash of `encoded()`, computed once, so comparing
/// blocks that differ costs one integer comparison.
public struct Block: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        /// `<p>`.
        case paragraph
        /// A `<div>` holding only inline content: how contenteditable, Trix and Apple Notes write
        /// paragraphs.
        case division
        /// `<h1>` … `<h6>`.
        case heading(level: Int)
        /// `<blockquote>`; `content` is its inner HTML, whatever blocks it holds.
        case quote
        /// `<pre>` (a code block); `content` is its inner HTML, whitespace exactly as written.
        case code
        /// `<hr>`; no content.
        case rule
        /// One `<li>`, with the lists that contain it, outermost first (its depth is their count).
        /// `content` is the item's own inner HTML; items of lists nested in it are blocks of their own.
        case listItem(containers: [ListContainer])
        /// HTML that is none of the above, or is malformed: `content` is the HTML itself, kept verbatim.
        case opaque
    }

    public let kind: Kind
    /// The attributes of the block's own element (`<p class="…">`, `<li data-checked="true">`), in
    /// source order, names lower-cased, values with entities decoded. Always empty for `.opaque`.
    public let attributes: [HTMLAttribute]
    /// The element's inner HTML (`.opaque`: the whole HTML), with edge whitespace trimmed except in
    /// code blocks, and every `<` that is text written as `&lt;`.
    public let content: String
    /// FNV-1a 64 of `encoded()`: the same on every device, so it may decide order and equality.
    public let fingerprint: UInt64

    /// A block as `HTMLBlocks.split` would produce it. `content` must be HTML that `split` would
    /// put in such a block (to build one from plain text, use `Block.paragraph(_:)`).
    public init(_ kind: Kind, attributes: [HTMLAttribute] = [], content: String = "") {
        if let problem = Block.problem(kind: kind, attributes: attributes, contentIsEmpty: content.isEmpty) {
            preconditionFailure("invalid Block: \(problem)")
        }
        self.init(unchecked: kind, attributes: attributes, content: content)
    }

    /// For the splitter and the decoder, which have already validated their input.
    init(unchecked kind: Kind, attributes: [HTMLAttribute], content: String, fingerprint: UInt64? = nil) {
        self.kind = kind
        self.attributes = attributes
        self.content = content
        if let fingerprint {
            self.fingerprint = fingerprint
        } else {
            var sink = Fingerprint()
            BlockEncoding.write(kind: kind, attributes: attributes, content: content, to: &sink)
            self.fingerprint = sink.value
        }
    }

    /// What makes a block impossible to encode or to join, if anything.
    static func problem(kind: Kind, attributes: [HTMLAttribute], contentIsEmpty: Bool) -> String? {
        var containers: [ListContainer] = []
        if case .listItem(let listed) = kind { containers = listed }
        return problem(
            kind: kind, hasAttributes: !attributes.isEmpty,
            firstAttributeProblem: containers.lazy.flatMap(\.attributes).compactMap(\.problem).first
                ?? attributes.lazy.compactMap(\.problem).first,
            contentIsEmpty: contentIsEmpty)
    }

    /// The same, given the first problem among the attributes in encoding order (the
    /// containing lists', outermost first, then the block's own): the receiver's check finds
    /// it in the encoded bytes without building the attributes.
    static func problem(
        kind: Kind, hasAttributes: Bool, firstAttributeProblem: @autoclosure () -> String?, contentIsEmpty: Bool
    ) -> String? {
        switch kind {
        case .heading(let level) where !(1...6).contains(level):
            return "heading level \(level) is not 1…6"
        case .listItem(let containers) where containers.isEmpty:
            return "a list item needs at least one containing list"
        case .opaque where hasAttributes:
            return "an opaque block has no attributes (its HTML is all in content)"
        case .rule where !contentIsEmpty:
            return "a rule has no content"
        case .paragraph, .division, .heading, .quote, .code, .rule, .opaque, .listItem:
            return firstAttributeProblem()
        }
    }

    /// A paragraph holding `text` as plain text (`&`, `<` and `>` escaped).
    public static func paragraph(_ text: String) -> Block {
        Block(.paragraph, content: HTMLText.escape(text))
    }

    /// How deep in nested lists the block sits: 0 outside lists, 1 in a top-level list.
    public var depth: Int {
        if case .listItem(let containers) = kind { return containers.count }
        return 0
    }

    /// The plain text: tags stripped, entities decoded, `<br>` and block boundaries as line
    /// breaks. For search, `notesctl show --text` and no-lost-text checks.
    public var text: String {
        HTMLText.plainText(of: content)
    }

    public static func == (lhs: Block, rhs: Block) -> Bool {
        lhs.fingerprint == rhs.fingerprint && lhs.kind == rhs.kind && lhs.content == rhs.content
            && lhs.attributes == rhs.attributes
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fingerprint)
    }
}

/// One attribute of an HTML element. `value == nil` is a bare attribute (`<input checked>`).
public struct HTMLAttribute: Hashable, Sendable {
    /// Lower-case, as HTML names are case-insensitive.
    public var name: String
    /// With entities decoded; `join` escapes `&` and `"` again.
    public var value: String?

    public init(name: String, value: String? = nil) {
        self.name = name
        self.value = value
    }

    /// Why `join` could not write this attribute back as one attribute, if it could not.
    var problem: String? { Self.problem(ofName: name.utf8) }

    /// Why a name, given as its UTF-8 bytes, cannot be an attribute's name, if it cannot.
    static func problem(ofName utf8: some Collection<UInt8>) -> String? {
        if utf8.isEmpty { return "an attribute name is empty" }
        if utf8.contains(where: cannotBeInName) {
            return "attribute name \"\(String(decoding: utf8, as: UTF8.self))\" is not lower-case or holds a character that ends a name"
        }
        return nil
    }

    /// White space, `/`, `>`, `=`, quotes and `<` end a name; an upper-case letter would not
    /// survive the tokenizer's lower-casing. (A switch, not a set: every decoded block's
    /// attributes are checked.)
    private static func cannotBeInName(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x20, 0x09, 0x0A, 0x0C, 0x0D, 0x2F, 0x3E, 0x3D, 0x22, 0x27, 0x3C, 0x41...0x5A: true
        default: false
        }
    }
}

/// A `<ul>` or `<ol>` that contains a list item, with its own attributes (e.g. Quill's
/// `<ul data-checked="true">`), so that `join` rebuilds the same lists.
public struct ListContainer: Hashable, Sendable {
    public var ordered: Bool
    public var attributes: [HTMLAttribute]

    public init(ordered: Bool, attributes: [HTMLAttribute] = []) {
        self.ordered = ordered
        self.attributes = attributes
    }

    public var tagName: String { ordered ? "ol" : "ul" }
}

extension [HTMLAttribute] {
    /// The value of the first attribute called `name`: `nil` if absent, `.some(nil)` if bare.
    func value(of name: String) -> String?? {
        first { $0.name == name }.map(\.value)
    }
}
