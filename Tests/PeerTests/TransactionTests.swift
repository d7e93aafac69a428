import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Nested transactions are savepoints: an inner failure the outer body catches undoes only the
/// inner writes, on disk and in the replica's in-memory clock, vector and `offered` mark.
@Suite struct TransactionTests {
    private struct Planned: Error {}

    @Test func aCaughtInnerFailureRollsBackOnlyTheInnerWrites() throws {
        let directory = try TemporaryDirectory()
        let database = try Database(path: directory.file("t.db"))
        try database.execute("CREATE TABLE t (v TEXT NOT NULL)")
        try database.transaction {
            try database.run("INSERT INTO t (v) VALUES ('outer before')")
            do {
                try database.transaction {
                    try database.run("INSERT INTO t (v) VALUES ('inner')")
                    throw Planned()
                }
            } catch is Planned {}
            try database.run("INSERT INTO t (v) VALUES ('outer after')")
        }
        let values = try database.rows("SELECT v FROM t ORDER BY rowid") { $0.text(0) }
        // Joining the outer transaction (the old behaviour) would have kept 'inner' too.
        #expect(values == ["outer before", "outer after"])
    }

    @Test func anInnerSuccessCommitsWithTheOuterAndAnOuterFailureUndoesBoth() throws {
        let directory = try TemporaryDirectory()
        let database = try Database(path: directory.file("t.db"))
        try database.execute("CREATE TABLE t (v TEXT NOT NULL)")
        #expect(throws: Planned.self) {
            try database.transaction {
                try database.transaction { try database.run("INSERT INTO t (v) VALUES ('inner')") }
                throw Planned()
            }
        }
        #expect(try database.first("SELECT count(*) FROM t") { $0.int(0) } == 0)
        try database.transaction {
            try database.transaction { try database.run("INSERT INTO t (v) VALUES ('inner')") }
        }
        #expect(try database.rows("SELECT v FROM t") { $0.text(0) } == ["inner"])
        #expect(!database.isInTransaction)
    }

    @Test func aCaughtNestedWriteFailureRestoresTheReplicasMemory() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        let replica = try Replica(path: path, randomBytes: SeededBytes.source(seed: 7))
        let kept = try replica.createNote(title: "kept", body: paragraphs(["a"]), now: 1_000)
        try replica.markOffered()
        var failedNote: NoteID?
        let (clockBefore, vectorBefore, offeredBefore) = (replica.clock, replica.vector, replica.offeredSeq)
        try replica.inOneTransaction {
            do {
                try replica.write {
                    failedNote = try replica.createNote(title: "lost", body: paragraphs(["b"]), now: 9_000_000)
                    try replica.markOffered()
                    throw Planned()
                }
            } catch is Planned {}
            #expect(replica.vector == vectorBefore)
            #expect(replica.offeredSeq == offeredBefore)
            #expect(replica.clock == clockBefore)
            try replica.editNote(kept, NoteEdit(title: "kept, edited"), now: 2_000)
        }
        let lost = try #require(failedNote)
        #expect(try replica.note(lost) == nil)
        #expect(try replica.note(kept)?.title == "kept, edited")
        // The next own entry follows the last committed one: no gap, no reused seq.
        #expect(replica.vector[replica.replicaID] == vectorBefore[replica.replicaID] + 1)
        #expect(replica.lastChanges.notes.keys.contains(kept) && !replica.lastChanges.notes.keys.contains(lost))
        #expect(try replica.integrityProblems() == [])
        let storedSeq = try replica.database.first(
            "SELECT seq FROM vector WHERE replica = ?1", [.blob(replica.replicaID.raw.bytes)]) { UInt64($0.int(0)) }
        #expect(storedSeq == replica.vector[replica.replicaID])
        let storedOffered = try replica.database.first("SELECT value FROM meta WHERE key = 'offered'") { UInt64($0.int(0)) }
        #expect(storedOffered == replica.offeredSeq)
    }

    /// While writing in bulk, the notes waiting for the search index are kept in memory until
    /// the transaction commits: a nested write that fails takes its own back.
    @Test func aCaughtNestedWriteFailureLeavesNoNoteWaitingForTheSearchIndex() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"), randomBytes: SeededBytes.source(seed: 8))
        try replica.enterBulkWrite(.import)
        var kept: [NoteID] = []
        try replica.inOneTransaction {
            kept.append(try replica.createNote(title: "first", body: paragraphs(["a"]), now: 1_000))
            do {
                try replica.write {
                    _ = try replica.createNote(title: "lost", body: paragraphs(["b"]), now: 2_000)
                    throw Planned()
                }
            } catch is Planned {}
            try replica.write { kept.append(try replica.createNote(title: "second", body: paragraphs(["c"]), now: 3_000)) }
        }
        let waiting = try replica.database.rows("SELECT note FROM search_pending ORDER BY note") { $0.recordID(0)! }
        #expect(waiting == kept.sorted())
        #expect(try replica.notesAwaitingSearchIndex == 2)
    }
}

