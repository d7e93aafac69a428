import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// A copy of a live database taken with SQLite's online backup API, consistent as of one
/// moment: the source is read through its own connection inside one read transaction held
/// across every step, so in WAL mode the daemon's writer is never blocked and no step sees a
/// later commit (nothing makes the copy restart under a write storm). The copy is a plain
/// single file (rollback journal), created mode 0600, and checked with `integrity_check`.
public enum OnlineBackup {
    /// What a finished copy holds.
    public struct Copy: Sendable, Equatable {
        public let pages: Int
        public let steps: Int
        public let bytes: Int64
    }

    /// Why a copy could not be made.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The destination exists already: a copy never overwrites anything.
        case destinationExists(String)
        /// The finished copy failed `integrity_check` (it was removed).
        case damagedCopy(path: String, problems: [String])

        public var description: String {
            switch self {
            case .destinationExists(let path): "\(path) already exists; choose another name or move it aside"
            case .damagedCopy(let path, let problems):
                "the copy at \(path) failed integrity_check (\(problems.prefix(3).joined(separator: "; "))) and was removed; check the disk and try again"
            }
        }
    }

    /// Pages copied per step (4 MiB at the default 4 KiB page).
    public static let defaultPagesPerStep: Int32 = 1024

    /// Copies the database at `source` into a new file at `destination`, `pagesPerStep` pages
    /// at a time, calling `afterStep` with (pages copied, pages in all) between steps.
    public static func copy(
        from source: String, to destination: String, pagesPerStep: Int32 = defaultPagesPerStep,
        afterStep: (Int, Int) -> Void = { _, _ in }
    ) throws -> Copy {
        let created = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard created >= 0 else {
            let code = errno
            if code == EEXIST { throw Failure.destinationExists(destination) }
            throw SystemError(operation: "create \(destination)", code: code)
        }
        close(created)
        do {
            let copy = try copyInto(source: source, destination: destination, pagesPerStep: pagesPerStep, afterStep: afterStep)
            var status = stat()
            guard stat(destination, &status) == 0 else { throw SystemError(operation: "stat \(destination)", code: errno) }
            return Copy(pages: copy.pages, steps: copy.steps, bytes: Int64(status.st_size))
        } catch {
            unlink(destination)
            unlink(destination + "-journal")
            throw error
        }
    }

    private static func copyInto(
        source sourcePath: String, destination destinationPath: String, pagesPerStep: Int32, afterStep: (Int, Int) -> Void
    ) throws -> (pages: Int, steps: Int) {
        let source = try Database(path: sourcePath, readOnly: true)
        let destination = try Database(path: destinationPath)
        try destination.execute("PRAGMA journal_mode=DELETE")
        let (pages, steps) = try source.read { () throws -> (Int, Int) in
            // The first read fixes the snapshot every step copies from.
            _ = try source.first("SELECT count(*) FROM sqlite_schema") { $0.int(0) }
            guard let backup = sqlite3_backup_init(destination.handle, "main", source.handle, "main") else {
                throw destination.error(sqlite3_errcode(destination.handle), sql: nil)
            }
            var steps = 0
            var code: Int32 = SQLITE_OK
            repeat {
                code = sqlite3_backup_step(backup, pagesPerStep)
                steps += 1
                let total = Int(sqlite3_backup_pagecount(backup))
                if code == SQLITE_OK || code == SQLITE_BUSY || code == SQLITE_LOCKED {
                    afterStep(total - Int(sqlite3_backup_remaining(backup)), total)
                }
            } while code == SQLITE_OK || code == SQLITE_BUSY || code == SQLITE_LOCKED
            let pages = Int(sqlite3_backup_pagecount(backup))
            let finished = sqlite3_backup_finish(backup)
            guard code == SQLITE_DONE, finished == SQLITE_OK else {
                throw destination.error(code == SQLITE_DONE ? finished : code, sql: nil)
            }
            return (pages, steps)
        }
        // The copied header says WAL (the source's mode); a backup is one self-contained file.
        try destination.execute("PRAGMA journal_mode=DELETE")
        let problems = try destination.check(full: true)
        guard problems.isEmpty else { throw Failure.damagedCopy(path: destinationPath, problems: problems) }
        return (pages, steps)
    }
}
