import Merge

/// A web session as stored: the hash of its secret, never the secret (docs/web.md).
public struct StoredWebSession: Hashable, Sendable {
    public var hash: String
    /// Milliseconds since 1970.
    public var created: Int64
    public var lastUsed: Int64

    public init(hash: String, created: Int64, lastUsed: Int64) {
        self.hash = hash
        self.created = created
        self.lastUsed = lastUsed
    }
}

/// One `searchNotes` hit.
public struct SearchResult: Hashable, Sendable {
    public let note: NoteRow
    /// Words around the best match; matched words between `\u{2}` and `\u{3}`.
    public let snippet: String
    /// bm25 (lower is better; title words weigh ten times body words).
    public let rank: Double
}

/// A search's expression and filters, with the folder tree resolved, ready to rank in one
/// piece or in two halves.
public struct PreparedSearch: Sendable {
    let expression: String
    public let limit: Int
    let folder: FolderID??
    let tag: String?
    let tree: [FolderID: FolderID?]
}

/// Which documents of the search index a ranking reads (by FTS5 rowid).
public enum SearchPart: Sendable {
    case whole
    case upTo(Int64)
    case after(Int64)
}

extension Replica {
    // MARK: - Web sessions (local, never synced)

    public func webSessions() throws -> [StoredWebSession] {
        try database.rows("SELECT hash, created, last_used FROM web_sessions ORDER BY created") { row in
            StoredWebSession(hash: row.text(0), created: row.int(1), lastUsed: row.int(2))
        }
    }

    public func saveWebSession(_ session: StoredWebSession) throws {
        try database.run(
            """
            INSERT INTO web_sessions (hash, created, last_used) VALUES (?1, ?2, ?3)
            ON CONFLICT(hash) DO UPDATE SET last_used = max(last_used, excluded.last_used)
            """, [.text(session.hash), .integer(session.created), .integer(session.lastUsed)])
    }

    public func deleteWebSessions(_ hashes: [String]) throws {
        try database.transaction {
            for hash in hashes { try database.run("DELETE FROM web_sessions WHERE hash = ?1", [.text(hash)]) }
        }
    }

    // MARK: - Full-text search

    /// Indexes (or re-indexes) a materialised note's title and body text. Runs inside the
    /// transaction that wrote the note, so the index never disagrees with the notes.
    func indexForSearch(_ id: NoteID, title: String, body: [BlockHash]) throws {
        let text = try bodyText(of: id, body)
        try removeFromSearch(id)
        try database.run(
            "INSERT INTO note_search (note, title, body) VALUES (?1, ?2, ?3)",
            [.record(id), .text(Self.withoutSnippetMarks(title)), .text(Self.withoutSnippetMarks(text))])
        let doc = try database.first("SELECT last_insert_rowid()") { $0.int(0) } ?? 0
        try database.run("INSERT INTO note_search_docs (note, doc) VALUES (?1, ?2)", [.record(id), .integer(doc)])
    }

