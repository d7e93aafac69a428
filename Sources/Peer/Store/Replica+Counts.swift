import Merge

/// How a transaction has changed the stored note counts: the library's (`meta.note_count`,
/// shown by `status`) and each folder's live notes (`folder_note_counts`, shown by folder
/// listings). Kept in memory as notes are written and stored once as the transaction
/// commits (`Replica.flushCounts`); before schema 13, triggers updated both on every row,
/// which during a catch-up was two more statements for each note (docs/decisions.md,
/// "Note counts kept by the replica").
struct NoteCountChanges: Equatable {
    var notes = 0
    var byFolder: [FolderID: Int] = [:]

    /// A note row written or deleted: `before` is what the row was (nil: there was none),
    /// `after` what it is now (nil: deleted). A note counts in its folder while not in Trash.
    mutating func note(before: (folder: FolderID?, trashed: Bool)?, after: (folder: FolderID?, trashed: Bool)?) {
        notes += (after == nil ? 0 : 1) - (before == nil ? 0 : 1)
        if let before, !before.trashed, let folder = before.folder { byFolder[folder, default: 0] -= 1 }
        if let after, !after.trashed, let folder = after.folder { byFolder[folder, default: 0] += 1 }
    }
}

extension Replica {
    /// Stores what the transaction in progress changed in the counts (see `NoteCountChanges`).
    func flushCounts() throws {
        if pendingCounts.notes != 0 {
            try database.run(
                "INSERT INTO meta (key, value) VALUES ('note_count', ?1) ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                [.integer(Int64(pendingCounts.notes))])
        }
        for (folder, change) in pendingCounts.byFolder.sorted(by: { $0.key < $1.key }) where change != 0 {
            try database.run(
                "INSERT INTO folder_note_counts (folder, notes) VALUES (?1, ?2) ON CONFLICT(folder) DO UPDATE SET notes = notes + excluded.notes",
                [.record(folder), .integer(Int64(change))])
        }
        pendingCounts = NoteCountChanges()
    }

    /// Counts the notes again from the rows, for a change made with SQL over many rows at
    /// once (a restored backup's notes with no revision left) rather than note by note.
    func recountNotes() throws {
        try database.execute(Self.recountNotesSQL)
        pendingCounts = NoteCountChanges()
    }

    /// Each folder's live notes, counted from the rows (what `integrityProblems` checks the
    /// kept counts against, too).
    static let folderCountsFromNotesSQL = "SELECT folder, count(*) FROM notes WHERE trashed = 0 AND folder IS NOT NULL GROUP BY folder"

    /// The counts computed from the notes themselves.
    static let recountNotesSQL = """
        DELETE FROM folder_note_counts;
        INSERT INTO folder_note_counts (folder, notes) \(folderCountsFromNotesSQL);
        INSERT INTO meta (key, value) VALUES ('note_count', (SELECT count(*) FROM notes))
            ON CONFLICT(key) DO UPDATE SET value = excluded.value;
        """
}
