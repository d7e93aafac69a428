/// A note without its body, as lists show it.
///
/// References: wherever params take a note `id`, the daemon accepts the full id or a unique
/// prefix of it (at least 4 hex digits, dashes and case ignored).
public struct NoteSummary: Codable, Hashable, Sendable {
    /// The full id, canonical UUID text (lower case, `8-4-4-4-12`).
    public var id: String
    /// The shortest prefix of `id` (at least 8 characters) unique among all notes when the
    /// answer was made; what people see and type.
    public var short: String
    public var title: String
    /// The folder id; `nil` is Uncategorized.
    public var folder: String?
    /// The folder's path (`Work/Projects`); `""` for Uncategorized.
    public var folderPath: String
    public var pinned: Bool
    public var color: String?
    /// Sorted by Unicode scalar order.
    public var tags: [String]
    /// In the Trash (the folder is kept, so restoring puts it back).
    public var trashed: Bool
    /// Set on conflict copies: the id of the note this is the other version of.
    public var conflictOf: String?
    public var created: Timestamp
    public var modified: Timestamp

    public init(
        id: String, short: String, title: String, folder: String?, folderPath: String, pinned: Bool,
        color: String?, tags: [String], trashed: Bool, conflictOf: String?, created: Timestamp, modified: Timestamp
    ) {
        self.id = id
        self.short = short
        self.title = title
        self.folder = folder
        self.folderPath = folderPath
        self.pinned = pinned
        self.color = color
        self.tags = tags
        self.trashed = trashed
        self.conflictOf = conflictOf
        self.created = created
        self.modified = modified
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(short, forKey: .short)
        try container.encode(title, forKey: .title)
        try container.encodeNullable(folder, forKey: .folder)
        try container.encode(folderPath, forKey: .folderPath)
        try container.encode(pinned, forKey: .pinned)
        try container.encodeNullable(color, forKey: .color)
        try container.encode(tags, forKey: .tags)
        try container.encode(trashed, forKey: .trashed)
        try container.encodeNullable(conflictOf, forKey: .conflictOf)
        try container.encode(created, forKey: .created)
        try container.encode(modified, forKey: .modified)
    }
}

