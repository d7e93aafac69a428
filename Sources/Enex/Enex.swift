// libxml2's headers pull in ICU's, which clash with Foundation's copy: this module uses no
// Foundation, and hides CXML2 from the modules that import it.
internal import CXML2

/// An Evernote export (`.enex`): the notes with title, tags, created/updated times and the
/// ENML body as HTML. Read with libxml2 without network, DTD loading or entity substitution
/// (an `.enex` names an external DTD; a hostile file must not make notesctl fetch, read or
/// expand anything); what a note holds that notesd cannot keep is listed per note.
public enum Enex {
    public struct Note: Hashable, Sendable {
        public var title: String
        /// The inside of `<en-note>` as HTML; checkboxes (`<en-todo>`) as `<input type="checkbox">`.
        public var html: String
        public var tags: [String]
        /// Milliseconds since 1970.
        public var created: Int64?
        public var updated: Int64?
        /// What was left out: attachments, encrypted text, entity references.
        public var notKept: [String]
    }

    /// Why a file is not a readable export.
    public enum Problem: Error, Hashable, Sendable, CustomStringConvertible {
        case malformed(line: Int, message: String)
        case notAnExport(root: String)

        public var description: String {
            switch self {
            case .malformed(let line, let message): "not well-formed XML at line \(line): \(message)"
            case .notAnExport(let root): "not an Evernote export (its root element is <\(root)>, not <en-export>)"
            }
        }
    }

    private static let configured: Bool = {
        notesd_xml_refuse_external_entities()
        return true
    }()

    public static func notes(in data: [UInt8]) throws(Problem) -> [Note] {
        _ = configured
        let document = try XMLDocument(data)
        guard let root = xmlDocGetRootElement(document.pointer) else { throw .malformed(line: 1, message: "no root element") }
        let rootName = name(of: root)
        guard rootName == "en-export" else { throw .notAnExport(root: rootName) }
        var notes: [Note] = []
        for element in children(of: root) where name(of: element) == "note" {
            notes.append(note(from: element))
        }
        return notes
    }

    private static func note(from element: xmlNodePtr) -> Note {
        var note = Note(title: "", html: "", tags: [], created: nil, updated: nil, notKept: [])
        var resources = 0
        for child in children(of: element) {
            switch name(of: child) {
            case "title": note.title = text(of: child, notKept: &note.notKept).trimmed
            case "tag":
                let tag = text(of: child, notKept: &note.notKept).trimmed
                if !tag.isEmpty { note.tags.append(tag) }
            case "created": note.created = time(text(of: child, notKept: &note.notKept))
            case "updated": note.updated = time(text(of: child, notKept: &note.notKept))
            case "content": note.html = body(text(of: child, notKept: &note.notKept), notKept: &note.notKept)
            case "resource": resources += 1
            default: break
            }
        }
        if resources > 0 { note.notKept.append("\(resources) attachment\(resources == 1 ? "" : "s") (notesd keeps no attachments)") }
        return note
    }

    /// The text and CDATA directly in `node`; entity references are not followed.
    private static func text(of node: xmlNodePtr, notKept: inout [String]) -> String {
        var out = ""
        var child = node.pointee.children
        while let current = child {
            switch current.pointee.type {
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = current.pointee.content { out += String(cString: content) }
            case XML_ENTITY_REF_NODE:
                notKept.append("the entity reference &\(name(of: current)); (entities are never expanded)")
            default:
                break
            }
            child = current.pointee.next
        }
        return out
    }

