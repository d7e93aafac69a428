import Merge

/// Where a page of `listNotes` starts: just after the note with this sort key (pinned first,
/// then `modified` newest first, then id descending).
public struct NoteListPosition: Hashable, Sendable {
    public let pinned: Bool
    public let modified: UInt64
    public let id: NoteID

    public init(pinned: Bool, modified: UInt64, id: NoteID) {
        self.pinned = pinned
        self.modified = modified
        self.id = id
    }
}

/// Queries that read only what they answer about: one note, one folder and its ancestors, the
/// ids next to an id, a page of the list. A request built from these costs the same at 1,000
/// notes as at 100,000 (docs/benchmarks.md, "Cost that grows with the library"; the proof is
/// `LibrarySizeCostTests`, which counts SQLite's steps).
extension Replica {
    // MARK: - Notes

    /// Above this many notes, a listing reads every tag of the library in one pass (cheaper
    /// than a lookup per note); up to it, a page looks up its notes' own.
    public static let tagsReadAtOnceAbove = 1_000

    /// A live note (the Trash included) exists, read from the primary key alone.
    public func noteExists(_ id: NoteID) throws -> Bool {
        try database.first("SELECT 1 FROM notes WHERE id = ?1", [.record(id)]) { _ in true } ?? false
    }

    /// Live note ids whose hex digits start with `hexPrefix` (lower-case hex, no dashes), in
    /// id order, at most `limit`: a range of the primary key, not a scan of every id.
    public func noteIDs(withHexPrefix hexPrefix: String, limit: Int) throws -> [NoteID] {
        try ids(in: "notes", withHexPrefix: hexPrefix, limit: limit)
    }

    /// A page of `listNotes(filter)`: the first `limit` matches after `position` (from the
    /// start when nil), in the same order. Walks the `notes_in_list_order` index, which holds
    /// every column a listing shows, so a page without filters reads `limit` index entries and
    /// never the table; each filter skips rows as it walks. A page's tags come in the same
    /// statement (one row per tag, a note's rows adjacent since the order ends on the id); a
    /// listing outside the Trash of more than `tagsReadAtOnceAbove` notes reads every tag in
    /// one pass instead of looking each note's up.
    public func listNotes(
        _ filter: NoteFilter, limit: Int, after position: NoteListPosition?, tagsReadAtOnceAbove: Int = Replica.tagsReadAtOnceAbove
    ) throws -> [NoteRow] {
        guard limit > 0 else { return [] }
        var tagged: Set<NoteID>?
        if let tag = filter.tag {
            tagged = Set(try database.rows("SELECT note FROM note_tags WHERE tag = ?1", [.text(tag)]) { $0.recordID(0)! })
        }
        var everyTag: [NoteID: [String]]?
        let noteCount = try noteCount
        // Outside the Trash only: an empty Trash must cost nothing, whatever the library holds.
        if !filter.trashed, limit > tagsReadAtOnceAbove, noteCount > tagsReadAtOnceAbove {
            everyTag = try everyNoteTags()
        }
        // pinned 2 and an id of 17 0xff bytes sort after every stored note: the start.
        let start: [SQLValue] = position.map { [.integer($0.pinned ? 1 : 0), .integer(Int64(bitPattern: $0.modified)), .record($0.id)] }
            ?? [.integer(2), .integer(Int64.max), .blob([UInt8](repeating: 0xff, count: 17))]
        let needle = filter.text?.lowercased()
        var liveFolders: [FolderID: Bool] = [:]
        var results: [NoteRow] = []
        // Sized once: grown by doubling, a listing of every note copied (and faulted in) the
        // rows read so far several times over.
        results.reserveCapacity(min(limit, noteCount))
        /// The note whose rows are being read, and whether it is listed.
        var current: (id: NoteID, listed: Bool)?
        var failure: (any Error)?
        // Without a text filter every column comes from the index (migration 11); the body's
        // block list, in the table, only when the text must be searched.
        try database.statement(
            """
            SELECT \(Self.summaryColumns), \(everyTag == nil ? "tag" : "NULL"), \(needle == nil ? "NULL" : "body")
            FROM notes INDEXED BY notes_in_list_order \(everyTag == nil ? "LEFT JOIN note_tags ON note = id" : "")
            WHERE trashed = ?1 AND (pinned, modified, id) < (?2, ?3, ?4)
            ORDER BY pinned DESC, modified DESC, id DESC
            """
        ).visit([.integer(filter.trashed ? 1 : 0)] + start) { row in
            do {
                let id = row.recordID(0)!
                let tag = row.optionalText(9)
                if let current, current.id == id {
                    if current.listed, let tag { results[results.count - 1].tags.append(tag) }
                    return true
                }
                if let current, current.listed { results[results.count - 1].tags.sort() }
                guard results.count < limit else { return false }
                current = (id, false)
                let pinned = row.int(4) != 0
                if let copies = filter.conflictCopies, copies != !row.isNull(8) { return true }
                if let wanted = filter.pinned, wanted != pinned { return true }
                if let tagged, !tagged.contains(id) { return true }
                let stored = row.recordID(2)
                var shown: FolderID?
                if let stored {
                    if liveFolders[stored] == nil { liveFolders[stored] = try folder(stored) != nil }
                    shown = liveFolders[stored] == true ? stored : nil
                }
                if let wanted = filter.folder, wanted != shown { return true }
                let title = row.text(1)
                if let needle, !title.lowercased().contains(needle) {
                    let text = try bodyText(of: id, Self.hashes(row.blob(10)))
                    guard text.lowercased().contains(needle) else { return true }
                }
                current = (id, true)
                results.append(NoteRow(
                    id: id, title: title, folder: shown, trashed: row.int(3) != 0, pinned: pinned, color: row.optionalText(5),
                    tags: everyTag.map { $0[id] ?? [] } ?? tag.map { [$0] } ?? [], created: UInt64(bitPattern: row.int(6)), modified: UInt64(bitPattern: row.int(7)),
                    conflictOf: row.recordID(8)))
                return true
            } catch {
                failure = error
                return false
            }
        }
        if let failure { throw failure }
        if let current, current.listed { results[results.count - 1].tags.sort() }
        return results
    }

