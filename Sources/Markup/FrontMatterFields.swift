import CYAML
import Foundation

/// What the front matter of a Markdown file says about its note (docs/markdown.md, "Front
/// matter"): the keys Obsidian, Hugo, Jekyll and Joplin write. Keys notesd has no field for are
/// listed in `unknownKeys`, never silently dropped.
public struct FrontMatter: Hashable, Sendable {
    public var title: String?
    public var tags: [String]?
    /// Milliseconds since 1970.
    public var created: Int64?
    public var modified: Int64?
    public var pinned: Bool?
    public var color: String?
    /// A folder path (`Work/Projects`); it wins over the directory the file sits in.
    public var folder: String?
    /// The note id the file was exported from: provenance only, an import makes a new note.
    public var id: String?
    /// Keys not listed above, in file order.
    public var unknownKeys: [String] = []

    public init() {}

    /// Why a front matter cannot be read.
    public enum Problem: Error, Hashable, Sendable, CustomStringConvertible {
        /// libyaml could not parse it.
        case syntax(line: Int, message: String)
        /// It is YAML, but not a mapping of keys to values.
        case notAMapping
        /// A known key holds a value of the wrong kind.
        case badValue(key: String, expected: String)

        public var description: String {
            switch self {
            case .syntax(let line, let message): "front matter line \(line): \(message)"
            case .notAMapping: "the front matter is not a list of \"key: value\" lines"
            case .badValue(let key, let expected): "front matter \"\(key)\" must be \(expected)"
            }
        }
    }

    /// Reads `yaml`, the text between the `---` lines (`FrontMatterBlock.split`).
    public static func parse(_ yaml: String) throws(Problem) -> FrontMatter {
        let document = try YAMLDocument(yaml)
        var result = FrontMatter()
        guard let root = document.root else { return result }
        guard case .mapping(let pairs) = root else { throw .notAMapping }
        for (keyNode, value) in pairs {
            guard case .scalar(let key) = keyNode else { throw .notAMapping }
            switch key.lowercased() {
            case "title":
                result.title = try scalar(value, key).trimmingCharacters(in: .whitespacesAndNewlines)
            case "tags", "tag", "keywords":
                result.tags = try tags(value, key)
            case "created", "date", "created_at", "creation_date":
                result.created = try time(value, key)
            case "modified", "updated", "lastmod", "updated_at", "modification_date":
                result.modified = try time(value, key)
            case "pinned":
                result.pinned = try bool(value, key)
            case "color", "colour":
                result.color = try scalar(value, key)
            case "folder":
                result.folder = try scalar(value, key)
            case "id":
                result.id = try scalar(value, key)
            default:
                result.unknownKeys.append(key)
            }
        }
        return result
    }

    // MARK: Values

    private static func scalar(_ node: YAMLDocument.Node, _ key: String) throws(Problem) -> String {
        guard case .scalar(let text) = node else { throw .badValue(key: key, expected: "a single value") }
        return text
    }

    private static func tags(_ node: YAMLDocument.Node, _ key: String) throws(Problem) -> [String] {
        let words: [String]
        switch node {
        case .scalar(let text): words = text.split(separator: ",").map(String.init)
        case .sequence(let items):
            words = try items.map { item throws(Problem) in
                guard case .scalar(let text) = item else { throw .badValue(key: key, expected: "a list of tags or a comma-separated string") }
                return text
            }
        case .mapping: throw .badValue(key: key, expected: "a list of tags or a comma-separated string")
        }
        return words.map { word in
            let trimmed = word.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("#") ? String(trimmed.dropFirst()) : trimmed
        }.filter { !$0.isEmpty }
    }

