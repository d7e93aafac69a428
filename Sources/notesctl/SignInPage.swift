#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The page `notesctl ui` opens: it forwards the browser to the one-time sign-in link. Only
/// this user can read it (mode 0600, in a directory only this user can enter), so the token
/// never appears on a command line that other users can read.
enum SignInPage {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Writes the page and returns its path: in `$XDG_RUNTIME_DIR/notesd` when that is a
    /// directory of this user's, else in a new private directory under /tmp.
    static func write(url: String, environment: [String: String]) throws -> String {
        let directory = try privateDirectory(environment)
        let path = directory + "/sign-in.html"
        unlink(path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let bytes = Array(html(url: url).utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))") }
        return path
    }

    /// A page that forwards at once, with the link to click should it not.
    static func html(url: String) -> String {
        let escaped = url.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        return """
            <!doctype html>
            <meta charset="utf-8">
            <meta http-equiv="refresh" content="0;url=\(escaped)">
            <title>Signing in to notesd</title>
            <p><a href="\(escaped)">Sign in to notesd</a></p>

            """
    }

    private static func privateDirectory(_ environment: [String: String]) throws -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            let directory = runtime + "/notesd"
            mkdir(directory, 0o700)
            var status = stat()
            if lstat(directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == geteuid(), status.st_mode & 0o077 == 0 {
                return directory
            }
        }
        var template = Array("/tmp/notesctl-ui-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw Failure(description: "cannot create a private directory in /tmp: \(String(cString: strerror(errno)))") }
        return String(cString: created)
    }
}
