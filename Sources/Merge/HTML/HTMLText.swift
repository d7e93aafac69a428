/// Plain text out of HTML, and text into HTML.
enum HTMLText {
    /// The text a reader sees in `html`: text tokens with entities decoded; `<br>` as a line
    /// break; block-level tags (`<p>`, `<li>`, `<td>`, …) as one line break between the texts they
    /// separate; comments, tags and `<script>`/`<style>` contents dropped.
    static func plainText(of html: String) -> String {
        var html = html
        return html.withUTF8 { plainText(of: $0) }
    }

    /// The same for HTML as UTF-8 bytes (a stored block's content, read in place).
    static func plainText(of html: UnsafeBufferPointer<UInt8>) -> String {
        plainText(html, HTMLTokenizer.tokenize(html)[...])
    }

    static func plainText(_ bytes: UnsafeBufferPointer<UInt8>, _ tokens: ArraySlice<HTMLToken>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var pendingBreak = false
        for token in tokens {
            switch token.kind {
            case .text:
                if pendingBreak, !out.isEmpty, out.last != Byte.newline { out.append(Byte.newline) }
                pendingBreak = false
                decodeEntities(UnsafeBufferPointer(rebasing: bytes[token.range]), into: &out)
            case .startTag where token.name == "br":
                out.append(Byte.newline)
                pendingBreak = false
            case .startTag, .endTag:
                if HTMLNames.blockLevel.contains(token.name) { pendingBreak = true }
            case .comment, .rawText:
                break
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` with entities decoded.
    static func decodeEntities(_ text: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        decodeEntities(text, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `&name;` (the common named entities, below), `&#123;` and `&#x1F600;`. The
    /// semicolon is required; an unknown or unterminated reference stays as written.
    /// Code points that are not Unicode scalars (0, surrogates, > U+10FFFF) become U+FFFD.
    /// The text between references is copied a run at a time: byte by byte, this was half
    /// the cost of taking a note's text for the search index (docs/decisions.md).
    static func decodeEntities(_ text: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var index = 0, runStart = 0
        let count = text.count
        while index < count {
            guard text[index] == Byte.ampersand, let (decoded, length) = entity(text, at: index) else {
                index += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart..<index]))
            out.append(contentsOf: decoded.utf8)
            index += length
            runStart = index
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart..<count]))
    }

    /// The entity at `text[start] == "&"`: its text and how many bytes it spans.
    private static func entity(_ text: UnsafeBufferPointer<UInt8>, at start: Int) -> (String, Int)? {
        let count = text.count
        var index = start + 1
        guard index < count else { return nil }
        if text[index] == UInt8(ascii: "#") {
            index += 1
            let hex = index < count && (text[index] == UInt8(ascii: "x") || text[index] == UInt8(ascii: "X"))
            if hex { index += 1 }
            let digitsStart = index
            var value: UInt32 = 0
            while index < count, index - digitsStart < 8, let digit = digitValue(text[index], hex: hex) {
                value = value * (hex ? 16 : 10) + digit
                index += 1
            }
            guard index > digitsStart, index < count, text[index] == UInt8(ascii: ";") else { return nil }
            let scalar = value == 0 ? nil : Unicode.Scalar(value)
            return (String(Character(scalar ?? "\u{FFFD}")), index + 1 - start)
        }
        let nameStart = index
        while index < count, index - nameStart < 32, Byte.isLetter(text[index]) || Byte.isDigit(text[index]) {
            index += 1
        }
        guard index > nameStart, index < count, text[index] == UInt8(ascii: ";"),
              let decoded = namedEntities[String(decoding: text[nameStart..<index], as: UTF8.self)]
        else { return nil }
        return (decoded, index + 1 - start)
    }

    private static func digitValue(_ byte: UInt8, hex: Bool) -> UInt32? {
        if Byte.isDigit(byte) { return UInt32(byte - 0x30) }
        guard hex else { return nil }
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// `text` as HTML text: `&`, `<` and `>` escaped.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// An attribute value for a double-quoted attribute: `&` and `"` escaped.
    static func escapeAttribute(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "\"": out += "&quot;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// The named entities rich-text editors and people actually write. HTML defines 2,231; any
    /// other stays undecoded (`&foo;`), which loses nothing.
    static let namedEntities: [String: String] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}",
        "AMP": "&", "LT": "<", "GT": ">", "QUOT": "\"",
        "copy": "©", "reg": "®", "trade": "™", "hellip": "…", "mdash": "—", "ndash": "–",
        "lsquo": "‘", "rsquo": "’", "sbquo": "‚", "ldquo": "“", "rdquo": "”", "bdquo": "„",
        "laquo": "«", "raquo": "»", "lsaquo": "‹", "rsaquo": "›", "bull": "•", "middot": "·",
        "deg": "°", "plusmn": "±", "times": "×", "divide": "÷", "minus": "−", "ne": "≠",
        "le": "≤", "ge": "≥", "asymp": "≈", "infin": "∞", "frac12": "½", "frac14": "¼",
        "frac34": "¾", "sup1": "¹", "sup2": "²", "sup3": "³", "micro": "µ", "para": "¶",
        "sect": "§", "euro": "€", "pound": "£", "yen": "¥", "cent": "¢", "curren": "¤",
        "dagger": "†", "Dagger": "‡", "permil": "‰", "prime": "′", "Prime": "″",
        "larr": "←", "rarr": "→", "uarr": "↑", "darr": "↓", "harr": "↔", "lArr": "⇐",
        "rArr": "⇒", "hArr": "⇔", "check": "✓", "cross": "✗", "star": "☆", "starf": "★",
        "shy": "\u{AD}", "zwj": "\u{200D}", "zwnj": "\u{200C}", "lrm": "\u{200E}", "rlm": "\u{200F}",
        "ensp": "\u{2002}", "emsp": "\u{2003}", "thinsp": "\u{2009}", "iexcl": "¡", "iquest": "¿",
        "Agrave": "À", "Aacute": "Á", "Acirc": "Â", "Atilde": "Ã", "Auml": "Ä", "Aring": "Å",
        "AElig": "Æ", "Ccedil": "Ç", "Egrave": "È", "Eacute": "É", "Ecirc": "Ê", "Euml": "Ë",
        "Igrave": "Ì", "Iacute": "Í", "Icirc": "Î", "Iuml": "Ï", "Ntilde": "Ñ", "Ograve": "Ò",
        "Oacute": "Ó", "Ocirc": "Ô", "Otilde": "Õ", "Ouml": "Ö", "Oslash": "Ø", "Ugrave": "Ù",
        "Uacute": "Ú", "Ucirc": "Û", "Uuml": "Ü", "Yacute": "Ý", "szlig": "ß", "agrave": "à",
        "aacute": "á", "acirc": "â", "atilde": "ã", "auml": "ä", "aring": "å", "aelig": "æ",
        "ccedil": "ç", "egrave": "è", "eacute": "é", "ecirc": "ê", "euml": "ë", "igrave": "ì",
        "iacute": "í", "icirc": "î", "iuml": "ï", "ntilde": "ñ", "ograve": "ò", "oacute": "ó",
        "ocirc": "ô", "otilde": "õ", "ouml": "ö", "oslash": "ø", "ugrave": "ù", "uacute": "ú",
        "ucirc": "û", "uuml": "ü", "yacute": "ý", "yuml": "ÿ", "OElig": "Œ", "oelig": "œ",
        "Scaron": "Š", "scaron": "š", "Alpha": "Α", "Beta": "Β", "Gamma": "Γ", "Delta": "Δ",
        "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "lambda": "λ",
        "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ", "phi": "φ", "omega": "ω", "Omega": "Ω",
        "Sigma": "Σ", "Pi": "Π", "sum": "∑", "prod": "∏", "radic": "√", "part": "∂",
        "forall": "∀", "exist": "∃", "empty": "∅", "isin": "∈", "notin": "∉", "and": "∧",
        "or": "∨", "cap": "∩", "cup": "∪", "int": "∫", "there4": "∴", "sim": "∼",
        "equiv": "≡", "sub": "⊂", "sup": "⊃", "oplus": "⊕", "otimes": "⊗", "loz": "◊",
        "spades": "♠", "clubs": "♣", "hearts": "♥", "diams": "♦", "ordf": "ª", "ordm": "º",
        "not": "¬", "macr": "¯", "acute": "´", "cedil": "¸", "uml": "¨", "brvbar": "¦",
    ]
}

/// Sets of element names the splitter and the text extraction agree on.
enum HTMLNames {
    /// Elements that begin or end a block: an open `<p>` closes before them, and stray text
    /// between blocks stops at them (after the WHATWG list of elements that close a `<p>`).
    static let blockLevel: Set<String> = [
        "address", "article", "aside", "blockquote", "body", "caption", "center", "colgroup", "dd",
        "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr",
        "html", "legend", "li", "listing", "main", "menu", "nav", "ol", "p", "plaintext", "pre",
        "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul", "xmp",
    ]

    /// Containers whose children are split like the top level, the container's start and end
    /// tags becoming opaque blocks of their own (a `<div>` with only inline content is instead a
    /// `.division` block).
    static let wrappers: Set<String> = [
        "div", "html", "body", "section", "article", "main", "header", "footer", "aside", "nav",
    ]

    /// Elements with no end tag.
    static let void: Set<String> = [
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
    ]

    static let listStructure: Set<String> = ["ul", "ol", "li"]

    static let headingLevels: [String: Int] = ["h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6]
}
