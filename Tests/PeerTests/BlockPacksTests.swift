import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Blocks stored a revision's worth to a row (schema migration 16, docs/decisions.md "Blocks
/// stored a revision's worth to a row"): a revision's new blocks are one pack; a pack is freed
/// when no revision uses it, and one whose revision is gone keeps only the blocks others use,
/// so coalescing and purging still free exactly what nothing uses.
@Suite struct BlockPacksTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 161))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 162))
    }

    /// Puts a database of schema 16 back as schema 15 left it: one row per block, keyed by
    /// (record, hash), counting the revisions of its record (not purged) that use it; a block
    /// the merge composed, which no revision uses, with none.
    static func undoMigration16(_ database: Database) throws {
        try database.execute("""
            CREATE TABLE blocks (
                record BLOB NOT NULL, hash BLOB NOT NULL, refs INTEGER NOT NULL, data BLOB NOT NULL,
                PRIMARY KEY (record, hash)) WITHOUT ROWID;
            """)
        var uses: [RecordID: [BlockHash: Int64]] = [:]
        for record in try database.rows("SELECT DISTINCT record FROM revisions", [], { $0.recordID(0)! }) {
            for row in try Replica.revisionRows(record: record, in: database) where !row.purged {
                for hash in Set(row.body) { uses[record, default: [:]][hash, default: 0] += 1 }
            }
        }
        let packs = try database.rows("SELECT record, directory, data FROM block_packs") { row in
            (row.recordID(0)!, row.withBlob(1) { BlockPack.Directory($0)! }, row.blob(2))
        }
        for (record, directory, data) in packs {
            for (index, hash) in directory.hashes.enumerated() {
                let block = data.withUnsafeBytes { directory.block(index, in: $0)! }
                try database.run(
                    "INSERT INTO blocks (record, hash, refs, data) VALUES (?1, ?2, ?3, ?4)",
                    [.record(record), .hash(hash), .integer(uses[record]?[hash] ?? 0), .blob(block)])
            }
        }
        try database.execute("DROP TABLE block_packs")
    }

    /// The text of every stored block, whatever pack holds it.
    private func storedTexts(_ replica: Replica) throws -> [String] {
        try replica.database.rows("SELECT directory, data FROM block_packs") { row in
            let directory = row.withBlob(0) { BlockPack.Directory($0)! }
            return try row.withBlob(1) { data in
                try directory.hashes.indices.map { try Block.text(encoded: directory.block($0, in: data)!) }
            }
        }.flatMap { $0 }.sorted()
    }

    private func hashes(_ texts: [String]) -> [BlockHash] { paragraphs(texts).map { RevisionCodec.blockHash($0.encoded()) } }

    @Test func aPackRoundTripsItsBlocksAndADamagedDirectoryIsRefused() throws {
        let blocks = paragraphs(["one", "two", "three", ""]).map { ($0, $0.encoded()) }
        let sorted: [(hash: BlockHash, encoded: EntryPayload.EncodedBlock)] = blocks.map { (RevisionCodec.blockHash($0.1), $0.1[...]) }.sorted { $0.0 < $1.0 }
        let (directory, data) = BlockPack.encode(sorted)
        #expect(directory.count == 4 * 32 + 3 * 4)
        let read = try #require(directory.withUnsafeBytes { BlockPack.Directory($0) })
        #expect(read.hashes == sorted.map(\.hash))
        for index in sorted.indices {
            #expect(data.withUnsafeBytes { read.block(index, in: $0) }.map { $0[...] } == sorted[index].encoded)
        }
        // A pack of one block is its hash and the block (as migration 16 writes them).
        let single = BlockPack.encode([sorted[0]])
        #expect(single.directory == sorted[0].hash.bytes && single.data[...] == sorted[0].encoded)
        // Cut short or out of order, a directory is not one; data shorter than it says gives no block.
        #expect(directory.dropLast().withUnsafeBytes { BlockPack.Directory($0) } == nil)
        #expect([UInt8]().withUnsafeBytes { BlockPack.Directory($0) } == nil)
        var backwards = directory
        backwards.replaceSubrange((4 * 32)..<(4 * 32 + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(backwards.withUnsafeBytes { BlockPack.Directory($0) } == nil)
        #expect(Array(data.prefix(3)).withUnsafeBytes { read.block(2, in: $0) } == nil)
    }

    @Test func aRevisionsNewBlocksAreOnePackAndAnEditAddsAPackOfWhatItChanged() throws {
        let note = try a.createNote(title: "Nine", body: paragraphs((1...9).map { "paragraph \($0)" }), now: 1_000)
        #expect(try a.packCount(of: note) == 1)
        #expect(try a.storedBlockCount(of: note) == 9)
        try a.markOffered()
        try a.editNote(note, NoteEdit(body: paragraphs((1...9).map { $0 == 4 ? "paragraph 4, edited" : "paragraph \($0)" })), now: 2_000)
        #expect(try a.packCount(of: note) == 2)
        #expect(try a.storedBlockCount(of: note) == 10)
        // Both revisions use the first pack, only the edit the second.
        let refs = try a.database.rows("SELECT refs FROM block_packs WHERE record = ?1 ORDER BY rowid", [.record(note)]) { $0.int(0) }
        #expect(refs == [2, 1])
        try syncAll([a, b])
        #expect(try b.storedBlockList() == a.storedBlockList())
        #expect(try b.packCount(of: note) == 2)
        #expect(try a.integrityProblems() == [] && b.integrityProblems() == [])
    }

    @Test func coalescedEditsOfANewNoteFreeEveryBlockTheyReplaced() throws {
        let note = try a.createNote(title: "Draft", body: paragraphs(["kept", "typed 0", "also kept"]), now: 1_000)
        for step in 1...5 {
            try a.editNote(note, NoteEdit(body: paragraphs(["kept", "typed \(step)", "also kept"])), now: 1_000 + UInt64(step) * 1_000)
        }
        #expect(try a.history(of: note).count == 1, "the edits coalesced")
        // The first pack's two blocks still used are packs of their own; "typed 0" to
        // "typed 4" are gone.
        #expect(try storedTexts(a) == ["also kept", "kept", "typed 5"])
        #expect(try a.packCount(of: note) == 3)
        #expect(try a.note(note)?.body == paragraphs(["kept", "typed 5", "also kept"]))
        #expect(try a.integrityProblems() == [])
        // A later edit in the window drops a block of the first revision: it goes too.
        try a.editNote(note, NoteEdit(body: paragraphs(["kept", "typed 6"])), now: 7_000)
        #expect(try storedTexts(a) == ["kept", "typed 6"])
        #expect(try a.integrityProblems() == [])
        // Once offered, a new revision of several blocks is a pack of its own, and coalescing
        // it again splits it the same way.
        try a.markOffered()
        try a.editNote(note, NoteEdit(body: paragraphs(["kept", "typed 6", "new one", "new two"])), now: 10_000_000)
        #expect(try a.packCount(of: note) == 3)
        try a.editNote(note, NoteEdit(body: paragraphs(["kept", "new one", "new two, edited"])), now: 10_001_000)
        #expect(try storedTexts(a) == ["kept", "new one", "new two, edited", "typed 6"])
        #expect(try a.integrityProblems() == [])
    }

    @Test func aPurgeKeepsOnlyTheBlocksAConcurrentEditStillUses() throws {
        let note = try a.createNote(title: "Shared", body: paragraphs(["first", "second", "secret"]), now: 1_000)
        try a.markOffered()
        try syncAll([a, b])
        // b edits while a deletes the note for good: b's edit is not an ancestor of the
        // tombstone, so it keeps its text, and with it two of the first revision's blocks.
        try b.editNote(note, NoteEdit(body: paragraphs(["first", "second", "b's own"])), now: 2_000)
        try a.purgeNote(note, now: 2_000)
        try syncAll([a, b])
        for replica in [a, b] {
            #expect(
                try storedTexts(replica) == ["b's own", "first", "second"], "\(replica.replicaID) keeps no block of the purged revision alone")
            #expect(try replica.integrityProblems() == [])
        }
        #expect(try a.note(note)?.body == paragraphs(["first", "second", "b's own"]))
    }

    @Test func theIntegrityCheckNamesAnUnusedBlockAWrongCountAndAnUnreadablePack() throws {
        let note = try a.createNote(title: "Checked", body: paragraphs(["one", "two"]), now: 1_000)
        #expect(try a.integrityProblems() == [])
        let packRead = "SELECT rowid, directory, data, revision FROM block_packs WHERE record = ?1"
        let pack = try #require(try a.database.first(packRead, [.record(note)]) {
            ($0.int(0), $0.blob(1), $0.blob(2), $0.blob(3))
        })
        func restore() throws {
            try a.database.run(
                "UPDATE block_packs SET refs = 1, directory = ?2, data = ?3, revision = ?4 WHERE rowid = ?1",
                [.integer(pack.0), .blob(pack.1), .blob(pack.2), .blob(pack.3)])
        }
        // A block no revision uses, in a pack a revision uses.
        let stray = paragraphs(["stray"])[0].encoded()
        let blocks: [(hash: BlockHash, encoded: EntryPayload.EncodedBlock)] = try zip(hashes(["one", "two"]), a.storedBlocks(hashes(["one", "two"]), of: note)).map { ($0, $1![...]) }
        let grown = BlockPack.encode((blocks + [(RevisionCodec.blockHash(stray), stray[...])]).sorted { $0.0 < $1.0 })
        try a.database.run(
            "UPDATE block_packs SET directory = ?2, data = ?3 WHERE rowid = ?1", [.integer(pack.0), .blob(grown.directory), .blob(grown.data)])
        #expect(try a.integrityProblems() == [
            "1 block pack(s) of several blocks are not all used by the revision that made them",
            "1 block(s) are kept in packs though no revision uses them",
        ])
        try restore()
        try a.database.run("UPDATE block_packs SET refs = 2 WHERE rowid = ?1", [.integer(pack.0)])
        #expect(try a.integrityProblems() == ["1 block pack(s) have a wrong reference count"])
        try restore()
        try a.database.run("UPDATE block_packs SET directory = x'00' WHERE rowid = ?1", [.integer(pack.0)])
        #expect(try a.integrityProblems() == [
            "1 block pack(s) cannot be read", "2 block(s) used by revisions are missing", "note \(note) shows a block that is not stored",
        ])
        // Reading the note names the damage instead of crashing.
        #expect {
            _ = try a.note(note)
        } throws: { error in
            guard case ReplicaError.invalid = error else { return false }
            return true
        }
        try restore()
        // A pack of several blocks that is no revision's.
        try a.database.run("UPDATE block_packs SET revision = NULL WHERE rowid = ?1", [.integer(pack.0)])
        #expect(try a.integrityProblems() == ["1 block pack(s) of several blocks are not all used by the revision that made them"])
        try restore()
        #expect(try a.integrityProblems() == [])
    }

    @Test func migration16MakesEachBlockAPackOfItsOwnAndEditsGoOnAsBefore() throws {
        let note = try a.createNote(title: "Old", body: paragraphs(["one", "two", "three"]), now: 1_000)
        try a.markOffered()
        try a.editNote(note, NoteEdit(body: paragraphs(["one", "two, edited", "three"])), now: 2_000)
        let bodies = try a.note(note)?.body
        let path = directory.file("schema15.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            let older = try Database(path: path)
            try Self.undoMigration16(older)
            try older.execute("PRAGMA user_version = 15")
            #expect(try older.first("SELECT group_concat(refs) FROM (SELECT refs FROM blocks ORDER BY refs)") { $0.text(0) } == "1,1,2,2")
        }
        let migrated = try Replica(path: path)
        #expect(try migrated.database.userVersion == Schema.migrations.count)
        #expect(try migrated.packCount() == 4 && migrated.storedBlockCount() == 4)
        let packRefs = "SELECT group_concat(refs) FROM (SELECT refs FROM block_packs ORDER BY refs)"
        #expect(try migrated.database.first(packRefs) { $0.text(0) } == "1,1,2,2")
        #expect(try migrated.note(note)?.body == bodies)
        #expect(try migrated.integrityProblems() == [])
        try migrated.editNote(note, NoteEdit(body: paragraphs(["one", "four"])), now: 3_000_000)
        #expect(try migrated.note(note)?.body == paragraphs(["one", "four"]))
        #expect(try migrated.integrityProblems() == [])
    }
}
