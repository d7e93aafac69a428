import Testing
import Markup
@testable import Merge

@Suite struct MarkdownImportTests {
    @Test func theGroceriesNoteKeepsItsStructure() {
        let blocks = MarkdownImport.blocks("# Groceries\n\n- [ ] milk\n- [x] eggs\n\nBuy *fresh* ones.\n")
        #expect(blocks.count == 4)
        #expect(blocks[0] == Block(.heading(level: 1), content: "Groceries"))
        #expect(blocks[1].checked == false)
        #expect(blocks[1].text.trimmingPrefix(" ") == "milk")
        #expect(blocks[2].checked == true)
        #expect(blocks[3] == Block(.paragraph, content: "Buy <em>fresh</em> ones."))
    }

    @Test func everyConstructLandsInTheBlockModel() {
        let markdown = """
            ## Plan

            1. one
            2. two
               - nested **bold** and ~~gone~~
            3. three

            > quoted *text*

                indented code

            ```swift
            let a = 1 < 2
            ```

            ---

            | a | b |
            |---|---|
            | 1 | 2 |

            <details><summary>More</summary>kept</details>

            see https://example.org and [a link](https://example.org/x)
            """
        let blocks = MarkdownImport.blocks(markdown)
        let kinds = blocks.map(\.kind)
        #expect(kinds.count == 12)
        #expect(kinds[0] == .heading(level: 2))
        #expect(blocks[1].isOrderedListItem == true && blocks[1].depth == 1)
        #expect(blocks[3].isOrderedListItem == false && blocks[3].depth == 2)
        #expect(blocks[3].content == "nested <strong>bold</strong> and <del>gone</del>")
        #expect(kinds[5] == .quote)
        #expect(blocks[6] == Block(.code, content: "<code>indented code\n</code>"))
        #expect(blocks[7].content == "<code class=\"language-swift\">let a = 1 &lt; 2\n</code>")
        #expect(kinds[8] == .rule)
        #expect(kinds[9] == .opaque && blocks[9].content.hasPrefix("<table>") && blocks[9].content.hasSuffix("</table>"))
        #expect(blocks[10] == Block(.opaque, content: "<details><summary>More</summary>kept</details>"))
        #expect(blocks[11].content == "see <a href=\"https://example.org\">https://example.org</a> and <a href=\"https://example.org/x\">a link</a>")
    }

    @Test func aByteOrderMarkAndCRLFReadLikeLF() {
        let plain = MarkdownImport.blocks("# T\n\n- a\n- b\n\ntext\nmore\n")
        #expect(MarkdownImport.blocks("\u{FEFF}# T\r\n\r\n- a\r\n- b\r\n\r\ntext\r\nmore\r\n") == plain)
        #expect(MarkdownImport.blocks("# T\r\rm- a\r- b\r\rtext\rmore\r") != plain)
        #expect(MarkdownImport.blocks("# T\r\r- a\r- b\r\rtext\rmore\r") == plain)
    }
}

extension MarkdownImportTests {
    /// cmark-gfm's extension characters live in one process-wide table: conversions on many
    /// threads at once must still all see strikethrough and tables.
    @Test func conversionsOnManyThreadsAtOnceAgree() async {
        let markdown = "~~gone~~ kept\n\n| a |\n|---|\n| 1 |\n"
        let expected = MarkdownImport.blocks(markdown)
        #expect(expected.first == Block(.paragraph, content: "<del>gone</del> kept"))
        let results = await withTaskGroup(of: [[Block]].self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<200).map { _ in MarkdownImport.blocks(markdown) } }
            }
            var all: [[Block]] = []
            for await batch in group { all += batch }
            return all
        }
        #expect(results.count == 1600)
        #expect(results.allSatisfy { $0 == expected })
    }
}