    // MARK: - Folders

    /// One live folder with its resolved parent, path and note count, reading only it and its
    /// ancestors; nil when it is not live.
    public func folderSummary(_ id: FolderID) throws -> FolderSummary? {
        guard let chain = try resolvedAncestry(id) else { return nil }
        return FolderSummary(
            id: id, name: chain[0].folder.name, parent: chain.count > 1 ? chain[1].id : nil, path: chain.reversed().map(\.folder.name),
            noteCount: try folderNoteCount(id))
    }

    /// A live folder's path from the top (["Work", "Projects"]), or nil when it is not live.
    public func folderPath(_ id: FolderID) throws -> [String]? {
        try resolvedAncestry(id)?.reversed().map(\.folder.name)
    }

    /// Every live folder's path, without counting notes: what a list of notes shows.
    public func folderPaths() throws -> [FolderID: [String]] {
        let folders = try liveFolders()
        let tree = FolderTree.resolve(folders)
        var paths: [FolderID: [String]] = [:]
        func path(_ id: FolderID) -> [String] {
            if let known = paths[id] { return known }
            let own = folders[id]?.name ?? ""
            let result = (tree[id] ?? nil).map { path($0) + [own] } ?? [own]
            paths[id] = result
            return result
        }
        for id in folders.keys { _ = path(id) }
        return paths
    }

    /// Live folders with exactly this name, anywhere in the tree (the `folders_by_name` index).
    public func folders(named name: String) throws -> [FolderSummary] {
        try database.rows("SELECT id FROM folders WHERE name = ?1 ORDER BY id", [.text(name)]) { $0.recordID(0)! }
            .compactMap { try folderSummary($0) }
    }

