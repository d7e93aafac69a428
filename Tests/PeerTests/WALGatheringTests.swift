import CSQLite
import Foundation
import Testing
@testable import Peer
import TestSupport

/// The VFS that gathers each connection's writes to its log and its database file
/// (docs/decisions.md, "The log's appends gathered", "A bulk write without the log") must
/// change when pages reach the file, never what another connection reads: several
/// connections on one library, each with pages still in its buffer at the moments SQLite
/// hands the file from one to the next.
@Suite struct WALGatheringTests {
    /// Rows of 1,000 characters, each one letter chosen by its number: a page overwritten by
    /// another transaction's frame shows as a row with the wrong text, or a broken b-tree.
    private static let rowText = "replace(hex(zeroblob(1000)), '00', char(65 + (?1 % 26)))"

    private func insert(_ numbers: Range<Int>, into database: Database) throws {
        for number in numbers {
            try database.run("INSERT INTO t (n, v) VALUES (?1, \(Self.rowText))", [.integer(Int64(number))])
        }
    }

    /// The rows `numbers`, each whole, and the library's structure intact.
    private func expectRows(_ numbers: [Int], in database: Database) throws {
        let held = try database.rows("SELECT n FROM t ORDER BY n") { Int($0.int(0)) }
        #expect(held == numbers)
        let wrong = try database.first("SELECT count(*) FROM t WHERE v != replace(hex(zeroblob(1000)), '00', char(65 + (n % 26)))") { $0.int(0) }
        #expect(wrong == 0)
        #expect(try database.check(full: true) == [])
    }

    private func openLibrary(in directory: TemporaryDirectory) throws -> (path: String, writer: Database) {
        let path = directory.file("gathered.db")
        let writer = try Database(path: path)
        // No checkpoint between the steps: the log keeps every frame at the offset it was written.
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        return (path, writer)
    }

    @Test func theDaemonsConnectionsUseTheGatheringVFS() throws {
        let directory = try TemporaryDirectory()
        _ = try Database(path: directory.file("any.db"))
        let name = sqlite3_vfs_find(nil).map { String(cString: $0.pointee.zName) }
        #expect(name == "notesd-wal-gathering")
    }

    @Test func aCommitOfManyBuffersIsWholeForAnotherConnectionAtOnce() throws {
        let directory = try TemporaryDirectory()
        let (path, writer) = try openLibrary(in: directory)
        let reader = try Database(path: path)
        #expect(try reader.first("SELECT count(*) FROM t") { $0.int(0) } == 0)
        // ~1,000 pages: the buffer (120 KiB) fills and is written out ~35 times in the commit.
        try writer.transaction { try insert(0..<2_000, into: writer) }
        try expectRows(Array(0..<2_000), in: reader)
    }

    @Test func framesOfARolledBackTransactionNeverLandOnAnotherWritersFrames() throws {
        let directory = try TemporaryDirectory()
        let (path, first) = try openLibrary(in: directory)
        let second = try Database(path: path)
        // A small page cache makes the first connection's transaction spill its pages into
        // the log before it ends; the last of them are still in its buffer when it rolls back.
        try first.execute("PRAGMA cache_size = 8")
        struct Abandoned: Error {}
        #expect(throws: Abandoned.self) {
            try first.transaction {
                try insert(0..<300, into: first)
                throw Abandoned()
            }
        }
        // The second connection's frames go where the abandoned ones were, and are committed.
        try second.transaction { try insert(1_000..<1_300, into: second) }
        // The first writes again: had its abandoned frames waited in its buffer, they would
        // now be written over the second's committed ones.
        try first.transaction { try insert(2_000..<2_010, into: first) }
        let fresh = try Database(path: path)
        try expectRows(Array(1_000..<1_300) + Array(2_000..<2_010), in: fresh)
    }

    @Test func aTransactionReadsBackThePagesItSpilled() throws {
        let directory = try TemporaryDirectory()
        let (path, writer) = try openLibrary(in: directory)
        try writer.execute("PRAGMA cache_size = 8")
        try writer.transaction {
            try insert(0..<400, into: writer)
            // Every page read again comes from the log, some of it still in the buffer.
            let total: Int64? = try writer.first("SELECT sum(length(v)) FROM t") { $0.int(0) }
            #expect(total == 400_000)
            try insert(400..<500, into: writer)
        }
        try writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try insert(500..<510, into: writer)
        try expectRows(Array(0..<510), in: try Database(path: path))
    }

    /// Write calls this thread has made so far (`syscw` of /proc/thread-self/io): the
    /// thread's own, whatever other tests write meanwhile.
    private func threadWriteCalls() throws -> Int {
        let text = try String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("syscw:") })
        return try #require(Int(line.dropFirst("syscw:".count).trimmingCharacters(in: .whitespaces)))
    }

    /// A library with a rollback journal, as a bulk write leaves it (docs/decisions.md, "A
    /// bulk write without the log"), and a table of its rows.
    private func openJournalledLibrary(in directory: TemporaryDirectory) throws -> (path: String, writer: Database) {
        let path = directory.file("journalled.db")
        let writer = try Database(path: path)
        try writer.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        #expect(try writer.setJournalMode(.rollbackTruncated))
        return (path, writer)
    }

    /// With a rollback journal a commit writes its pages into the database file itself, a
    /// page a call from SQLite: gathered, ~500 new pages take a few dozen calls.
    @Test func aRollbackJournalsCommitWritesTheFileInRuns() throws {
        let directory = try TemporaryDirectory()
        let (path, writer) = try openJournalledLibrary(in: directory)
        let before = try threadWriteCalls()
        try writer.transaction { try insert(0..<2_000, into: writer) }
        let calls = try threadWriteCalls() - before
        #expect(calls < 100, "\(calls) write calls for a commit of ~500 pages")
        try expectRows(Array(0..<2_000), in: try Database(path: path, readOnly: true))
    }

    /// A transaction that spilled pages into the file (and its journal) and then rolled back:
    /// SQLite writes the old pages back over the spilled ones, and the file is as it was for
    /// another connection and for the next transaction.
    @Test func aRolledBackTransactionLeavesAJournalledFileAsItWas() throws {
        let directory = try TemporaryDirectory()
        let (path, writer) = try openJournalledLibrary(in: directory)
        try writer.transaction { try insert(0..<300, into: writer) }
        try writer.execute("PRAGMA cache_size = 8")
        struct Abandoned: Error {}
        #expect(throws: Abandoned.self) {
            try writer.transaction {
                let written = writer.pagesWritten
                try insert(300..<900, into: writer)
                try writer.run("DELETE FROM t WHERE n % 3 = 0")
                #expect(writer.pagesWritten > written, "the transaction spilled pages into the file")
                throw Abandoned()
            }
        }
        try expectRows(Array(0..<300), in: try Database(path: path, readOnly: true))
        try writer.transaction { try insert(1_000..<1_010, into: writer) }
        try expectRows(Array(0..<300) + Array(1_000..<1_010), in: try Database(path: path, readOnly: true))
    }
}
