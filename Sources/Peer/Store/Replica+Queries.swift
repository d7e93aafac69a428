import Merge

/// One note as listed: everything but the body.
public struct NoteRow: Hashable, Sendable {
    public let id: NoteID
    public let title: String
    /// Where the note shows: its folder if that folder is alive, else Uncategorized (nil).
    public let folder: FolderID?
    public let trashed: Bool
    public let pinned: Bool
    public let color: String?
    /// Sorted; set while a listing reads its rows.
    public internal(set) var tags: [String]
    public let created: UInt64
    public let modified: UInt64
    public let conflictOf: NoteID?
}

extension NoteRow {
    /// The listing order (the `notes_in_list_order` index's): pinned first, then most recently
    /// modified, then the larger id. Written out, not as a tuple comparison, which a listing of
    /// 10,000 notes paid for in runtime type lookups.
    public func listsBefore(_ other: NoteRow) -> Bool {
        if pinned != other.pinned { return pinned }
        if modified != other.modified { return modified > other.modified }
        return id > other.id
    }
}

/// Which notes to list. The default lists every note not in the Trash.
public struct NoteFilter: Sendable, Equatable {
    /// nil: any folder; `.some(nil)`: Uncategorized only; `.some(id)`: directly in that folder
    /// (where the note shows, after deleted folders are resolved).
    public var folder: FolderID??
    public var tag: String?
    /// false: notes outside the Trash; true: only the Trash.
    public var trashed: Bool
    /// nil: both; true: only conflict copies; false: no conflict copies.
    public var conflictCopies: Bool?
    /// nil: both; true: only pinned; false: only unpinned.
    public var pinned: Bool?
    /// Case-insensitive text that the title or the body's text must contain.
    public var text: String?

    public init(
        folder: FolderID?? = nil, tag: String? = nil, trashed: Bool = false, conflictCopies: Bool? = nil,
        pinned: Bool? = nil, text: String? = nil
    ) {
        self.folder = folder
        self.tag = tag
        self.trashed = trashed
        self.conflictCopies = conflictCopies
        self.pinned = pinned
        self.text = text
    }
}

/// A live folder with its place in the resolved tree.
public struct FolderSummary: Hashable, Sendable {
    public let id: FolderID
    public let name: String
    /// The effective parent after cycles and deleted parents are resolved (nil: top level).
    public let parent: FolderID?
    /// Names from the top, e.g. ["Work", "Projects"].
    public let path: [String]
    public let noteCount: Int
}

/// One revision in a record's history.
public struct StoredRevision: Hashable, Sendable {
    public let revision: RevisionID
    public let parents: [RevisionID]
    public let hlc: HLC
    public let author: ReplicaID
    /// nil when the content was purged.
    public let note: Note?
    public let isTombstone: Bool
}

/// A device on the roster.
public struct RosterEntry: Hashable, Sendable {
    public let record: RecordID
    public let device: Device
}

extension Replica {
    // MARK: - Single records

    /// The current state of a live note, or nil when there is none (never was, or purged).
    public func note(_ id: NoteID) throws -> Note? {
        guard let (fields, _) = try noteRow(id) else { return nil }
        return fields.note(body: try blocks(of: id, fields.body))
    }

    func noteRow(_ id: NoteID) throws -> (RevisionCodec.NoteFields<BlockHash>, HLC)? {
        guard let row = try database.first(
            """
            SELECT title, body, folder, trashed, pinned, color, created, modified, conflict_of, hlc
            FROM notes WHERE id = ?1
            """, [.record(id)], { row in
                (
                    RevisionCodec.NoteFields<BlockHash>(
                        title: row.text(0), body: Self.hashes(row.blob(1)), folder: row.recordID(2),
                        trashed: row.int(3) != 0, pinned: row.int(4) != 0, color: row.optionalText(5), tags: [],
                        created: UInt64(bitPattern: row.int(6)), modified: UInt64(bitPattern: row.int(7)),
                        conflictOf: row.recordID(8)),
                    HLC(rawValue: UInt64(bitPattern: row.int(9)))
                )
            })
        else { return nil }
        var (fields, hlc) = row
        fields.tags = Set(try database.rows("SELECT tag FROM note_tags WHERE note = ?1", [.record(id)]) { $0.text(0) })
        return (fields, hlc)
    }