    /// The live folders shown directly inside `parent` (the `folders_by_parent` index; a folder
    /// whose stored parent is `parent` but that a cycle put at the top level is not one).
    public func subfolders(of parent: FolderID) throws -> [FolderSummary] {
        try database.rows("SELECT id FROM folders WHERE parent = ?1 ORDER BY id", [.record(parent)]) { $0.recordID(0)! }
            .compactMap { try folderSummary($0) }.filter { $0.parent == parent }
    }

    /// Live folder ids whose hex digits start with `hexPrefix`, in id order, at most `limit`.
    public func folderIDs(withHexPrefix hexPrefix: String, limit: Int) throws -> [FolderID] {
        try ids(in: "folders", withHexPrefix: hexPrefix, limit: limit)
    }

    /// The live folder ids just before and after `id` in id order (for its short form).
    public func neighbouringFolderIDs(of id: FolderID) throws -> [FolderID] {
        let before = try database.first("SELECT id FROM folders WHERE id < ?1 ORDER BY id DESC LIMIT 1", [.record(id)]) { $0.recordID(0)! }
        let after = try database.first("SELECT id FROM folders WHERE id > ?1 ORDER BY id LIMIT 1", [.record(id)]) { $0.recordID(0)! }
        return [before, after].compactMap { $0 }
    }

    /// Notes outside the Trash stored in `folder` (kept as notes are written, `NoteCountChanges`).
    func folderNoteCount(_ folder: FolderID) throws -> Int {
        Int(try database.first("SELECT notes FROM folder_note_counts WHERE folder = ?1", [.record(folder)]) { $0.int(0) } ?? 0)
    }

    /// The folder and its ancestors as shown, `[folder, parent, grandparent, …]`, by
    /// `FolderTree.resolve`'s rules read along one chain: a missing or deleted parent ends it
    /// at the top level, and when the chain runs into a cycle, the cycle's folder with the
    /// latest `movedAt` (tie: larger id) is at the top level. Each folder has one parent, so
    /// the only cycle a folder can reach is the one its chain ends in: the answer is the same
    /// as resolving the whole tree. nil when `id` is not live.
    func resolvedAncestry(_ id: FolderID) throws -> [(id: FolderID, folder: Folder)]? {
        guard let first = try folder(id) else { return nil }
        var chain: [(id: FolderID, folder: Folder)] = [(id, first)]
        var positions: [FolderID: Int] = [id: 0]
        while let parent = chain[chain.count - 1].folder.parent {
            if let start = positions[parent] {
                let cycle = chain[start...]
                let cut = cycle.max { ($0.folder.movedAt, $0.id) < ($1.folder.movedAt, $1.id) }!.id
                return Array(chain[...positions[cut]!])
            }
            guard let folder = try folder(parent) else { break }
            positions[parent] = chain.count
            chain.append((parent, folder))
        }
        return chain
    }

    // MARK: - Id prefixes

    /// Ids of `table` (`notes` or `folders`, keyed by a 16-byte id) in the byte range that
    /// `hexPrefix` names: the prefix padded with 0 bits up to the prefix padded with 1 bits.
    private func ids(in table: String, withHexPrefix hexPrefix: String, limit: Int) throws -> [RecordID] {
        let nibbles = hexPrefix.lowercased().compactMap(\.hexDigitValue).map(UInt8.init)
        guard nibbles.count == hexPrefix.count, nibbles.count <= 32, limit > 0 else { return [] }
        var low = [UInt8](repeating: 0, count: 16), high = [UInt8](repeating: 0xff, count: 16)
        for (index, nibble) in nibbles.enumerated() {
            if index % 2 == 0 {
                low[index / 2] = nibble << 4
                high[index / 2] = nibble << 4 | 0x0f
            } else {
                low[index / 2] |= nibble
                high[index / 2] = (high[index / 2] & 0xf0) | nibble
            }
        }
        return try database.rows(
            "SELECT id FROM \(table) WHERE id BETWEEN ?1 AND ?2 ORDER BY id LIMIT ?3", [.blob(low), .blob(high), .integer(Int64(limit))]
        ) { $0.recordID(0)! }
    }
}
