/// The YAML front matter some Markdown files start with (Obsidian, Hugo, Jekyll, Joplin):
/// a first line `---`, the YAML, and a line `---` (or `...`).
public enum FrontMatterBlock {
    /// The YAML text (nil when there is no front matter) and the Markdown after it. `text` is
    /// normalized first (no byte-order mark, `\n` line ends); without a closing line the
    /// first `---` is a rule, as Markdown reads it, and there is no front matter.
    public static func split(_ text: String) -> (yaml: String?, body: String) {
        let text = MarkdownImport.normalized(text)
        guard isFence(text.prefix(while: { $0 != "\n" }), closing: false) else { return (nil, text) }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
        lines.removeFirst()
        var yaml: [Substring] = []
        while let line = lines.first {
            lines.removeFirst()
            if isFence(line, closing: true) {
                return (yaml.joined(separator: "\n"), lines.joined(separator: "\n"))
            }
            yaml.append(line)
        }
        return (nil, text)
    }

    private static func isFence(_ line: Substring, closing: Bool) -> Bool {
        let trimmed = line.reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed()
        return String(trimmed) == "---" || (closing && String(trimmed) == "...")
    }
}
