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
        // Ticked in its own form: still TipTap's `data-checked`, content byte for byte.
        #expect(edited[3].checked == true && edited[3].content == base[3].content)
        #expect(edited[3].attributes == [HTMLAttribute(name: "data-checked", value: "true")])
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

    @Test func tickingKeepsEachEditorsForm() {
        let forms = [
            "<ul><li data-checked=\"false\">a</li></ul>",
            "<ol><li data-list=\"unchecked\">a</li></ol>",
            "<ul><li aria-checked=\"false\">a</li></ul>",
            "<ul><li class=\"task unchecked\">a</li></ul>",
            "<ul><li><input type=\"checkbox\" disabled=\"\" /> a</li></ul>",
        ]
        for html in forms {
            let base = HTMLBlocks.split(html)
            let shown = MarkdownExport.markdown(base)
            let edited = MarkdownEdit.apply(shown.replacing("[ ]", with: "[x]"), to: base)
            #expect(edited.count == 1 && edited[0].checked == true, "\(html)")
            #expect(edited[0].text == base[0].text, "\(html)")
            #expect(edited[0].withChecked(false) == base[0], "\(html): unticking gives the original back")
        }
        // Quill 1 keeps the state on the list: the item is converted instead.
        let quill = HTMLBlocks.split("<ul data-checked=\"false\"><li>a</li></ul>")
        #expect(quill[0].withChecked(true) == nil)
        #expect(MarkdownEdit.apply("- [x] a\n", to: quill)[0].checked == true)
    }
}