    /// ENML (an XHTML document whose root is `<en-note>`) as the HTML inside it: read with
    /// libxml2's HTML parser (it knows `&nbsp;` without the ENML DTD), `<en-todo>` turned into
    /// a checkbox, `<en-media>`/`<en-crypt>` left out and listed.
    private static func body(_ enml: String, notKept: inout [String]) -> String {
        guard !enml.isEmpty else { return "" }
        let bytes = Array(enml.utf8)
        guard let document = bytes.withUnsafeBufferPointer({ buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                htmlReadMemory(chars.baseAddress, Int32(chars.count), nil, "UTF-8", notesd_html_options())
            }
        }) else { return "" }
        defer { xmlFreeDoc(document) }
        guard let root = xmlDocGetRootElement(document) else { return "" }
        let note = find("en-note", from: root) ?? root
        var media = 0, encrypted = 0
        rewrite(note, media: &media, encrypted: &encrypted)
        if media > 0 { notKept.append("\(media) embedded file\(media == 1 ? "" : "s") (<en-media>)") }
        if encrypted > 0 { notKept.append("\(encrypted) encrypted passage\(encrypted == 1 ? "" : "s") (<en-crypt>)") }
        guard let buffer = xmlBufferCreate() else { return "" }
        defer { xmlBufferFree(buffer) }
        for child in children(of: note, elementsOnly: false) { htmlNodeDump(buffer, document, child) }
        return String(cString: xmlBufferContent(buffer)).trimmed
    }

    private static func rewrite(_ node: xmlNodePtr, media: inout Int, encrypted: inout Int) {
        for child in children(of: node) {
            switch name(of: child) {
            case "en-media", "en-crypt":
                if name(of: child) == "en-media" { media += 1 } else { encrypted += 1 }
                xmlUnlinkNode(child)
                xmlFreeNode(child)
            case "en-todo":
                let checked = attribute("checked", of: child)?.lowercased() == "true"
                xmlNodeSetName(child, "input")
                _ = xmlUnsetProp(child, "checked")
                _ = xmlSetProp(child, "type", "checkbox")
                if checked { _ = xmlSetProp(child, "checked", "") }
            default:
                rewrite(child, media: &media, encrypted: &encrypted)
            }
        }
    }

    // MARK: Tree helpers

    private static func children(of node: xmlNodePtr, elementsOnly: Bool = true) -> [xmlNodePtr] {
        var result: [xmlNodePtr] = []
        var child = node.pointee.children
        while let current = child {
            if !elementsOnly || current.pointee.type == XML_ELEMENT_NODE { result.append(current) }
            child = current.pointee.next
        }
        return result
    }

    private static func find(_ wanted: String, from node: xmlNodePtr) -> xmlNodePtr? {
        if name(of: node) == wanted { return node }
        for child in children(of: node) { if let found = find(wanted, from: child) { return found } }
        return nil
    }

    private static func name(of node: xmlNodePtr) -> String {
        node.pointee.name.map { String(cString: $0) } ?? ""
    }

    private static func attribute(_ wanted: String, of node: xmlNodePtr) -> String? {
        var property = node.pointee.properties
        while let current = property {
            if current.pointee.name.map({ String(cString: $0) }) == wanted {
                var value = "", child = current.pointee.children
                while let text = child {
                    if let content = text.pointee.content { value += String(cString: content) }
                    child = text.pointee.next
                }
                return value
            }
            property = current.pointee.next
        }
        return nil
    }

    /// `20240506T093000Z`, Evernote's form (UTC), as milliseconds since 1970.
    static func time(_ text: String) -> Int64? {
        let digits = Array(text.trimmed.utf8)
        guard digits.count == 16, digits[8] == UInt8(ascii: "T"), digits[15] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in digits[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8), let hour = number(9..<11),
              let minute = number(11..<13), let second = number(13..<15), (1...12).contains(month), (1...31).contains(day),
              hour < 24, minute < 60, second < 61 else { return nil }
        // Days from 1970-01-01 to the date (proleptic Gregorian; H. Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000
    }
}

extension String {
    fileprivate var trimmed: String {
        let scalars = unicodeScalars
        let isSpace = { (s: Unicode.Scalar) in s == " " || s == "\n" || s == "\t" || s == "\r" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }
}

/// One XML document parsed by libxml2, freed in `deinit`.
private final class XMLDocument {
    let pointer: xmlDocPtr

    init(_ data: [UInt8]) throws(Enex.Problem) {
        xmlResetLastError()
        let parsed = data.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                xmlReadMemory(chars.baseAddress, Int32(clamping: chars.count), nil, nil, notesd_xml_options())
            }
        }
        guard let parsed else {
            let error = xmlGetLastError()
            let message = error?.pointee.message.map { String(cString: $0).trimmed } ?? "unreadable"
            throw .malformed(line: Int(error?.pointee.line ?? 0), message: message)
        }
        pointer = parsed
    }

    deinit { xmlFreeDoc(pointer) }
}
