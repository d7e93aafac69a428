import Foundation
import Testing
@testable import Peer
import TestSupport

/// A new library is made at the current schema in one step (`Schema.current`; docs/decisions.md,
/// "A new library made at the current schema"): it must be the library the migrations make one
/// step at a time, or a device set up new would differ from one that was upgraded.
@Suite struct SchemaTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test func aNewLibraryIsTheMigratedOne() throws {
        let stepped = try Database(path: directory.file("stepped.db"))
        try stepped.migrate(Schema.migrations)
        let made = try Database(path: directory.file("made.db"))
        try made.migrate(Schema.migrations, newAt: Schema.current)
        #expect(try made.userVersion == Schema.migrations.count)
        #expect(try stepped.userVersion == Schema.migrations.count)

        let steppedShape = try Self.shape(of: stepped)
        let madeShape = try Self.shape(of: made)
        // What only one of them has first, so a difference names its table or index.
        #expect(madeShape.filter { !steppedShape.contains($0) } == [])
        #expect(steppedShape.filter { !madeShape.contains($0) } == [])
        #expect(madeShape == steppedShape)
    }

    @Test func aReplicaOpensANewLibraryAtTheCurrentSchema() throws {
        let replica = try Replica(path: directory.file("new.db"))
        #expect(try replica.database.userVersion == Schema.migrations.count)
        #expect(try replica.integrityProblems() == [])
    }

    /// Migrating stays step by step for a library that has a schema already.
    @Test func anOlderLibraryIsMigratedStepByStep() throws {
        let path = directory.file("older.db")
        do {
            let older = try Database(path: path)
            try older.migrate(Array(Schema.migrations.prefix(15)))
            try older.execute("INSERT INTO blocks (record, hash, refs, data) VALUES (x'00', x'01', 1, x'02')")
        }
        let database = try Database(path: path)
        try database.migrate(Schema.migrations, newAt: Schema.current)
        #expect(try database.userVersion == Schema.migrations.count)
        // Migration 16 carried the block over: a new library's schema would have dropped it.
        #expect(try database.first("SELECT count(*) FROM block_packs WHERE directory = x'01'") { $0.int(0) } == 1)
    }

    /// What a library's schema is, one line each: every table, index and trigger by name; each
    /// table's kind, columns (name, type, NOT NULL, default, key position), indexes (a
    /// constraint's own among them) and foreign keys; each index's columns and order; the text
    /// of each trigger and of the search index's declaration (its tokenizer and prefixes); and
    /// every row of every table (the search index's own tables included). Not compared: CHECK
    /// constraints and a column's collation, which no table of this schema has.
    static func shape(of database: Database) throws -> [String] {
        var lines: [String] = []
        let objects = try database.rows(
            "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_autoindex_%' ORDER BY type, name"
        ) { ($0.text(0), $0.text(1), $0.text(2), $0.text(3)) }
        for (type, name, table, sql) in objects {
            lines.append("\(type) \(name) on \(table)")
            switch type {
            case "table":
                lines += try database.rows("SELECT type, ncol, wr, strict FROM pragma_table_list WHERE name = ?1", [.text(name)]) {
                    "  \($0.text(0)) of \($0.int(1)) columns, without rowid \($0.int(2)), strict \($0.int(3))"
                }
                lines += try database.rows(
                    "SELECT cid, name, type, \"notnull\", ifnull(dflt_value, '-'), pk, hidden FROM pragma_table_xinfo(?1) ORDER BY cid",
                    [.text(name)]
                ) { "  column \($0.int(0)) \($0.text(1)) \($0.text(2)) not null \($0.int(3)) default \($0.text(4)) key \($0.int(5)) hidden \($0.int(6))" }
                let indexes = try database.rows(
                    "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1) ORDER BY name", [.text(name)]
                ) { ($0.text(0), "unique \($0.int(1)) \($0.text(2)) partial \($0.int(3))") }
                for (index, kind) in indexes {
                    // A constraint's index is named by SQLite: its columns are what tell it apart.
                    guard index.hasPrefix("sqlite_autoindex_") else {
                        lines.append("  index \(index) \(kind)")
                        continue
                    }
                    lines.append("  index (automatic) \(kind)")
                    lines += try columns(of: index, in: database)
                }
                if sql.hasPrefix("CREATE VIRTUAL TABLE") { lines.append("  \(sql)") }
                lines += try database.rows(
                    "SELECT \"table\", \"from\", ifnull(\"to\", '-'), on_update, on_delete FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
                    [.text(name)]
                ) { "  references \($0.text(0)): \($0.text(1)) -> \($0.text(2)) on update \($0.text(3)) on delete \($0.text(4))" }
                lines += try rows(of: name, in: database)
            case "index":
                lines += try columns(of: name, in: database)
            case "trigger":
                lines.append("  \(sql)")
            default:
                break
            }
        }
        return lines
    }

    /// An index's columns, in order, with their direction and collation.
    private static func columns(of index: String, in database: Database) throws -> [String] {
        try database.rows(
            "SELECT seqno, ifnull(name, '-'), \"desc\", coll, key FROM pragma_index_xinfo(?1) ORDER BY seqno", [.text(index)]
        ) { "    \($0.int(0)) \($0.text(1)) desc \($0.int(2)) \($0.text(3)) key \($0.int(4))" }
    }

    /// Every row of `table`, each value as SQL writes it (`quote`), in the order of its values.
    private static func rows(of table: String, in database: Database) throws -> [String] {
        let columns = try database.rows("SELECT name FROM pragma_table_info(?1) ORDER BY cid", [.text(table)]) { $0.text(0) }
        guard !columns.isEmpty else { return [] }
        let quoted = columns.map { "quote(\"\($0)\")" }.joined(separator: " || ', ' || ")
        return try database.rows("SELECT \(quoted) AS row FROM \"\(table)\" ORDER BY row") { "  row \($0.text(0))" }
    }
}
