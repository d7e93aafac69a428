import Merge
import Peer

/// The replica in-process (issue 3): importing a library in one transaction, single-edit
/// transactions with `synchronous=FULL`, listing and reading with 10,000 notes, and what the
/// database costs on disk, for the library and for the history of one much-edited note.
enum StoreBench {
    static let libraryNotes = 10_000
    static let singleEdits = 500
    static let historyEdits = 1_000

    static func run() throws {
        let scratch = try ScratchDirectory("notes-bench-store")
        let path = scratch.path + "/notes.db"
        let notes = LibraryGenerator.notes(libraryNotes, seed: 3)
        let htmlBytes = notes.reduce(0) { $0 + $1.html.utf8.count + $1.title.utf8.count }
        Conditions.print([
            "library: \(Measure.count(notes.count)) generated notes, \(Measure.bytes(htmlBytes)) of HTML and titles; database in \(scratch.path) (\(Conditions.filesystem(of: scratch.path)))",
            "SQLite WAL, synchronous=FULL (the replica's settings); in-process on Replica, release build",
        ])
        var table = Table(["figure", "value", "detail"])

        // Import: HTML → blocks → one transaction.
        var replica: Replica? = try Replica(path: path)
        let (bodies, splitTime) = Measure.once { notes.map { HTMLBlocks.split($0.html) } }
        let blockCount = bodies.reduce(0) { $0 + $1.count }
        let importCPUBefore = Measure.processCPUMilliseconds()
        let importWritesBefore = ProcessProbe.writes()
        let (ids, importTime) = try Measure.once {
            try replica!.inOneTransaction {
                try zip(notes, bodies).map { note, body in try replica!.createNote(title: note.title, body: body, now: unixMilliseconds()) }
            }
        }
        let importCPU = Measure.processCPUMilliseconds() - importCPUBefore
        let importWrites = ProcessProbe.writes().bytes - importWritesBefore.bytes
        table.add([
            "import \(Measure.count(notes.count)) notes, one transaction", Measure.ms(importTime + splitTime),
            "\(Measure.count(Int(Double(notes.count) / ((importTime + splitTime) / 1_000)))) notes/s, \(Measure.decimal(Double(htmlBytes) / 1_048_576 / ((importTime + splitTime) / 1_000), places: 1)) MiB/s; split \(Measure.ms(splitTime)) + store \(Measure.ms(importTime)) (CPU \(Measure.ms(importCPU))); \(Measure.count(blockCount)) blocks; wrote \(Measure.bytes(importWrites)) (database + WAL)",
        ])

        try checkpoint(replica!)
        let librarySize = fileSize(path) + fileSize(path + "-wal")
        table.add([
            "database, \(Measure.count(notes.count)) notes", Measure.bytes(librarySize),
            "\(Measure.count(librarySize / notes.count)) B/note; \(Measure.decimal(Double(librarySize) / Double(htmlBytes))) × the HTML (file + WAL after a checkpoint); \(describe(try tableSizes(replica!)))",
        ])

        // A backup as `notesctl backup` takes it (the daemon's part): online backup through a
        // read connection of its own, then integrity_check of the copy.
        let backupPath = scratch.path + "/backup.db"
        var backupSteps = 0
        let (_, backupTime) = try Measure.once { backupSteps = try OnlineBackup.copy(from: path, to: backupPath).steps }
        table.add([
            "backup of the \(Measure.count(notes.count))-note database", Measure.ms(backupTime),
            "OnlineBackup.copy: \(backupSteps) steps of \(OnlineBackup.defaultPagesPerStep) pages in one read snapshot, then integrity_check; \(Measure.bytes(fileSize(backupPath))) copy",
        ])

        // Reopening: what the daemon pays at start (quick_check, migrations, the replica id).
        replica = nil
        let reopenTimes = try Measure.repeatedly(runs: 5, warmUp: 1) { _ = try Replica(path: path) }
        replica = try Replica(path: path)
        let store = replica!
        table.add(["open the replica (quick_check, migrate)", Measure.ms(Measure.percentile(reopenTimes, 0.5)), "median of 5, page cache warm"])

        // Listing and reading.
        let listTimes = try Measure.repeatedly(runs: 20) { _ = try store.listNotes() }
        table.add([
            "listNotes(), \(Measure.count(notes.count)) notes", Measure.ms(Measure.percentile(listTimes, 0.5)),
            "p95 \(Measure.ms(Measure.percentile(listTimes, 0.95))), 20 runs",
        ])
        var random = SplitMix64(seed: 33)
        let readTimes = try Measure.repeatedly(runs: 2_000) { _ = try store.note(ids[random.below(ids.count)]) }
        table.add([
            "note(id), random notes", Measure.ms(Measure.percentile(readTimes, 0.5)),
            "p99 \(Measure.ms(Measure.percentile(readTimes, 0.99))), 2,000 reads",
        ])

        // The sync core without network, encryption or a second process: what the initial
        // sync of two daemons costs at least.
        let batching = SyncSession.Configuration(deviceName: "bench")
        let replication = try CatchUpBench.replicate(from: store, into: scratch.path + "/copy.db", batching: batching, expecting: notes.count)
        table.add([
            "replicate \(Measure.count(notes.count)) notes to an empty replica", Measure.ms(replication.sendWall + replication.applyWall + replication.settleWall),
            "in-process, no network or encryption: entries(missingFrom:) \(Measure.ms(replication.sendWall)) + apply \(Measure.ms(replication.applyWall)) + checkpoint \(Measure.ms(replication.settleWall)), \(replication.batches) batches (≤ \(Measure.count(batching.maxBatchEntries)) entries, ~\(Measure.bytes(batching.maxBatchBytes)), as the daemon sends); CPU \(Measure.ms(replication.processCPU)); wrote \(Measure.bytes(replication.writtenBytes)) to end with a \(Measure.bytes(replication.finalSize)) database + WAL",
        ])

        // Single edits: one paragraph of a random note per transaction, each a new revision.
        var content = NoteContent(seed: 333)
        var editTimes: [Double] = []
        for edit in 0..<singleEdits {
            let id = ids[random.below(ids.count)]
            guard let current = try store.note(id) else { throw BenchError("note \(id) vanished") }
            let (body, _) = LibraryGenerator.replacingParagraph(in: current.body, choosing: edit, with: content.paragraph())
            try store.markOffered()
            let (_, time) = try Measure.once { try store.editNote(id, NoteEdit(body: body), now: unixMilliseconds()) }
            editTimes.append(time)
        }
        let meanEdit = editTimes.reduce(0, +) / Double(editTimes.count)
        table.add([
            "single-edit transactions", "\(Int(1_000 / meanEdit))/s",
            "p50 \(Measure.ms(Measure.percentile(editTimes, 0.5))), p99 \(Measure.ms(Measure.percentile(editTimes, 0.99))); \(singleEdits) edits of one paragraph, random notes",
        ])

        // History: one note edited 1,000 times, one paragraph each, never coalesced.
        let noteID = ids[ids.count / 2]
        guard let start = try store.note(noteID) else { throw BenchError("note \(noteID) vanished") }
        let noteHTML = HTMLBlocks.join(start.body).utf8.count
        try checkpoint(store)
        let before = fileSize(path) + fileSize(path + "-wal")
        let usedBefore = try usedBytes(store)
        let tablesBefore = try tableSizes(store)
        var body = start.body
        var changedBytes = 0
        for edit in 0..<historyEdits {
            let (next, changed) = LibraryGenerator.replacingParagraph(in: body, choosing: edit, with: content.paragraph())
            body = next
            changedBytes += changed.encoded().count
            try store.markOffered()
            try store.editNote(noteID, NoteEdit(body: body), now: unixMilliseconds())
        }
        try checkpoint(store)
        let growth = fileSize(path) + fileSize(path + "-wal") - before
        let usedGrowth = try usedBytes(store) - usedBefore
        let tablesAfter = try tableSizes(store)
        let grown = tablesAfter.map { after in
            TableSize(name: after.name, bytes: after.bytes - (tablesBefore.first { $0.name == after.name }?.bytes ?? 0), unused: 0)
        }
        table.add([
            "database growth, \(Measure.count(historyEdits)) edits of one note", Measure.bytes(growth),
            "\(growth / historyEdits) B/edit (pages in use: \(usedGrowth / historyEdits) B/edit; the file first reused its \(Measure.bytes(before - usedBefore)) of free pages); the changed blocks are \(changedBytes / historyEdits) B/edit; the note is \(start.body.count) blocks, \(noteHTML) B of HTML (whole copies would be \(Measure.bytes(noteHTML * historyEdits))); grown: \(grown.filter { $0.bytes != 0 }.sorted { $0.bytes > $1.bytes }.map { "\($0.name) \(Measure.bytes($0.bytes))" }.joined(separator: ", "))",
        ])
        table.print()
    }