/// What one transaction of several local changes reports (`Replica.lastChanges`): each
/// nested write's changes join the outer ones as if made one after another.
@Suite struct NestedChangesTests {
    @Test func nestedWritesReportTheirChangesAsOneTransaction() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("r.db"), randomBytes: SeededBytes.source(seed: 3))
        let edited = try replica.createNote(title: "edited", body: paragraphs(["a"]), now: 1_000)
        let trashed = try replica.createNote(title: "trashed", body: paragraphs(["b"]), now: 1_000)
        let purged = try replica.createNote(title: "purged", body: paragraphs(["c"]), now: 1_000)
        var createdThenEdited: NoteID?, createdThenTrashed: NoteID?
        try replica.inOneTransaction {
            try replica.editNote(edited, NoteEdit(title: "edited, once"), now: 2_000)
            _ = try replica.trashNote(trashed, now: 2_000)
            try replica.purgeNote(purged, now: 2_000)
            createdThenEdited = try replica.createNote(title: "new", body: paragraphs(["d"]), now: 2_000)
            try replica.editNote(createdThenEdited!, NoteEdit(title: "new, edited"), now: 2_001)
            createdThenTrashed = try replica.createNote(title: "new, trashed", body: paragraphs(["e"]), now: 2_000)
            _ = try replica.trashNote(createdThenTrashed!, now: 2_001)
            try replica.editNote(edited, NoteEdit(title: "edited, twice"), now: 2_002)
        }
        #expect(replica.lastChanges.notes == [
            edited: .edited, trashed: .trashed, purged: .purged,
            try #require(createdThenEdited): .created, try #require(createdThenTrashed): .created,
        ])
    }
}

/// The statement cache finds a statement by where its text is (`Database.statement`), and
/// must never hand back another text's statement when a freed string's address is reused.
@Suite struct StatementCacheTests {
    @Test func textsMadeAndFreedOneAfterAnotherEachGetTheirOwnStatement() throws {
        let directory = try TemporaryDirectory()
        let database = try Database(path: directory.file("s.db"))
        for round in 0..<3 {
            for number in 0..<200 {
                // A new string each time, freed at once: the allocator reuses addresses.
                let sql = "SELECT \(number) + \(round) AS total, 'a text long enough to live on the heap'"
                #expect(try database.first(sql) { $0.int(0) } == Int64(number + round))
            }
        }
        let literal = "SELECT 'the literal' AS value, 'a text long enough to live on the heap'"
        #expect(try database.first(literal) { $0.text(0) } == "the literal")
        #expect(try database.first(literal) { $0.text(0) } == "the literal")
    }
}

