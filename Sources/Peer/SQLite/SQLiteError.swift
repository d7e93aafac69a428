import CSQLite

/// An error from SQLite: the result code, SQLite's own message and the statement that failed.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public let resultCode: Int32
    public let message: String
    public let sql: String?

    public init(resultCode: Int32, message: String, sql: String? = nil) {
        self.resultCode = resultCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code (the low byte of an extended code).
    public var primaryCode: Int32 { resultCode & 0xFF }

    /// SQLite's code for a damaged database file, for errors that find damage without SQLite.
    public static let corruptCode = SQLITE_CORRUPT

    public var isCorrupt: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }

    public var description: String {
        var text = "SQLite error \(resultCode): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }
}