    public func folder(_ id: FolderID) throws -> Folder? {
        try database.first("SELECT name, parent, moved_at FROM folders WHERE id = ?1", [.record(id)]) { row in
            Folder(
                name: row.text(0), parent: row.recordID(1),
                movedAt: HLC(rawValue: UInt64(bitPattern: row.int(2))))
        }
    }

    public func device(_ id: RecordID) throws -> Device? {
        try database.first("SELECT name, public_key, revoked, added FROM devices WHERE id = ?1", [.record(id)]) { row in
            Device(name: row.text(0), publicKey: row.blob(1), revoked: row.int(2) != 0, added: UInt64(row.int(3)))
        }
    }

    // MARK: - Lists

    func liveFolders() throws -> [FolderID: Folder] {
        let rows = try database.rows("SELECT id, name, parent, moved_at FROM folders") { row in
            (
                row.recordID(0)!,
                Folder(
                    name: row.text(1), parent: row.recordID(2),
                    movedAt: HLC(rawValue: UInt64(bitPattern: row.int(3))))
            )
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    /// Notes matching `filter`: pinned first, then most recently modified.
    public func listNotes(_ filter: NoteFilter = NoteFilter()) throws -> [NoteRow] {
        let tree = FolderTree.resolve(try liveFolders())
        var tagged: Set<NoteID>?
        if let tag = filter.tag {
            tagged = Set(try database.rows("SELECT note FROM note_tags WHERE tag = ?1", [.text(tag)]) { $0.recordID(0)! })
        }
        let tags = try everyNoteTags()
        let needle = filter.text?.lowercased()
        var results: [NoteRow] = []
        try database.statement("SELECT \(Self.summaryColumns), body FROM notes").forEach { row in
            let summary = Self.summary(row, tree: tree, tags: tags)
            let id = summary.id
            guard summary.trashed == filter.trashed else { return }
            if let copies = filter.conflictCopies, copies != (summary.conflictOf != nil) { return }
            if let pinned = filter.pinned, pinned != summary.pinned { return }
            if let tagged, !tagged.contains(id) { return }
            if let wanted = filter.folder, wanted != summary.folder { return }
            if let needle {
                if !summary.title.lowercased().contains(needle) {
                    let text = try self.bodyText(of: id, Self.hashes(row.blob(9)))
                    guard text.lowercased().contains(needle) else { return }
                }
            }
            results.append(summary)
        }
        results.sort { $0.listsBefore($1) }
        return results
    }

    /// Every note's tags (in one pass over `note_tags`), for listings of the whole library.
    func everyNoteTags() throws -> [NoteID: [String]] {
        var tags: [NoteID: [String]] = [:]
        try database.statement("SELECT note, tag FROM note_tags").forEach { tags[$0.recordID(0)!, default: []].append($0.text(1)) }
        return tags
    }

    static let summaryColumns = "id, title, folder, trashed, pinned, color, created, modified, conflict_of"

    static func summary(_ row: Row, tree: [FolderID: FolderID?], tags: [NoteID: [String]]) -> NoteRow {
        let id = row.recordID(0)!
        let storedFolder = row.recordID(2)
        return NoteRow(
            id: id, title: row.text(1), folder: storedFolder.flatMap { tree[$0] != nil ? $0 : nil }, trashed: row.int(3) != 0,
            pinned: row.int(4) != 0, color: row.optionalText(5), tags: (tags[id] ?? []).sorted(),
            created: UInt64(bitPattern: row.int(6)), modified: UInt64(bitPattern: row.int(7)),
            conflictOf: row.recordID(8))
    }

    /// One live note as listed (the Trash included), without reading any other note or the
    /// folder tree.
    public func noteSummary(_ id: NoteID) throws -> NoteRow? {
        let tags = try database.rows("SELECT tag FROM note_tags WHERE note = ?1", [.record(id)]) { $0.text(0) }
        guard let (summary, stored) = try database.first("SELECT \(Self.summaryColumns) FROM notes WHERE id = ?1", [.record(id)], {
            (Self.summary($0, tree: [:], tags: [id: tags]), $0.recordID(2))
        }) else { return nil }
        // Where it shows: its folder if that folder is live (one key lookup, not the tree).
        guard let folder = stored, try self.folder(folder) != nil else { return summary }
        return NoteRow(
            id: summary.id, title: summary.title, folder: folder, trashed: summary.trashed, pinned: summary.pinned, color: summary.color,
            tags: summary.tags, created: summary.created, modified: summary.modified, conflictOf: summary.conflictOf)
    }

    /// A live note's title alone (for events), or nil.
    public func noteTitle(_ id: NoteID) throws -> String? {
        try database.first("SELECT title FROM notes WHERE id = ?1", [.record(id)]) { $0.text(0) }
    }

    /// The live note ids just before and after `id` in id order: enough to find the shortest
    /// prefix of `id` that no other note shares.
    public func neighbouringNoteIDs(of id: NoteID) throws -> [NoteID] {
        let before = try database.first("SELECT id FROM notes WHERE id < ?1 ORDER BY id DESC LIMIT 1", [.record(id)]) { $0.recordID(0)! }
        let after = try database.first("SELECT id FROM notes WHERE id > ?1 ORDER BY id LIMIT 1", [.record(id)]) { $0.recordID(0)! }
        return [before, after].compactMap { $0 }
    }

    /// Every live folder with its resolved parent and path, sorted by path.
    public func listFolders() throws -> [FolderSummary] {
        let folders = try liveFolders()
        let tree = FolderTree.resolve(folders)
        // The kept counts (`NoteCountChanges`): the folders' rows, not every note's.
        var counts: [FolderID: Int] = [:]
        for (folder, count) in try database.rows("SELECT folder, notes FROM folder_note_counts", [], { ($0.recordID(0)!, Int($0.int(1))) })
        where tree[folder] != nil {
            counts[folder] = count
        }
        func path(_ id: FolderID) -> [String] {
            var names: [String] = []
            var cursor: FolderID? = id
            while let current = cursor, let folder = folders[current], names.count <= folders.count {
                names.insert(folder.name, at: 0)
                cursor = tree[current] ?? nil
            }
            return names
        }
        return folders.map { id, folder in
            FolderSummary(id: id, name: folder.name, parent: tree[id] ?? nil, path: path(id), noteCount: counts[id] ?? 0)
        }.sorted { ($0.path.joined(separator: "/").lowercased(), $0.id) < ($1.path.joined(separator: "/").lowercased(), $1.id) }
    }

    /// Every device on the roster, revoked ones included.
    public func listDevices() throws -> [RosterEntry] {
        try database.rows("SELECT id, name, public_key, revoked, added FROM devices ORDER BY name, id") { row in
            RosterEntry(
                record: row.recordID(0)!,
                device: Device(name: row.text(1), publicKey: row.blob(2), revoked: row.int(3) != 0, added: UInt64(row.int(4))))
        }
    }

    /// The revisions of a record, newest first (by HLC).
    public func history(of id: RecordID) throws -> [StoredRevision] {
        var unusedHashes: [Block: BlockHash] = [:]
        return try revisionRows(record: id).sorted { $0.stamp > $1.stamp }.map { row in
            let note = row.kind == .note ? try loadNote(row, hashes: &unusedHashes).live : nil
            return StoredRevision(
                revision: row.id, parents: row.parents, hlc: row.hlc, author: row.author, note: note, isTombstone: row.tombstone)
        }
    }

    /// Every record id that has ever existed here (live or tombstone), by kind.
    public func recordIDs(kind: RecordKind) throws -> [RecordID] {
        try database.rows("SELECT DISTINCT record FROM heads WHERE kind = ?1 ORDER BY record", [.integer(Int64(kind.rawValue))]) {
            $0.recordID(0)!
        }
    }

    /// Live notes, the Trash and conflict copies included: the count kept as notes are written
    /// (`NoteCountChanges`), so `status` does not count the library.
    public var noteCount: Int {
        get throws { Int(try database.first("SELECT value FROM meta WHERE key = 'note_count'") { $0.int(0) } ?? 0) }
    }

    /// Every live note's id (the Trash and conflict copies included), in id order. Read from
    /// the listing-order index, which holds every id in a sixth of the table's pages (the
    /// table itself is the id's b-tree, titles and block lists included), then sorted here.
    /// `on`: this replica's connection, or its `ParallelReader`'s.
    public func noteIDs(on database: Database? = nil) throws -> [NoteID] {
        var ids = try (database ?? self.database).rows("SELECT id FROM notes INDEXED BY notes_in_list_order") { $0.recordID(0)! }
        ids.sort()
        return ids
    }
}
