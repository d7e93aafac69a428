import Foundation

/// Files kept in the repository whose content (or part of it) is generated from the programs'
/// own help, so they cannot drift: a test renders what the file must hold and compares.
/// `NOTES_UPDATE_GENERATED=1 swift test --filter …` writes the rendering instead, for a
/// person to review in the diff and commit.
public enum GeneratedText {
    public static var updating: Bool { ProcessInfo.processInfo.environment["NOTES_UPDATE_GENERATED"] == "1" }

    /// Compares (or, when updating, replaces) the lines between `begin` and `end` in the file
    /// at `path` (relative to the package root) with `content`. Returns a description of the
    /// difference, or nil when the file holds exactly `content` there.
    public static func checkSection(_ path: String, begin: String, end: String, content: String) throws -> String? {
        let url = URL(fileURLWithPath: packageRoot + "/" + path)
        let text = try String(contentsOf: url, encoding: .utf8)
        var lines = text.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: begin), let stop = lines.firstIndex(of: end), start < stop else {
            return "\(path) has no section between the lines \"\(begin)\" and \"\(end)\""
        }
        let wanted = content.isEmpty ? [] : content.components(separatedBy: "\n")
        let current = Array(lines[(start + 1)..<stop])
        if current == wanted { return nil }
        if updating {
            lines.replaceSubrange((start + 1)..<stop, with: wanted)
            try lines.joined(separator: "\n").write(to: url, atomically: true, encoding: .utf8)
            return nil
        }
        return difference(path, current: current, wanted: wanted)
    }

    /// Compares (or, when updating, writes) the whole file at `path` with `content`.
    public static func checkFile(_ path: String, content: String) throws -> String? {
        let url = URL(fileURLWithPath: packageRoot + "/" + path)
        let current = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        if current == content { return nil }
        if updating {
            try content.write(to: url, atomically: true, encoding: .utf8)
            return nil
        }
        return difference(path, current: current.components(separatedBy: "\n"), wanted: content.components(separatedBy: "\n"))
    }

    private static func difference(_ path: String, current: [String], wanted: [String]) -> String {
        let first = zip(current, wanted).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(current.count, wanted.count)
        func line(_ lines: [String]) -> String { first < lines.count ? lines[first] : "(end)" }
        return """
            \(path) is out of date with the programs' help (first difference at generated line \(first + 1):
              file: \(line(current))
              help: \(line(wanted)))
            regenerate it with NOTES_UPDATE_GENERATED=1 swift test --filter ManualPageTests (or ShellCompletionTests) and review the diff
            """
    }
}

/// man(7) text from plain help text.
public enum Roff {
    /// Escapes text for roff: backslashes, hyphens (so they print as minus signs in options),
    /// and a leading `.` or `'` that roff would read as a request.
    public static func escape(_ text: String) -> String {
        var escaped = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
        return escaped
    }

    /// A block of preformatted lines (`.nf` … `.fi`), each escaped.
    public static func preformatted(_ text: String) -> String {
        let lines = text.components(separatedBy: "\n").map { $0.isEmpty ? "" : escape($0) }
        return ([".nf"] + lines + [".fi"]).joined(separator: "\n")
    }
}
