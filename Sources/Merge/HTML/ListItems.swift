/// What a list item block is: bulleted or numbered, and whether it is a checklist item.
///
/// Editors mark checklists in different ways; the state is read from the HTML the editor wrote
/// (never stored twice), so ticking an item changes exactly that item's block and two devices
/// ticking different items merge cleanly. The rule, first match wins:
///
/// 1. the `<li>`'s `data-checked` is `true` or `false` (TipTap, Quill 1 per item);
/// 2. the `<li>`'s `data-list` is `checked` or `unchecked` (Quill 2);
/// 3. the `<li>`'s `aria-checked` is `true` or `false` (Lexical);
/// 4. the `<li>`'s `class` has the word `checked` or `unchecked`;
/// 5. the item's content starts (before any text) with `<input type="checkbox">`: checked iff
///    it has a `checked` attribute (GitHub task lists, Trix, hand-written HTML);
/// 6. the innermost `<ul>`/`<ol>` has `data-checked` `true` or `false` (Quill 1 per list);
/// otherwise the item is not a checklist item.
extension Block {
    /// `true`/`false` for a checked/unchecked checklist item; `nil` for anything else.
    public var checked: Bool? {
        guard case .listItem(let containers) = kind else { return nil }
        if let state = Self.booleanAttribute(attributes, "data-checked", yes: "true", no: "false") { return state }
        if let state = Self.booleanAttribute(attributes, "data-list", yes: "checked", no: "unchecked") { return state }
        if let state = Self.booleanAttribute(attributes, "aria-checked", yes: "true", no: "false") { return state }
        if case .some(.some(let classes)) = attributes.value(of: "class") {
            let words = classes.split(whereSeparator: { $0.isWhitespace })
            if words.contains("checked") { return true }
            if words.contains("unchecked") { return false }
        }
        if let state = leadingCheckbox { return state }
        return Self.booleanAttribute(containers.last?.attributes ?? [], "data-checked", yes: "true", no: "false")
    }

    /// Whether a list item is numbered: its list is an `<ol>`, except that Quill 2 writes every
    /// list as `<ol>` and says `data-list="bullet"` on bulleted items. `nil` outside lists.
    public var isOrderedListItem: Bool? {
        guard case .listItem(let containers) = kind, let innermost = containers.last else { return nil }
        switch attributes.value(of: "data-list") {
        case .some(.some("bullet")), .some(.some("checked")), .some(.some("unchecked")): return false
        case .some(.some("ordered")): return true
        default: return innermost.ordered
        }
    }

    private static func booleanAttribute(_ attributes: [HTMLAttribute], _ name: String, yes: String, no: String) -> Bool? {
        guard case .some(.some(let value)) = attributes.value(of: name) else { return nil }
        switch value.lowercased() {
        case yes: return true
        case no: return false
        default: return nil
        }
    }

    /// Rule 5: a checkbox `<input>` among the tags before the item's first text.
    private var leadingCheckbox: Bool? {
        var content = content
        return content.withUTF8 { bytes -> Bool? in
            for token in HTMLTokenizer.tokenize(bytes) {
                switch token.kind {
                case .text:
                    if !bytes[token.range].allSatisfy(Byte.isWhitespace) { return nil }
                case .startTag where token.name == "input":
                    let attributes = HTMLTokenizer.attributes(of: token, in: bytes)
                    guard case .some(.some(let type)) = attributes.value(of: "type"), type.lowercased() == "checkbox"
                    else { return nil }
                    return attributes.value(of: "checked") != nil
                case .startTag, .endTag, .comment, .rawText:
                    continue
                }
            }
            return nil
        }
    }
}

extension Block {
    /// This checklist item ticked (`true`) or unticked, changed where its state is written (the
    /// attribute or checkbox `checked` reads from), everything else kept byte for byte; nil
    /// when the state lives in the list (Quill 1's per-list `data-checked`) or there is none.
    public func withChecked(_ state: Bool) -> Block? {
        guard case .listItem = kind, let current = checked else { return nil }
        if current == state { return self }
        func replacing(_ name: String, _ value: String) -> Block {
            let attributes = self.attributes.map { $0.name == name ? HTMLAttribute(name: name, value: value) : $0 }
            return Block(unchecked: kind, attributes: attributes, content: self.content)
        }
        if Self.booleanAttribute(attributes, "data-checked", yes: "true", no: "false") != nil { return replacing("data-checked", state ? "true" : "false") }
        if Self.booleanAttribute(attributes, "data-list", yes: "checked", no: "unchecked") != nil { return replacing("data-list", state ? "checked" : "unchecked") }
        if Self.booleanAttribute(attributes, "aria-checked", yes: "true", no: "false") != nil { return replacing("aria-checked", state ? "true" : "false") }
        if case .some(.some(let classes)) = attributes.value(of: "class") {
            var words = classes.split(whereSeparator: { $0.isWhitespace }).map(String.init)
            if let index = words.firstIndex(where: { $0 == "checked" || $0 == "unchecked" }) {
                words[index] = state ? "checked" : "unchecked"
                return replacing("class", words.joined(separator: " "))
            }
        }
        guard leadingCheckbox != nil else { return nil }
        // Rule 5: rewrite the leading checkbox's tag, with or without `checked`.
        var html = content
        return html.withUTF8 { bytes -> Block? in
            for token in HTMLTokenizer.tokenize(bytes) where token.kind == .startTag && token.name == "input" {
                var attributes = HTMLTokenizer.attributes(of: token, in: bytes).filter { $0.name != "checked" }
                if state { attributes.append(HTMLAttribute(name: "checked", value: "")) }
                guard attributes.allSatisfy({ $0.problem == nil }) else { return nil }
                let selfClosing = bytes[token.range].dropLast().last == UInt8(ascii: "/")
                var tag = "<input"
                HTMLBlocks.appendAttributes(attributes, to: &tag)
                tag += selfClosing ? " />" : ">"
                let before = String(decoding: bytes[..<token.range.lowerBound], as: UTF8.self)
                let after = String(decoding: bytes[token.range.upperBound...], as: UTF8.self)
                return Block(unchecked: kind, attributes: self.attributes, content: before + tag + after)
            }
            return nil
        }
    }
}
