#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed file-system call: the errno, what was being done and the path, plus what the
/// user can do about it.
struct FileSystemError: Error, Hashable, Sendable, CustomStringConvertible {
    var code: Int32
    /// What was being done, e.g. "create the data directory".
    var operation: String
    var path: String
    /// What to do about it, e.g. "pass --data-dir DIR".
    var hint: String?

    var reason: String { String(cString: strerror(code)) }

    var description: String { "cannot \(operation) \(path): \(reason)" + (hint.map { "; \($0)" } ?? "") }
}

enum FileSystem {
    /// `lstat(2)`: the file's own status (a symbolic link is not followed); `nil` with
    /// `errno` set when it fails.
    static func linkStatus(_ path: String) -> stat? {
        var status = stat()
        return lstat(path, &status) == 0 ? status : nil
    }

    static func isDirectory(_ status: stat) -> Bool { status.st_mode & S_IFMT == S_IFDIR }

    /// `mkdir -p` giving every directory it creates `mode`; existing ones are left as they are.
    static func createDirectories(_ path: String, mode: mode_t, operation: String, hint: String?) throws(FileSystemError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                throw FileSystemError(code: errno, operation: operation, path: prefix, hint: hint)
            }
        }
        var status = stat()
        guard stat(path, &status) == 0 else { throw FileSystemError(code: errno, operation: operation, path: path, hint: hint) }
        guard isDirectory(status) else { throw FileSystemError(code: ENOTDIR, operation: operation, path: path, hint: hint) }
    }

    /// The directory part of `path` (`/a/b` for `/a/b/c`, `/` for `/c`, `.` for `c`).
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }
}