extension NoteSummary: DirectJSONEncodable {
    /// `encode(to:)`'s members, in sorted key order (a listing's answer is mostly these).
    public func writeJSON(to writer: inout JSONWriter) {
        // Each key with the punctuation around it is one write: a listing makes 13 per note.
        writer.raw(#"{"color":"#); writer.optionalString(color)
        writer.raw(#","conflictOf":"#); writer.optionalString(conflictOf)
        writer.raw(#","created":"#); writer.integer(created.rawValue)
        writer.raw(#","folder":"#); writer.optionalString(folder)
        writer.raw(#","folderPath":"#); writer.string(folderPath)
        writer.raw(#","id":"#); writer.string(id)
        writer.raw(#","modified":"#); writer.integer(modified.rawValue)
        writer.raw(#","pinned":"#); writer.bool(pinned)
        writer.raw(#","short":"#); writer.string(short)
        writer.raw(#","tags":"#); writer.array(tags) { writer, tag in writer.string(tag) }
        writer.raw(#","title":"#); writer.string(title)
        writer.raw(#","trashed":"#); writer.bool(trashed)
        writer.raw("}")
    }

    /// The keys and fixed-size values (ids, times) take about 230 bytes; the texts add theirs.
    public var estimatedJSONBytes: Int {
        230 + title.utf8.count + folderPath.utf8.count + (color?.utf8.count ?? 0) + tags.reduce(0) { $0 + $1.utf8.count + 3 }
    }
}

/// `notes.list` params: every filter given must match (AND). Results are sorted pinned first,
/// then by `modified`, newest first, then by id.
public struct NotesListParams: Codable, Hashable, Sendable {
    /// Only notes directly in this folder (a folder reference; `"/"` or `""` is Uncategorized).
    public var folder: String?
    /// Only notes carrying this tag (exact, case-sensitive).
    public var tag: String?
    /// `true`: only notes in the Trash. Absent or `false`: only notes not in the Trash.
    public var trashed: Bool?
    /// `true`: only conflict copies. `false`: no conflict copies. Absent: both.
    public var conflicts: Bool?
    /// `true`: only pinned notes. `false`: only unpinned. Absent: both.
    public var pinned: Bool?
    /// Case-insensitive substring of the title or of the body's text (markup ignored).
    public var query: String?
    /// At most this many notes (1…10,000), from the start of the order or after `after`.
    /// Absent: every match. A page reads only its own notes, so it costs the same at any
    /// library size.
    public var limit: Int?
    /// Continue after this note: the last note of the previous page, by its sort key.
    public var after: NotesListAfter?

    public init(
        folder: String? = nil, tag: String? = nil, trashed: Bool? = nil, conflicts: Bool? = nil, pinned: Bool? = nil, query: String? = nil,
        limit: Int? = nil, after: NotesListAfter? = nil
    ) {
        self.folder = folder
        self.tag = tag
        self.trashed = trashed
        self.conflicts = conflicts
        self.pinned = pinned
        self.query = query
        self.limit = limit
        self.after = after
    }
}

/// Where a page of `notes.list` continues: the `pinned`, `modified` and `id` of the last
/// `NoteSummary` of the page before. The key, not a position, so notes created or edited
/// between pages neither repeat nor shift the next page.
public struct NotesListAfter: Codable, Hashable, Sendable {
    public var pinned: Bool
    public var modified: Timestamp
    public var id: String

    public init(pinned: Bool, modified: Timestamp, id: String) {
        self.pinned = pinned
        self.modified = modified
        self.id = id
    }

    /// The key of the last summary of a page.
    public init(_ last: NoteSummary) {
        self.init(pinned: last.pinned, modified: last.modified, id: last.id)
    }
}

/// The form a body is given in.
public enum NoteFormat: String, Codable, Hashable, Sendable, CaseIterable {
    /// The stored HTML, exactly.
    case html
    /// The text content only: blocks (paragraphs, headings, list items…) separated by one
    /// blank line, `<br>` as a newline, entities decoded, no markup or list markers.
    /// `notesctl edit --text` turns it back into paragraphs.
    case text
    /// Markdown (docs/control-protocol.md, "Body formats"): headings, lists, checklists
    /// (`- [x]`), quotes, code, rules, emphasis, links; anything else as its text.
    case markdown
}

/// `notes.get` params.
public struct NoteGetParams: Codable, Hashable, Sendable {
    public var id: String
    /// Absent: `html`.
    public var format: NoteFormat?

    public init(id: String, format: NoteFormat? = nil) {
        self.id = id
        self.format = format
    }
}

/// `notes.get` result: the summary's members, plus the body and the revisions it shows.
/// On the wire all members sit in one object.
public struct NoteDocument: Codable, Hashable, Sendable {
    public var summary: NoteSummary
    public var format: NoteFormat
    public var body: String
    /// The note's current head revision ids (hex). Pass them back as `notes.update`'s
    /// `baseHeads` so an edit made from this copy merges with changes made meanwhile.
    public var heads: [String]

    public init(summary: NoteSummary, format: NoteFormat, body: String, heads: [String]) {
        self.summary = summary
        self.format = format
        self.body = body
        self.heads = heads
    }

    private enum CodingKeys: String, CodingKey { case format, body, heads }

    public init(from decoder: any Decoder) throws {
        summary = try NoteSummary(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decode(NoteFormat.self, forKey: .format)
        body = try container.decode(String.self, forKey: .body)
        heads = try container.decode([String].self, forKey: .heads)
    }

    public func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(format, forKey: .format)
        try container.encode(body, forKey: .body)
        try container.encode(heads, forKey: .heads)
    }
}

/// `notes.create` params. The body is `html`, or `body` in `format` (docs/control-protocol.md,
/// "Body formats"); neither: an empty body.
public struct NoteCreateParams: Codable, Hashable, Sendable {
    public var title: String
    /// The body, HTML.
    public var html: String?
    /// The body in `format` (absent: `html`); not together with `html`.
    public var body: String?
    /// What `body` is written in: `markdown` is converted by the daemon (cmark-gfm).
    public var format: NoteFormat?
    /// A folder reference; absent, `null`, `""` or `"/"`: Uncategorized.
    public var folder: String?
    public var tags: [String]?
    public var pinned: Bool?
    public var color: String?
    /// For imports: when the note was made and last changed; absent: now.
    public var created: Timestamp?
    public var modified: Timestamp?

    public init(
        title: String, html: String? = nil, body: String? = nil, format: NoteFormat? = nil, folder: String? = nil,
        tags: [String]? = nil, pinned: Bool? = nil, color: String? = nil, created: Timestamp? = nil, modified: Timestamp? = nil
    ) {
        self.title = title
        self.html = html
        self.body = body
        self.format = format
        self.folder = folder
        self.tags = tags
        self.pinned = pinned
        self.color = color
        self.created = created
        self.modified = modified
    }
}

/// `notes.update` params. Only the members present change; an update that changes nothing
/// still succeeds and writes no revision.
///
/// `folder` and `color` tell "absent" (keep) from `null` (clear: Uncategorized, no colour),
/// see `FieldChange`. For the other members `null` means the same as absent.
public struct NoteUpdateParams: Codable, Hashable, Sendable {
    public var id: String
    /// The heads the edit was based on (`NoteDocument.heads`). When given and the note has
    /// moved on since, the edit becomes a revision on those heads, concurrent with the newer
    /// ones, and is merged like a sync (docs/merge.md): changes made meanwhile are kept.
    /// Absent: the edit applies on top of the current note.
    public var baseHeads: [String]?
    public var title: String?
    public var html: String?
    /// The new body in `format` (absent: `html`); not together with `html`. In `markdown`, only
    /// the blocks whose Markdown differs from the note's Markdown at `baseHeads` (absent: now)
    /// are converted; the others keep their HTML exactly (docs/markdown.md).
    public var body: String?
    public var format: NoteFormat?
    /// `.set(reference)`: move to that folder; `.clear`: Uncategorized.
    public var folder: FieldChange<String>
    public var pinned: Bool?
    /// `.set(colour)`: set; `.clear`: remove the colour.
    public var color: FieldChange<String>
    /// Tags to add; a tag both added and removed ends up added.
    public var addTags: [String]?
    public var removeTags: [String]?

    public init(
        id: String, baseHeads: [String]? = nil, title: String? = nil, html: String? = nil,
        folder: FieldChange<String> = .unchanged, pinned: Bool? = nil, color: FieldChange<String> = .unchanged,
        addTags: [String]? = nil, removeTags: [String]? = nil, body: String? = nil, format: NoteFormat? = nil
    ) {
        self.id = id
        self.baseHeads = baseHeads
        self.title = title
        self.html = html
        self.body = body
        self.format = format
        self.folder = folder
        self.pinned = pinned
        self.color = color
        self.addTags = addTags
        self.removeTags = removeTags
    }

    private enum CodingKeys: String, CodingKey {
        case id, baseHeads, title, html, body, format, folder, pinned, color, addTags, removeTags
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        baseHeads = try container.decodeIfPresent([String].self, forKey: .baseHeads)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        html = try container.decodeIfPresent(String.self, forKey: .html)
        body = try container.decodeIfPresent(String.self, forKey: .body)
        format = try container.decodeIfPresent(NoteFormat.self, forKey: .format)
        folder = try container.decodeChange(String.self, forKey: .folder)
        pinned = try container.decodeIfPresent(Bool.self, forKey: .pinned)
        color = try container.decodeChange(String.self, forKey: .color)
        addTags = try container.decodeIfPresent([String].self, forKey: .addTags)
        removeTags = try container.decodeIfPresent([String].self, forKey: .removeTags)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(baseHeads, forKey: .baseHeads)
        try container.encodeIfPresent(title, forKey: .title)
        try container.encodeIfPresent(html, forKey: .html)
        try container.encodeIfPresent(body, forKey: .body)
        try container.encodeIfPresent(format, forKey: .format)
        try container.encodeChange(folder, forKey: .folder)
        try container.encodeIfPresent(pinned, forKey: .pinned)
        try container.encodeChange(color, forKey: .color)
        try container.encodeIfPresent(addTags, forKey: .addTags)
        try container.encodeIfPresent(removeTags, forKey: .removeTags)
    }
}

/// Params naming one note: `notes.trash`, `notes.restore`.
public struct NoteReference: Codable, Hashable, Sendable {
    /// A full note id or a unique prefix.
    public var id: String

    public init(id: String) { self.id = id }
}

/// `notes.purge` result.
public struct PurgeResult: Codable, Hashable, Sendable {
    /// The full id of the note.
    public var id: String
    /// `true`: deleted for good (a tombstone remains). `false`: kept, because it was changed
    /// after the `baseHeads` the delete was based on; `unseen` says by whom.
    public var purged: Bool
    /// When kept: the revisions the person deleting had not seen, newest first.
    public var unseen: [HistoryEntry]

    public init(id: String, purged: Bool = true, unseen: [HistoryEntry] = []) {
        self.id = id
        self.purged = purged
        self.unseen = unseen
    }
}

/// What a revision changed, against its first parent (a merge: against the merged heads).
public enum HistoryChange: String, Codable, Hashable, Sendable, CaseIterable {
    case created, title, body, folder, tags, pinned, color
    /// Moved to the Trash.
    case trashed
    /// Taken out of the Trash.
    case restored
    /// A revision with several parents, joining concurrent edits.
    case merged
    /// Permanently deleted (a tombstone).
    case deleted
}

/// One revision in `notes.history`; the list is newest first (HLC, then revision id).
public struct HistoryEntry: Codable, Hashable, Sendable {
    /// Revision id, 64 hex digits.
    public var revision: String
    public var parents: [String]
    /// The revision's HLC as `milliseconds.counter`.
    public var hlc: String
    /// The HLC's milliseconds: when the author made it, by the author's clock.
    public var time: Timestamp
    /// The authoring device; `nil` when its replica is not on the roster any more.
    public var device: String?
    public var deviceShort: String?
    public var deviceName: String?
    /// The note's title at this revision (`""` for a tombstone).
    public var title: String
    /// What changed; never empty.
    public var changes: [HistoryChange]
    /// Set when this revision brought back an earlier one's content (`notes.restoreRevision`,
    /// or an edit back to exactly what an ancestor held): that ancestor's id.
    public var restoredFrom: String?
    /// A permanent delete erased this revision's content: it cannot be shown or restored.
    public var erased: Bool
    /// With `notes.history`'s `patch`: the blocks added and removed against the first parent
    /// (all blocks added for the first revision; empty for a tombstone or an erased revision).
    public var patch: [BlockChange]?

    public init(
        revision: String, parents: [String], hlc: String, time: Timestamp, device: String?, deviceShort: String?,
        deviceName: String?, title: String, changes: [HistoryChange], restoredFrom: String? = nil, erased: Bool = false,
        patch: [BlockChange]? = nil
    ) {
        self.revision = revision
        self.parents = parents
        self.hlc = hlc
        self.time = time
        self.device = device
        self.deviceShort = deviceShort
        self.deviceName = deviceName
        self.title = title
        self.changes = changes
        self.restoredFrom = restoredFrom
        self.erased = erased
        self.patch = patch
    }

    private enum CodingKeys: String, CodingKey {
        case revision, parents, hlc, time, device, deviceShort, deviceName, title, changes, restoredFrom, erased, patch
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        revision = try container.decode(String.self, forKey: .revision)
        parents = try container.decode([String].self, forKey: .parents)
        hlc = try container.decode(String.self, forKey: .hlc)
        time = try container.decode(Timestamp.self, forKey: .time)
        device = try container.decodeIfPresent(String.self, forKey: .device)
        deviceShort = try container.decodeIfPresent(String.self, forKey: .deviceShort)
        deviceName = try container.decodeIfPresent(String.self, forKey: .deviceName)
        title = try container.decode(String.self, forKey: .title)
        changes = try container.decode([HistoryChange].self, forKey: .changes)
        restoredFrom = try container.decodeIfPresent(String.self, forKey: .restoredFrom)
        erased = try container.decodeIfPresent(Bool.self, forKey: .erased) ?? false
        patch = try container.decodeIfPresent([BlockChange].self, forKey: .patch)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(revision, forKey: .revision)
        try container.encode(parents, forKey: .parents)
        try container.encode(hlc, forKey: .hlc)
        try container.encode(time, forKey: .time)
        try container.encodeNullable(device, forKey: .device)
        try container.encodeNullable(deviceShort, forKey: .deviceShort)
        try container.encodeNullable(deviceName, forKey: .deviceName)
        try container.encode(title, forKey: .title)
        try container.encode(changes, forKey: .changes)
        try container.encodeNullable(restoredFrom, forKey: .restoredFrom)
        try container.encode(erased, forKey: .erased)
        try container.encodeIfPresent(patch, forKey: .patch)
    }
}
