import Merge

/// Markdown into a note body: cmark-gfm (CommonMark plus GFM tables, task lists,
/// strikethrough and autolinks) renders HTML, and `HTMLBlocks.split` turns that into the block
/// model, so every construct lands where the editor's HTML would: headings, paragraphs, list
/// items (task items as checklist items, checked or not), code, quotes, rules; tables and raw
/// HTML as opaque blocks, verbatim. The rules are in docs/markdown.md.
public enum MarkdownImport {
    /// The HTML cmark-gfm makes of `markdown` (after `normalized`).
    public static func html(_ markdown: String) -> String {
        CmarkDocument(normalized(markdown)).html
    }

    /// The blocks of `markdown`.
    public static func blocks(_ markdown: String) -> [Block] {
        HTMLBlocks.split(html(markdown))
    }

    /// `markdown` without a byte-order mark, with every line ending a `\n` (CRLF and lone CR
    /// are what Windows and old Mac editors write; cmark-gfm reads them the same, but line
    /// numbers and unit texts in `MarkdownEdit` need one form).
    public static func normalized(_ markdown: String) -> String {
        var text = markdown
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        guard text.utf8.contains(0x0D) else { return text }
        // "\r\n" is one Character in Swift: compare scalars.
        var out = String.UnicodeScalarView()
        var previousWasCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\r" {
                out.append("\n")
                previousWasCR = true
                continue
            }
            if scalar == "\n", previousWasCR {
                previousWasCR = false
                continue
            }
            previousWasCR = false
            out.append(scalar)
        }
        return String(out)
    }
}