    struct TableSize {
        let name: String
        let bytes: Int
        let unused: Int
    }

    /// Pages per table and index (SQLite's `dbstat`), largest first; empty when this SQLite
    /// was built without it.
    private static func tableSizes(_ replica: Replica) throws -> [TableSize] {
        (try? replica.database.rows("SELECT name, sum(pgsize), sum(unused) FROM dbstat GROUP BY name ORDER BY 2 DESC") { row in
            TableSize(name: row.text(0), bytes: Int(row.int(1)), unused: Int(row.int(2)))
        }) ?? []
    }

    private static func describe(_ tables: [TableSize]) -> String {
        guard !tables.isEmpty else { return "no dbstat in this SQLite" }
        return tables.prefix(4).map { "\($0.name) \(Measure.bytes($0.bytes)) (\(100 * $0.unused / max(1, $0.bytes))% unused)" }.joined(separator: ", ")
    }

    /// The database's pages that hold something (all pages less the free list).
    private static func usedBytes(_ replica: Replica) throws -> Int {
        let pages = try replica.database.first("PRAGMA page_count") { Int($0.int(0)) } ?? 0
        let free = try replica.database.first("PRAGMA freelist_count") { Int($0.int(0)) } ?? 0
        let size = try replica.database.first("PRAGMA page_size") { Int($0.int(0)) } ?? 0
        return (pages - free) * size
    }

    /// Moves the WAL into the database file and truncates it, so file sizes say what is kept.
    private static func checkpoint(_ replica: Replica) throws {
        try replica.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}
