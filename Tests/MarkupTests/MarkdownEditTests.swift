import Testing
import Markup
import Merge

/// Editing in Markdown changes only the blocks the person changed (docs/markdown.md).
@Suite struct MarkdownEditTests {
    static let note = """
        <h1>Shopping</h1>\
        <p>Buy <b>fresh</b> <span style="color: #c00">red</span> apples</p>\
        <ul data-type="taskList"><li data-checked="true"><p>milk</p></li><li data-checked="false"><p>eggs</p></li></ul>\
        <p style="color: blue">Call <i>mum</i></p>\
        <p><br></p>\
        <table><tr><td>kept</td></tr></table>
        """

    @Test func theShownMarkdownSavedUnchangedChangesNothing() {
        let base = HTMLBlocks.split(Self.note)
        let shown = MarkdownExport.markdown(base)
        #expect(MarkdownEdit.apply(shown, to: base) == base)
        #expect(MarkdownEdit.apply(shown.replacing("\n", with: "\r\n") + "\n\n", to: base) == base)
    }

    @Test func changingOneParagraphKeepsEveryOtherBlockByteForByte() {
        let base = HTMLBlocks.split(Self.note)
        let shown = MarkdownExport.markdown(base)
        #expect(shown.contains("Call *mum*"))
        let edited = MarkdownEdit.apply(shown.replacing("Call *mum*", with: "Call *dad*"), to: base)
        #expect(edited.count == base.count)
        for index in base.indices where index != 4 {
            #expect(edited[index] == base[index], "block \(index) was rewritten")
        }
        #expect(edited[4] == Block(.paragraph, content: "Call <em>dad</em>"))
        #expect(HTMLBlocks.join(edited).contains("<b>fresh</b> <span style=\"color: #c00\">red</span>"))
    }

    @Test func addingAndTickingItemsTouchesOnlyThoseItems() {
        let base = HTMLBlocks.split(Self.note)
        let shown = MarkdownExport.markdown(base)
        #expect(shown.contains("- [x] milk\n- [ ] eggs\n"))
        let text = shown.replacing("- [ ] eggs\n", with: "- [x] eggs\n- [ ] bread\n")
        let edited = MarkdownEdit.apply(text, to: base)
        #expect(edited.count == base.count + 1)
        #expect(edited[0...2] == base[0...2])
        #expect(edited[3].checked == true && edited[3].text.contains("eggs"))
        #expect(edited[4].checked == false && edited[4].text.contains("bread"))
        #expect(Array(edited[5...]) == Array(base[4...]))
    }

    @Test func deletingABlockDropsOnlyThatBlock() {
        let base = HTMLBlocks.split(Self.note)
        let shown = MarkdownExport.markdown(base)
        let edited = MarkdownEdit.apply(shown.replacing("Buy **fresh** red apples\n\n", with: ""), to: base)
        #expect(edited == [base[0]] + Array(base[2...]))
    }

    @Test func anEditOfEverythingIsAFreshConversion() {
        let base = HTMLBlocks.split(Self.note)
        #expect(MarkdownEdit.apply("# New\n\n- a\n", to: base) == MarkdownImport.blocks("# New\n\n- a\n"))
        #expect(MarkdownEdit.apply("", to: base) == [])
        #expect(MarkdownEdit.apply("text\n", to: []) == [Block(.paragraph, content: "text")])
    }
}