    /// `text` without U+0002 and U+0003, which mark the matches in snippets: a note's own are
    /// dropped, so a note cannot fake a highlight. Both are single bytes in UTF-8 that no
    /// other character's bytes contain, and a control character is always a character of its
    /// own, so the bytes are checked, and filtered only in the rare text that holds one:
    /// filtering every text as characters was a fifth of indexing a catch-up's notes.
    static func withoutSnippetMarks(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x02 || $0 == 0x03 }) else { return text }
        return String(decoding: text.utf8.filter { $0 != 0x02 && $0 != 0x03 }, as: UTF8.self)
    }

    func removeFromSearch(_ id: NoteID) throws {
        guard let doc = try database.first("SELECT doc FROM note_search_docs WHERE note = ?1", [.record(id)], { $0.int(0) }) else { return }
        try database.run("DELETE FROM note_search WHERE rowid = ?1", [.integer(doc)])
        try database.run("DELETE FROM note_search_docs WHERE note = ?1", [.record(id)])
    }

    /// Records the notes the transaction materialised while writing in bulk in `search_pending`
    /// (`pendingSearchNotes`), up to 64 per statement: one statement per note was 3.6 % of a
    /// catch-up's applying.
    func flushSearchPending() throws {
        guard !pendingSearchNotes.isEmpty else { return }
        let notes = pendingSearchNotes.sorted()
        pendingSearchNotes.removeAll()
        var start = 0
        while start < notes.count {
            let rows = notes[start..<min(notes.count, start + Self.pendingInserts.maximumRows)]
            try insert(Self.pendingInserts, rows.map { .record($0) })
            start += rows.count
        }
    }

    /// A note materialised twice is pending once.
    private static let pendingInserts = MultiRowInsert(into: "search_pending", columns: "note", row: "(?)", maximumRows: 64, everyRowNew: false)

    /// Indexes up to `limit` of the notes a catch-up materialised: during one, each note is
    /// only recorded in `search_pending` (indexing 10,000 notes inside the catch-up's
    /// transactions tripled its time, docs/benchmarks.md); this indexes them, or removes those
    /// gone since, in one transaction. The engine runs it in steps once the catch-up ends
    /// (docs/architecture.md, "Search indexing after a catch-up"). Returns how many still wait.
    @discardableResult
    public func indexPendingSearch(limit: Int = .max) throws -> Int {
        let pending = try database.rows("SELECT note FROM search_pending LIMIT ?1", [.integer(Int64(clamping: limit))]) { $0.recordID(0)! }
        guard !pending.isEmpty else { return 0 }
        try write {
            for id in pending {
                if let (title, body) = try database.first("SELECT title, body FROM notes WHERE id = ?1", [.record(id)], { ($0.text(0), Self.hashes($0.blob(1))) }) {
                    try indexForSearch(id, title: title, body: body)
                } else {
                    try removeFromSearch(id)
                }
                try database.run("DELETE FROM search_pending WHERE note = ?1", [.record(id)])
            }
        }
        return try notesAwaitingSearchIndex
    }

    /// Notes waiting to be indexed (a catch-up is under way, or ended a moment ago).
    public var notesAwaitingSearchIndex: Int {
        get throws { try database.first("SELECT count(*) FROM search_pending") { $0.int(0) }.map(Int.init) ?? 0 }
    }

    /// Indexes every note once, for a library created before search existed (the migration
    /// leaves `search_index = 0`): one transaction, so an interrupted start redoes it.
    func buildSearchIndexIfNeeded() throws {
        guard try database.first("SELECT value FROM meta WHERE key = 'search_index'", [], { $0.int(0) }) == 0 else { return }
        try database.transaction {
            try database.execute("DELETE FROM note_search; DELETE FROM note_search_docs; DELETE FROM search_pending;")
            let notes = try database.rows("SELECT id, title, body FROM notes") { row in
                (row.recordID(0)!, row.text(1), Self.hashes(row.blob(2)))
            }
            for (id, title, body) in notes { try indexForSearch(id, title: title, body: body) }
            try setMeta("search_index", 1)
        }
    }

    /// The FTS5 expression for what a person typed: every word quoted (so no input is a
    /// syntax error) and a prefix (`quin` finds "quinces"); all words must match. Empty when
    /// the query has no words.
    ///
    /// Control characters separate words too (FTS5 reads the expression as a C string, so a
    /// NUL inside a word would end it mid-quote), and only the first `searchWordLimit` words,
    /// each cut to `searchWordLength` characters, count: a huge query cannot stall the engine.
    public static func searchExpression(_ query: String) -> String {
        query.split(whereSeparator: { $0.isWhitespace || $0.unicodeScalars.contains { $0.properties.generalCategory == .control } })
            .prefix(searchWordLimit)
            .map { word in "\"" + word.prefix(searchWordLength).replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }
            .joined(separator: " ")
    }

    public static let searchWordLimit = 32
    public static let searchWordLength = 100

    /// Notes outside the Trash whose title or body text matches every word of `query`,
    /// best first (bm25), at most `limit`; `folder` (`.some(nil)`: Uncategorized) and `tag`
    /// filter as `listNotes` does.
    public func searchNotes(_ query: String, limit: Int, folder: FolderID?? = nil, tag: String? = nil) throws -> [SearchResult] {
        let search = try prepareSearch(query, limit: limit, folder: folder, tag: tag)
        return try withTags(search.map { try rankedMatches($0, part: .whole, on: database) } ?? [])
    }

    /// A search ready to run, in one piece or in two halves (`SearchPart`); nil when the query
    /// has no words.
    public func prepareSearch(_ query: String, limit: Int, folder: FolderID?? = nil, tag: String? = nil) throws -> PreparedSearch? {
        let expression = Self.searchExpression(query)
        guard !expression.isEmpty, limit > 0 else { return nil }
        // The folder tree is resolved once per search, not once per hit.
        return PreparedSearch(expression: expression, limit: limit, folder: folder, tag: tag, tree: FolderTree.resolve(try liveFolders()))
    }

    /// Where to cut the index in two for a search ranked on both cores: half the largest
    /// document id, or nil when the index is too small for the split to pay.
    public func searchSplit() throws -> Int64? {
        guard let largest = try database.first("SELECT max(rowid) FROM note_search", [], { $0.int(0) }), largest >= Self.searchSplitFrom else { return nil }
        return largest / 2
    }

    /// Indexes with fewer documents than this are searched in one piece.
    public static let searchSplitFrom: Int64 = 2_000

    /// `summaryColumns` of the notes table as a search names them (`n.id, n.title, …`).
    static let searchSummaryColumns = summaryColumns.split(separator: ",").map { "n." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")

    /// The best `search.limit` matches in `part` of the index, on `database` (this replica's
    /// own connection, or its `ParallelReader`'s): no tags yet (`withTags` adds them to the
    /// hits kept). Reads nothing but through `database`, so the two halves of a search can
    /// run at once, each on its own connection.
    public func rankedMatches(_ search: PreparedSearch, part: SearchPart, on database: Database) throws -> [SearchResult] {
        var sql = """
            SELECT \(Self.searchSummaryColumns), s.rank, snippet(note_search, -1, char(2), char(3), '…', 16)
            FROM note_search s JOIN notes n ON n.id = s.note
            WHERE note_search MATCH ?1 AND s.rank MATCH 'bm25(0.0, 10.0, 1.0)' AND n.trashed = 0
            """
        var values: [SQLValue] = [.text(search.expression)]
        if let tag = search.tag {
            sql += " AND EXISTS (SELECT 1 FROM note_tags t WHERE t.note = n.id AND t.tag = ?2)"
            values.append(.text(tag))
        }
        switch part {
        case .whole: break
        case .upTo(let split): sql += " AND s.rowid <= \(split)"
        case .after(let split): sql += " AND s.rowid > \(split)"
        }
        // `ORDER BY rank` lets FTS5 hand rows over best first, so the snippets of rows past
        // the limit are never made (with a computed score SQLite would sort every match,
        // snippet included). A folder filter needs the resolved folder (a note in a deleted
        // folder shows as Uncategorized), so it applies after the query and the limit after it.
        sql += " ORDER BY s.rank" + (search.folder == nil ? " LIMIT \(search.limit)" : "")
        var results: [SearchResult] = []
        try database.statement(sql).visit(values) { row in
            let summary = Self.summary(row, tree: search.tree, tags: [:])
            if let folder = search.folder, summary.folder != folder { return true }
            results.append(SearchResult(note: summary, snippet: row.text(10), rank: row.double(9)))
            return results.count < search.limit
        }
        return results
    }

    /// The best `limit` of two halves' hits (bm25 is the same in both: FTS5 scores against
    /// the whole index, whatever the rowid bounds), with their tags.
    public func mergedSearch(_ first: [SearchResult], _ second: [SearchResult], limit: Int) throws -> [SearchResult] {
        // A stable sort: equal ranks keep the first half first.
        let merged = (first + second).enumerated().sorted { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }
        return try withTags(merged.prefix(limit).map(\.element))
    }

    /// `hits` with each note's tags, read on this replica's own connection.
    func withTags(_ hits: [SearchResult]) throws -> [SearchResult] {
        try hits.map { hit in
            var note = hit.note
            note.tags = try database.rows("SELECT tag FROM note_tags WHERE note = ?1", [.record(note.id)]) { $0.text(0) }.sorted()
            return SearchResult(note: note, snippet: hit.snippet, rank: hit.rank)
        }
    }

    /// FTS5's own check of the search index against its content (`PRAGMA integrity_check`
    /// does not look inside virtual tables); empty when healthy.
    func searchIndexProblems() throws -> [String] {
        var problems: [String] = []
        do {
            try database.run("INSERT INTO note_search (note_search, rank) VALUES ('integrity-check', 1)")
        } catch {
            problems.append("search index: \(error)")
        }
        let notes = try database.first("SELECT count(*) FROM notes") { $0.int(0) } ?? 0
        let indexed = try database.first("SELECT count(*) FROM note_search_docs") { $0.int(0) } ?? 0
        let documents = try database.first("SELECT count(*) FROM note_search") { $0.int(0) } ?? 0
        // While notes wait to be indexed after a catch-up, the counts differ by design.
        let pending = try database.first("SELECT count(*) FROM search_pending") { $0.int(0) } ?? 0
        if pending == 0 && notes != indexed || indexed != documents {
            problems.append("search index: \(notes) notes, \(indexed) indexed, \(documents) documents")
        }
        return problems
    }
}
