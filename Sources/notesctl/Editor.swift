import Foundation

/// `edit` on a terminal: the note in `$VISUAL`/`$EDITOR` (else `vi`) on a private temp file.
enum Editor {
    /// The editor command line: `$VISUAL`, else `$EDITOR`, else `vi`. It may carry arguments
    /// (`code --wait`), so it runs through `/bin/sh`.
    static func command(environment: [String: String]) -> String {
        for key in ["VISUAL", "EDITOR"] {
            if let value = environment[key], !value.allSatisfy(\.isWhitespace) { return value }
        }
        return "vi"
    }

    /// Opens `text` in the editor and waits. Returns the edited text, or `nil` when the file
    /// was saved unchanged (or not saved).
    static func edit(_ text: String, fileName: String, environment: [String: String]) throws(CLIFailure) -> String? {
        let temporary = (environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 }) ?? "/tmp"
        var template = Array("\(temporary)/notesctl-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw CLIFailure("cannot create a temporary directory in \(temporary): \(String(cString: strerror(errno))); set TMPDIR")
        }
        let directory = String(cString: created)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/" + fileName
        let original = Data(text.utf8)
        guard FileManager.default.createFile(atPath: path, contents: original, attributes: [.posixPermissions: 0o600]) else {
            throw CLIFailure("cannot write the temporary file \(path)")
        }
        let editor = command(environment: environment)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(editor) \"$1\"", "notesctl-editor", path]
        do { try process.run() } catch {
            throw CLIFailure("cannot start the editor \(editor): \(error); set VISUAL or EDITOR")
        }
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw CLIFailure("the editor (\(editor)) exited with status \(process.terminationStatus); nothing saved")
        }
        guard let edited = FileManager.default.contents(atPath: path) else {
            throw CLIFailure("the edited file \(path) is gone; nothing saved")
        }
        guard edited != original else { return nil }
        guard let result = String(data: edited, encoding: .utf8) else {
            throw CLIFailure("the edited file is not UTF-8 text; nothing saved")
        }
        return result
    }
}