/// Ids and small blobs are bound from memory the statement owns (`Statement.bind`): each run
/// must store its own values, whatever the runs before it bound and however the scratch grew.
@Suite struct StatementBindingTests {
    @Test func eachRunStoresItsOwnBlobsWhateverTheRunsBeforeItBound() throws {
        let directory = try TemporaryDirectory()
        let database = try Database(path: directory.file("b.db"))
        try database.execute("CREATE TABLE t (n INTEGER, a BLOB, b BLOB, c BLOB)")
        let limit = Statement.scratchBlobLimit
        let sizes = [0, 1, 16, limit - 1, limit, limit + 1, 5_000, 3, 0]
        var expected: [Int64: [[UInt8]?]] = [:]
        for (number, size) in sizes.enumerated() {
            let blob = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ number) }
            let hash = Hash256(bytes: [UInt8](repeating: UInt8(number), count: 32))!
            let record = RecordID(high: UInt64(number), low: ~UInt64(number))
            // The values in a different order each run, so each lands elsewhere in the scratch.
            let values: [SQLValue] = number.isMultiple(of: 2) ? [.blob(blob), .hash(hash), .record(record)] : [.record(record), .blob(blob), .hash(hash)]
            let sql = number.isMultiple(of: 2) ? "INSERT INTO t (n, a, b, c) VALUES (?4, ?1, ?2, ?3)" : "INSERT INTO t (n, c, a, b) VALUES (?4, ?1, ?2, ?3)"
            try database.run(sql, values + [.integer(Int64(number))])
            expected[Int64(number)] = [blob, hash.bytes, record.bytes]
        }
        // Fewer values than parameters: the rest are NULL, not what the previous run bound.
        try database.run("INSERT INTO t (n, a, b, c) VALUES (?4, ?1, ?2, ?3)", [.blob([9])])
        let rows = try database.rows("SELECT n, a, b, c FROM t ORDER BY n") { row in
            (row.isNull(0) ? nil : row.int(0), [row.optionalBlob(1), row.optionalBlob(2), row.optionalBlob(3)])
        }
        #expect(rows.count == sizes.count + 1)
        for (number, columns) in rows {
            if let number {
                #expect(columns == expected[number], "row \(number)")
            } else {
                #expect(columns == [[9], nil, nil])
            }
        }
        // An empty blob is stored as an empty blob, not as NULL.
        #expect(try database.first("SELECT typeof(a) FROM t WHERE n = 0") { $0.text(0) } == "blob")
    }

    /// A run's blobs over the scratch's limit are bound where they are, for its steps alone
    /// (`Statement.run`): each run stores its own, several to a statement, a run whose last
    /// large blob has no parameter fails and stores nothing, and none is left bound after.
    @Test func aRunsLargeBlobsAreStoredAsGivenSeveralToAStatement() throws {
        let directory = try TemporaryDirectory()
        let database = try Database(path: directory.file("l.db"))
        try database.execute("CREATE TABLE t (n INTEGER, a BLOB, b BLOB, c BLOB, d BLOB)")
        let limit = Statement.scratchBlobLimit
        let sql = "INSERT INTO t (n, a, b, c, d) VALUES (?1, ?2, ?3, ?4, ?5)"
        var expected: [[[UInt8]]] = []
        for run in 0..<3 {
            let blobs = [limit + 1 + run, 7, 4_000 * (run + 1), limit + 50].enumerated().map { index, size in
                (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &+ run * 5) }
            }
            try database.run(sql, [.integer(Int64(run))] + blobs.map { .blob($0) })
            expected.append(blobs)
        }
        #expect(throws: SQLiteError.self) {
            try database.run("INSERT INTO t (n, a) VALUES (?1, ?2)", [.integer(9), .blob([1]), .blob([UInt8](repeating: 2, count: limit * 3))])
        }
        // The cached statement stepped again without a bind: no value of the last run is left
        // bound, least of all a blob whose bytes are gone.
        #expect(try database.statement(sql).step() == false)
        let rows = try database.rows("SELECT a, b, c, d FROM t ORDER BY rowid") { row in (0..<4).map { row.optionalBlob($0) } }
        #expect(rows == expected.map { $0.map(Optional.some) } + [[nil, nil, nil, nil]])
    }

    /// A bind that fails leaves no parameter bound: none can point into a scratch the failed
    /// run replaced, even for a caller that steps the statement without binding it again.
    @Test func aBindThatFailsLeavesNothingBound() throws {
        let directory = try TemporaryDirectory()
        let database = try Database(path: directory.file("f.db"))
        try database.execute("CREATE TABLE t (a BLOB, b BLOB)")
        let sql = "INSERT INTO t (a, b) VALUES (?1, ?2)"
        try database.run(sql, [.blob([1]), .blob([2])])
        // A third value has no parameter: the bind fails after growing the scratch and binding two.
        #expect(throws: SQLiteError.self) {
            try database.run(sql, [.hash(Hash256(bytes: [UInt8](repeating: 7, count: 32))!), .blob([UInt8](repeating: 8, count: 200)), .blob([9])])
        }
        #expect(try database.statement(sql).step() == false)
        try database.run(sql, [.blob([3])])
        let rows = try database.rows("SELECT a, b FROM t ORDER BY rowid") { [$0.optionalBlob(0), $0.optionalBlob(1)] }
        #expect(rows == [[[1], [2]], [nil, nil], [[3], nil]])
    }
}

/// A batch's rows go in many to a statement (`MultiRowInsert`), each row's parameters numbered
/// on from the last row's.
@Suite struct MultiRowInsertTests {
    @Test func eachRowsParametersFollowTheLastRows() {
        let insert = MultiRowInsert(into: "t", columns: "a, b, c", row: "(?, 1, ?)", maximumRows: 3, everyRowNew: true)
        #expect(insert.valuesPerRow == 2)
        #expect(insert.text(rows: 1) == "INSERT OR IGNORE INTO t (a, b, c) VALUES (?1, 1, ?2)")
        #expect(insert.text(rows: 3) == "INSERT OR IGNORE INTO t (a, b, c) VALUES (?1, 1, ?2), (?3, 1, ?4), (?5, 1, ?6)")
    }
}
