import Merge

/// Note bodies as the Markdown people read and edit (`notes.get {format: "markdown"}`,
/// `notesctl show`, the editor, `export --markdown`): `HTMLBlocks.markdown` with only the
/// backslashes that change how cmark-gfm reads the text — `milk [x] a_b`, not
/// `milk \[x\] a\_b` — each plainer rendering checked by parsing it.
public enum MarkdownExport {
    public static func markdown(_ blocks: [Block]) -> String {
        markdownWithLines(blocks).text
    }

    /// `markdown(blocks)` and the line each block starts on (see `HTMLBlocks.markdownWithLines`).
    public static func markdownWithLines(_ blocks: [Block]) -> (text: String, startLines: [Int?]) {
        HTMLBlocks.markdownWithLines(blocks, readsTheSame: readsTheSame)
    }

    /// Whether two inline renderings give the same blocks when cmark-gfm reads them.
    static func readsTheSame(_ plainer: String, _ escaped: String) -> Bool {
        MarkdownImport.blocks(plainer) == MarkdownImport.blocks(escaped)
    }
}
