/// A second, read-only connection to a library, for reads that run on the other core while
/// the engine's connection does its part of the same request: the second half of a search's
/// ranking, a listing's ids for their short forms (docs/decisions.md, "Search on two cores").
/// Used by one thread at a time: the request that borrows it waits for both parts. It sees
/// what the engine committed before the request, as the engine's own connection does.
public final class ParallelReader: @unchecked Sendable {
    public let database: Database

    init(database: Database) { self.database = database }

    /// Gives back the pages this connection cached, so the idle daemon stays small (the next
    /// request reads them again from the kernel's cache).
    public func releaseMemory() { try? database.execute("PRAGMA shrink_memory") }
}

extension Replica {
    /// The library's `ParallelReader`, opened on first use and kept.
    public func parallelReader() throws -> ParallelReader {
        if let parallelReaderConnection { return parallelReaderConnection }
        let reader = ParallelReader(database: try Database(path: path, readOnly: true))
        parallelReaderConnection = reader
        return reader
    }

    /// Closes the parallel reader; it opens again when next used. SQLite changes a file's
    /// journal mode only with one connection open, and a connection that read the file in one
    /// mode is not kept into the other.
    func closeParallelReader() { parallelReaderConnection = nil }
}
