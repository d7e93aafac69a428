import Merge

/// An `INSERT` of one to `maximumRows` rows, each statement text built once: running a
/// statement (binding, stepping, opening its cursors, halting) costs about what inserting a
/// row does, so rows that can wait are inserted many to a statement (docs/decisions.md,
/// "A batch's rows inserted many to a statement").
///
/// `OR IGNORE` everywhere: a statement that no constraint can abort half-way keeps no
/// statement journal (a copy of each page it changes that the transaction had changed
/// before). A row it did ignore is counted (`Replica.insert(_:_:)`), and where every row
/// must land, a row missing is reported.
struct MultiRowInsert: Sendable {
    let maximumRows: Int
    let valuesPerRow: Int
    /// Whether every row must land: for tables whose rows the caller knows are new, a row
    /// ignored means the library held what it was not known to (`damagedLibraryAdvice`).
    let everyRowNew: Bool
    let table: String
    private let texts: [String]

    /// `row` is one row's values with a `?` for each parameter, as `(?, ?, 1, ?)`: each is
    /// numbered in turn.
    init(into table: String, columns: String, row: String, maximumRows: Int, everyRowNew: Bool) {
        let valuesPerRow = row.filter { $0 == "?" }.count
        self.maximumRows = maximumRows
        self.valuesPerRow = valuesPerRow
        self.everyRowNew = everyRowNew
        self.table = table
        // Built from the row's pieces between its `?`s: made character by character, the
        // texts of the four tables `apply` gathers and of the search queue cost a daemon's
        // first catch-up ~19 M instructions.
        let pieces = row.split(separator: "?", omittingEmptySubsequences: false).map(String.init)
        texts = (1...maximumRows).map { rows in
            var text = "INSERT OR IGNORE INTO \(table) (\(columns)) VALUES "
            var parameter = 0
            for index in 0..<rows {
                if index > 0 { text += ", " }
                text += pieces[0]
                for piece in pieces.dropFirst() {
                    parameter += 1
                    text += "?" + String(parameter) + piece
                }
            }
            return text
        }
    }

    /// The statement for `rows` rows.
    func text(rows: Int) -> String { texts[rows - 1] }
}

/// The rows a batch of received entries inserts (`Replica.apply`), held until a statement
/// can take `maximumRows` of them: the revisions, log entries and heads of the
/// entries, then the rows of the notes they make.
///
/// Nothing may read a table while rows of it wait here. `apply` inserts them before it reads
/// anything of a record with rows waiting (an entry of a record the batch already wrote),
/// before it materialises the records, and before a record's merge (`Replica.ungathered`);
/// every other read in the batch is of a record with none waiting.
struct GatheredRows {
    /// The tables rows are gathered for, in the order they are inserted (a note's tags go in
    /// after the notes, as each names its note).
    enum Table: Int, CaseIterable {
        case revisions, log, heads, notes

        var insert: MultiRowInsert {
            switch self {
            case .revisions: GatheredRows.revisionInserts
            case .log: GatheredRows.logInserts
            case .heads: GatheredRows.headInserts
            case .notes: GatheredRows.noteInserts
            }
        }
    }

    /// Each table's rows not yet inserted, their values in order, flat.
    private var waiting = [[SQLValue]](repeating: [], count: Table.allCases.count)
    /// A gathered note's tags, inserted once the notes are.
    private var tags: [(NoteID, String)] = []
    /// Records with rows waiting (since the last time every table was inserted).
    private var records = Set<RecordID>()
    /// The record of the last row added: a note's rows come one after the other, and a set
    /// insert for each cost more than the comparison.
    private var lastRecord: RecordID?

