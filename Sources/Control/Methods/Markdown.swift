extension ControlMethods {
    /// Reads a Markdown file's front matter (docs/control-protocol.md, `markdown.parse`), so a
    /// client that imports files needs no YAML parser of its own.
    public enum MarkdownParse: ControlMethod {
        public typealias Params = MarkdownParseParams
        public typealias Result = MarkdownParseResult
        public static let name = "markdown.parse"
    }
}

/// `markdown.parse` params: a whole Markdown file's text.
public struct MarkdownParseParams: Codable, Hashable, Sendable {
    public var text: String

    public init(text: String) { self.text = text }
}

/// `markdown.parse` result: the front matter's fields (absent when not given) and the
/// Markdown after it.
public struct MarkdownParseResult: Codable, Hashable, Sendable {
    public var title: String?
    public var tags: [String]?
    public var created: Timestamp?
    public var modified: Timestamp?
    public var pinned: Bool?
    public var color: String?
    /// A folder path; for imports it wins over the file's directory.
    public var folder: String?
    /// The id the note had where it was exported: provenance only.
    public var id: String?
    /// Front matter keys notesd keeps no field for, in file order.
    public var unknownKeys: [String]
    /// Whether the file had front matter at all.
    public var hasFrontMatter: Bool
    /// The Markdown after the front matter (byte-order mark dropped, line ends `\n`).
    public var body: String

    public init(
        title: String? = nil, tags: [String]? = nil, created: Timestamp? = nil, modified: Timestamp? = nil, pinned: Bool? = nil,
        color: String? = nil, folder: String? = nil, id: String? = nil, unknownKeys: [String] = [], hasFrontMatter: Bool, body: String
    ) {
        self.title = title
        self.tags = tags
        self.created = created
        self.modified = modified
        self.pinned = pinned
        self.color = color
        self.folder = folder
        self.id = id
        self.unknownKeys = unknownKeys
        self.hasFrontMatter = hasFrontMatter
        self.body = body
    }
}

extension ControlMethods {
    /// Creates many notes in one transaction (docs/control-protocol.md, `notes.createMany`):
    /// what `notesctl import` sends, so 10,000 files cost a few commits, not 10,000.
    public enum NotesCreateMany: ControlMethod {
        public typealias Params = NotesCreateManyParams
        public typealias Result = [NoteCreateOutcome]
        public static let name = "notes.createMany"
    }
}

/// `notes.createMany` params: each note as `notes.create` takes it.
public struct NotesCreateManyParams: Codable, Hashable, Sendable {
    public var notes: [NoteCreateParams]

    public init(notes: [NoteCreateParams]) { self.notes = notes }
}

/// One note of `notes.createMany`, in order: the new note, or why it was not created.
public struct NoteCreateOutcome: Codable, Hashable, Sendable {
    public var note: NoteSummary?
    public var error: RPCError?

    public init(note: NoteSummary? = nil, error: RPCError? = nil) {
        self.note = note
        self.error = error
    }
}

extension ControlMethods {
    /// `markdown.parse` for many files in one request (an import reads hundreds at a time).
    public enum MarkdownParseMany: ControlMethod {
        public typealias Params = MarkdownParseManyParams
        public typealias Result = [MarkdownParseOutcome]
        public static let name = "markdown.parseMany"
    }
}

public struct MarkdownParseManyParams: Codable, Hashable, Sendable {
    public var texts: [String]

    public init(texts: [String]) { self.texts = texts }
}

/// One text of `markdown.parseMany`, in order: what `markdown.parse` answers, or its error.
public struct MarkdownParseOutcome: Codable, Hashable, Sendable {
    public var result: MarkdownParseResult?
    public var error: RPCError?

    public init(result: MarkdownParseResult? = nil, error: RPCError? = nil) {
        self.result = result
        self.error = error
    }
}