    private static func bool(_ node: YAMLDocument.Node, _ key: String) throws(Problem) -> Bool {
        switch try scalar(node, key).lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0", "": return false
        default: throw .badValue(key: key, expected: "true or false")
        }
    }

    /// A date (`2024-05-06`), a date and time (ISO 8601, `T` or a space, optional zone; no
    /// zone is UTC), or a number of seconds (or milliseconds, above 10^11) since 1970.
    private static func time(_ node: YAMLDocument.Node, _ key: String) throws(Problem) -> Int64 {
        let text = try scalar(node, key).trimmingCharacters(in: .whitespaces)
        if let number = Double(text), number >= 0 {
            return number > 1e11 ? Int64(number) : Int64(number * 1000)
        }
        if let milliseconds = parseDate(text) { return milliseconds }
        throw .badValue(key: key, expected: "a date like 2024-05-06 or 2024-05-06T09:30:00Z")
    }

    static func parseDate(_ text: String) -> Int64? {
        let normalized = text.replacing(" ", with: "T", maxReplacements: 1)
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [
            [.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime],
            [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate],
            [.withFullDate, .withDashSeparatorInDate],
        ] {
            formatter.formatOptions = options
            formatter.timeZone = TimeZone(identifier: "UTC")
            if let date = formatter.date(from: normalized) { return Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
        }
        return nil
    }
}

/// One YAML text loaded by libyaml: parser and document, freed together in `deinit`. Only
/// scalars, sequences and mappings are read out (aliases point at nodes already read, so a
/// hostile file cannot make the reading blow up).
final class YAMLDocument {
    enum Node {
        case scalar(String)
        case sequence([Node])
        case mapping([(Node, Node)])
    }

    private var parser = yaml_parser_t()
    private var document = yaml_document_t()
    private var loaded = false
    private(set) var root: Node?

    /// Deeper nesting than front matter ever has is refused rather than followed.
    static let maximumDepth = 16
    /// Aliases make nodes shared, so reading out a small text can visit a node many times
    /// ("billion laughs"): past this many values the front matter is refused.
    private var budget = 10_000

    init(_ text: String) throws(FrontMatter.Problem) {
        guard yaml_parser_initialize(&parser) == 1 else { throw .syntax(line: 1, message: "out of memory") }
        let bytes = Array(text.utf8)
        let ok = bytes.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            return yaml_parser_load(&parser, &document)
        }
        guard ok == 1 else {
            let message = parser.problem.map { String(cString: $0) } ?? "not YAML"
            throw .syntax(line: Int(parser.problem_mark.line) + 1, message: message)
        }
        loaded = true
        if let node = yaml_document_get_root_node(&document) {
            root = try read(node, depth: 0)
        }
    }

    deinit {
        if loaded { yaml_document_delete(&document) }
        yaml_parser_delete(&parser)
    }

    private func read(_ node: UnsafeMutablePointer<yaml_node_t>, depth: Int) throws(FrontMatter.Problem) -> Node {
        guard depth < Self.maximumDepth else { throw .syntax(line: Int(node.pointee.start_mark.line) + 1, message: "nested too deeply") }
        budget -= 1
        guard budget >= 0 else { throw .syntax(line: Int(node.pointee.start_mark.line) + 1, message: "too many values (aliases repeated over and over?)") }
        switch node.pointee.type {
        case YAML_SCALAR_NODE:
            let scalar = node.pointee.data.scalar
            return .scalar(String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self))
        case YAML_SEQUENCE_NODE:
            var items: [Node] = []
            var item = node.pointee.data.sequence.items.start
            while let current = item, current < node.pointee.data.sequence.items.top {
                if let child = yaml_document_get_node(&document, current.pointee) { items.append(try read(child, depth: depth + 1)) }
                item = current + 1
            }
            return .sequence(items)
        case YAML_MAPPING_NODE:
            var pairs: [(Node, Node)] = []
            var pair = node.pointee.data.mapping.pairs.start
            while let current = pair, current < node.pointee.data.mapping.pairs.top {
                if let key = yaml_document_get_node(&document, current.pointee.key),
                   let value = yaml_document_get_node(&document, current.pointee.value) {
                    pairs.append((try read(key, depth: depth + 1), try read(value, depth: depth + 1)))
                }
                pair = current + 1
            }
            return .mapping(pairs)
        default:
            return .scalar("")
        }
    }
}