    private static let revisionInserts = MultiRowInsert(
        into: "revisions", columns: Replica.storedColumns,
        row: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", maximumRows: 16, everyRowNew: true)
    private static let logInserts = MultiRowInsert(
        into: "log", columns: "replica, seq, record, revision", row: "(?, ?, ?, ?)", maximumRows: 16, everyRowNew: true)
    /// A head already there stays (as `advanceHeads` always had it).
    private static let headInserts = MultiRowInsert(
        into: "heads", columns: "record, revision, kind", row: "(?, ?, ?)", maximumRows: 16, everyRowNew: false)
    /// A note with no row yet (`Replica.upsertNoteRow`).
    private static let noteInserts = MultiRowInsert(
        into: "notes", columns: Replica.noteColumns,
        row: "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", maximumRows: 16, everyRowNew: true)

    var isEmpty: Bool { tags.isEmpty && waiting.allSatisfy(\.isEmpty) }

    /// Adds a row of `record` to `table`; returns the rows to insert now when the table has
    /// `maximumRows` waiting.
    mutating func add(_ values: [SQLValue], of record: RecordID, to table: Table) -> [SQLValue]? {
        let insert = table.insert
        precondition(values.count == insert.valuesPerRow, "\(insert.table): \(insert.valuesPerRow) values a row")
        noteRecord(record)
        if waiting[table.rawValue].isEmpty { waiting[table.rawValue].reserveCapacity(insert.maximumRows * insert.valuesPerRow) }
        waiting[table.rawValue].append(contentsOf: values)
        guard waiting[table.rawValue].count == insert.maximumRows * insert.valuesPerRow else { return nil }
        return take(table)
    }

    mutating func addTag(_ tag: String, of note: NoteID) {
        noteRecord(note)
        tags.append((note, tag))
    }

    /// Whether rows of `record` wait here.
    func hasRows(of record: RecordID) -> Bool { record == lastRecord || records.contains(record) }

    private mutating func noteRecord(_ record: RecordID) {
        guard record != lastRecord else { return }
        records.insert(record)
        lastRecord = record
    }

    /// Takes the rows waiting for `table`.
    private mutating func take(_ table: Table) -> [SQLValue] {
        var taken: [SQLValue] = []
        swap(&taken, &waiting[table.rawValue])
        return taken
    }

    /// Takes every table's rows, in the order they are inserted, and forgets which records
    /// had rows.
    mutating func takeAll() -> (rows: [(Table, [SQLValue])], tags: [(NoteID, String)]) {
        let rows = Table.allCases.map { ($0, take($0)) }
        let taken = tags
        tags = []
        records.removeAll(keepingCapacity: true)
        lastRecord = nil
        return (rows, taken)
    }
}

extension Replica {
    /// Gathers a row for `table` while `apply` gathers rows (`GatheredRows`); false when it
    /// does not, and the caller inserts the row itself.
    func gather(_ values: [SQLValue], of record: RecordID, into table: GatheredRows.Table) throws -> Bool {
        guard gatheredRows != nil else { return false }
        if let full = gatheredRows!.add(values, of: record, to: table) { try insert(table.insert, full) }
        return true
    }

    /// Inserts every gathered row (see `GatheredRows`).
    func insertGatheredRows() throws {
        guard gatheredRows?.isEmpty == false else { return }
        let (tables, tags) = gatheredRows!.takeAll()
        for (table, values) in tables where !values.isEmpty { try insert(table.insert, values) }
        for (note, tag) in tags { try insertTag(tag, of: note) }
    }

    func insertTag(_ tag: String, of note: NoteID) throws {
        try database.run("INSERT INTO note_tags (note, tag) VALUES (?1, ?2)", [.record(note), .text(tag)])
    }

    /// Runs `body` with no rows gathered: those waiting are inserted first, and what `body`
    /// writes goes to the database at once. For a record's merge, which reads what it likes and
    /// may write other records (a conflict copy) in a nested transaction.
    func ungathered<T>(_ body: () throws -> T) throws -> T {
        guard gatheredRows != nil else { return try body() }
        try insertGatheredRows()
        let gathering = gatheredRows
        gatheredRows = nil
        defer { gatheredRows = gathering }
        return try body()
    }

    /// Inserts `values`, whole rows and at most `insert.maximumRows` of them, in one statement.
    func insert(_ insert: MultiRowInsert, _ values: [SQLValue]) throws {
        let rows = values.count / insert.valuesPerRow
        precondition(rows >= 1 && rows <= insert.maximumRows && values.count % insert.valuesPerRow == 0, "\(insert.table): whole rows, one statement's worth")
        try database.run(insert.text(rows: rows), values)
        guard insert.everyRowNew, database.changes != rows else { return }
        throw ReplicaError.invalid(
            "\(insert.table) already held \(rows - database.changes) of \(rows) rows the library was not known to have; \(ReplicaError.damagedLibraryAdvice)")
    }
}
