#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

enum DataDirectory {
    private static let hint = "create it yourself or pass --data-dir DIR"

    /// Creates `path` and any missing parents with mode 0700 (private to this user: it holds
    /// the notes and the device's secret key). An existing directory is used as it is (under
    /// systemd, `StateDirectoryMode=` owns its mode), but one that other users can enter is
    /// reported: the returned warning names the `chmod` that makes it private.
    @discardableResult
    static func prepare(_ path: String) throws(FileSystemError) -> String? {
        var status = stat()
        if stat(path, &status) == 0 {
            guard FileSystem.isDirectory(status) else { throw FileSystemError(code: ENOTDIR, operation: "use the data directory", path: path, hint: hint) }
            guard access(path, R_OK | W_OK | X_OK) == 0 else { throw FileSystemError(code: errno, operation: "use the data directory", path: path, hint: hint) }
            let mode = status.st_mode & 0o777
            guard mode & 0o077 == 0 else {
                return "the data directory \(path) is open to other users (mode \(String(mode, radix: 8))); the notes are only private once you run: chmod 700 \(path)"
            }
            return nil
        }
        guard errno == ENOENT || errno == ENOTDIR else { throw FileSystemError(code: errno, operation: "use the data directory", path: path, hint: hint) }
        try FileSystem.createDirectories(path, mode: 0o700, operation: "create the data directory", hint: hint)
        return nil
    }
}
