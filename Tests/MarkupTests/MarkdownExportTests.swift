import Testing
import Markup
import Merge

/// `notesctl show` and the editor print Markdown without needless backslashes.
@Suite struct MarkdownExportTests {
    @Test func onlyTheBackslashesThatMatterAreWritten() {
        let blocks = HTMLBlocks.split("<p>snake_case and [[Wiki Link]] #tag 2 * 3 a|b x &gt; y</p><p>__init__ *not emphasis* [a](b)</p>")
        #expect(MarkdownExport.markdown(blocks) == "snake_case and [[Wiki Link]] #tag 2 * 3 a|b x > y\n\n\\_\\_init\\_\\_ \\*not emphasis\\* \\[a](b)\n")
        #expect(MarkdownImport.blocks(MarkdownExport.markdown(blocks)) == HTMLBlocks.split(
            "<p>snake_case and [[Wiki Link]] #tag 2 * 3 a|b x &gt; y</p>\n<p>__init__ *not emphasis* [a](b)</p>"))
    }

    /// The example: a checklist pasted as one paragraph printed `\- \[ \] milk\`.
    @Test func textThatLooksLikeAListIsEscapedOnlyAtTheLineStart() {
        let blocks = HTMLBlocks.split("<p>- [ ] milk<br>- [x] eggs</p><h2>Total # 3</h2><p># not a heading</p>")
        #expect(MarkdownExport.markdown(blocks) == "\\- [ ] milk\\\n\\- [x] eggs\n\n## Total # 3\n\n\\# not a heading\n")
    }

    @Test func aTaskLookalikeAtAnItemsStartKeepsItsBackslash() {
        let blocks = HTMLBlocks.split("<ul><li>[ ] not a task</li></ul>")
        let markdown = MarkdownExport.markdown(blocks)
        #expect(markdown == "- \\[ ] not a task\n")
        #expect(MarkdownImport.blocks(markdown) == blocks)
    }
}
