import Merge

extension Replica {
    /// Checks SQLite's own integrity and the replica's invariants: every revision has a log
    /// entry and its blocks, the log is contiguous and matches the vector, every record has a
    /// head, each block pack's reference count is exact and it keeps no block nothing uses, and the kept note counts are right.
    /// Returns the problems found (empty: healthy).
    public func integrityProblems() throws -> [String] {
        var problems = try database.check(full: true).map { "sqlite: \($0)" }
        problems += try searchIndexProblems()
        let unlogged = try database.first(
            "SELECT count(*) FROM revisions r LEFT JOIN log l ON l.record = r.record AND l.revision = r.id WHERE l.stored IS NULL"
        ) { $0.int(0) } ?? 0
        if unlogged > 0 { problems.append("\(unlogged) revision(s) have no log entry") }
        let dangling = try database.first(
            "SELECT count(*) FROM log WHERE NOT EXISTS (SELECT 1 FROM revisions r WHERE r.record = log.record AND r.id = log.revision)"
        ) { $0.int(0) } ?? 0
        if dangling > 0 { problems.append("\(dangling) log entries name a missing revision") }
        let logShape = try database.rows("SELECT replica, count(*), max(seq) FROM log GROUP BY replica") { row in
            (ReplicaID(row.recordID(0)!), UInt64(row.int(1)), UInt64(row.int(2)))
        }
        for (replica, count, highest) in logShape {
            if count != highest { problems.append("log of \(replica) has gaps (\(count) entries, highest seq \(highest))") }
            if vector[replica] != highest { problems.append("vector says \(vector[replica]) for \(replica), log has \(highest)") }
        }
        if logShape.count != vector.counters.count { problems.append("vector and log disagree on which replicas exist") }
        let headless = try database.first(
            "SELECT count(DISTINCT record) FROM revisions r WHERE NOT EXISTS (SELECT 1 FROM heads h WHERE h.record = r.record)"
        ) { $0.int(0) } ?? 0
        if headless > 0 { problems.append("\(headless) record(s) have revisions but no head") }
        let notes = try database.first("SELECT count(*) FROM notes") { Int($0.int(0)) } ?? 0
        if try noteCount != notes { problems.append("the kept note count says \(try noteCount), the notes table holds \(notes)") }
        let actualCounts = Self.folderCountsFromNotesSQL
        let keptCounts = "SELECT folder, notes FROM folder_note_counts WHERE notes != 0"
        let wrongCounts = try database.first(
            "SELECT (SELECT count(*) FROM (\(actualCounts) EXCEPT \(keptCounts))) + (SELECT count(*) FROM (\(keptCounts) EXCEPT \(actualCounts)))"
        ) { $0.int(0) } ?? 0
        if wrongCounts > 0 { problems.append("\(wrongCounts) kept folder note count(s) are wrong") }
        // Every revision read as its readers read it (delta chains included): its content
        // must still hash to its id, and its body's blocks must be stored under its record
        // and counted.
        struct RecordBlock: Hashable {
            let record: RecordID
            let hash: BlockHash
        }
        var used: [RecordBlock: [RevisionID]] = [:]
        var (unreadable, misnamed) = (0, 0)
        let records = try database.rows("SELECT DISTINCT record FROM revisions") { $0.recordID(0)! }
        for record in records {
            guard let rows = try? revisionRows(record: record) else {
                unreadable += 1
                continue
            }
            for row in rows where !row.purged {
                if Sodium.hash256(row.data) != row.id { misnamed += 1 }
                for hash in Set(row.body) { used[RecordBlock(record: record, hash: hash), default: []].append(row.id) }
            }
        }
        if unreadable > 0 { problems.append("the stored revisions of \(unreadable) record(s) cannot be read") }
        if misnamed > 0 { problems.append("\(misnamed) revision(s) no longer hash to their id") }
        // Each pack's reference count is the number of revisions using a block of it, and a
        // pack some revision uses holds no block that none does (`settlePacks`); a pack of
        // several blocks is its revision's, stored and not purged, which uses every one of
        // them; a pack of blocks the merge composed has no reference.
        var stored: [RecordBlock: Int64] = [:]
        var packUsers: [Int64: Set<RevisionID>] = [:], packRefs: [Int64: Int64] = [:]
        var (repeated, unused, unreadablePacks, orphanedPacks) = (0, 0, 0, 0)
        try database.statement("SELECT rowid, record, revision, refs, directory FROM block_packs").forEach { row in
            let pack = row.int(0), refs = row.int(3)
            guard let record = row.recordID(1), let directory = row.withBlob(4, BlockPack.Directory.init) else {
                unreadablePacks += 1
                return
            }
            packRefs[pack] = refs
            for hash in directory.hashes {
                let block = RecordBlock(record: record, hash: hash)
                if stored.updateValue(pack, forKey: block) != nil { repeated += 1 }
                let users = used[block] ?? []
                if users.isEmpty, refs > 0 { unused += 1 }
                packUsers[pack, default: []].formUnion(users)
            }
            // A pack of several blocks: all of them used by the revision that made it.
            if directory.hashes.count > 1 {
                let made = row.hash(2).map { maker in
                    directory.hashes.allSatisfy { used[RecordBlock(record: record, hash: $0)]?.contains(maker) == true }
                }
                if made != true { orphanedPacks += 1 }
            }
        }
        if unreadablePacks > 0 { problems.append("\(unreadablePacks) block pack(s) cannot be read") }
        if orphanedPacks > 0 {
            problems.append("\(orphanedPacks) block pack(s) of several blocks are not all used by the revision that made them")
        }
        if repeated > 0 { problems.append("\(repeated) block(s) are stored twice under their record") }
        if unused > 0 { problems.append("\(unused) block(s) are kept in packs though no revision uses them") }
        let missing = used.keys.filter { stored[$0] == nil }
        if !missing.isEmpty { problems.append("\(missing.count) block(s) used by revisions are missing") }
        let miscounted = packRefs.filter { pack, refs in Int64(packUsers[pack]?.count ?? 0) != refs }
        if !miscounted.isEmpty { problems.append("\(miscounted.count) block pack(s) have a wrong reference count") }
        try database.statement("SELECT id, body FROM notes").forEach { row in
            let note = row.recordID(0)!
            if Self.hashes(row.blob(1)).contains(where: { stored[RecordBlock(record: note, hash: $0)] == nil }) {
                problems.append("note \(note) shows a block that is not stored")
            }
        }
        return problems
    }

