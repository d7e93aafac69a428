import Control
import Foundation

/// The Markdown file `export --markdown` writes for a note: YAML front matter with the note's
/// fields (title, tags, times, pin, colour, folder, id), then its Markdown. `import` reads the
/// same keys (docs/markdown.md), so export then import gives the note back.
enum MarkdownFile {
    static func text(summary: NoteSummary, body: String) -> String {
        var lines = ["---", "title: " + quoted(summary.title)]
        if !summary.tags.isEmpty { lines.append("tags: [" + summary.tags.map(quoted).joined(separator: ", ") + "]") }
        lines.append("created: " + iso8601(summary.created))
        lines.append("modified: " + iso8601(summary.modified))
        if summary.pinned { lines.append("pinned: true") }
        if let color = summary.color { lines.append("color: " + quoted(color)) }
        if !summary.folderPath.isEmpty { lines.append("folder: " + quoted(summary.folderPath)) }
        lines.append("id: " + quoted(summary.id))
        lines.append("---")
        return lines.joined(separator: "\n") + "\n" + body
    }

    static func iso8601(_ time: Timestamp) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: time.date)
    }

    /// A YAML double-quoted scalar: `"`, `\` and control characters escaped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += String(format: "\\x%02X", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