    /// A hash of the materialised state (notes, tags, folders, devices): equal on two replicas
    /// exactly when they show the same library. Used to check convergence.
    public func stateHash() throws -> Hash256 {
        var writer = ByteWriter(capacity: 4096)
        try database.statement(
            "SELECT id, title, body, folder, trashed, pinned, color, created, modified, conflict_of FROM notes ORDER BY id"
        ).forEach { row in
            writer.data(row.blob(0))
            writer.string(row.text(1))
            writer.data(row.blob(2))
            writer.data(row.optionalBlob(3) ?? [])
            writer.u64(UInt64(row.int(4)))
            writer.u64(UInt64(row.int(5)))
            writer.string(row.optionalText(6) ?? "\u{0}")
            writer.u64(UInt64(bitPattern: row.int(7)))
            writer.u64(UInt64(bitPattern: row.int(8)))
            writer.data(row.optionalBlob(9) ?? [])
        }
        try database.statement("SELECT note, tag FROM note_tags ORDER BY note, tag").forEach { row in
            writer.data(row.blob(0))
            writer.string(row.text(1))
        }
        try database.statement("SELECT id, name, parent, moved_at FROM folders ORDER BY id").forEach { row in
            writer.data(row.blob(0))
            writer.string(row.text(1))
            writer.data(row.optionalBlob(2) ?? [])
            writer.u64(UInt64(bitPattern: row.int(3)))
        }
        try database.statement("SELECT id, name, public_key, revoked, added FROM devices ORDER BY id").forEach { row in
            writer.data(row.blob(0))
            writer.string(row.text(1))
            writer.data(row.blob(2))
            writer.u64(UInt64(row.int(3)))
            writer.u64(UInt64(row.int(4)))
        }
        return Sodium.hash256(writer.bytes)
    }
}
