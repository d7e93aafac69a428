import Testing
@testable import Merge

/// Splitting realistic editor HTML into blocks and joining it back.
@Suite struct HTMLBlocksTests {
    let bullet = ListContainer(ordered: false)
    let numbered = ListContainer(ordered: true)

    /// `split` is stable through `join`, and no text is lost (the two invariants of docs/merge.md).
    func expectInvariants(_ html: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let blocks = HTMLBlocks.split(html)
        #expect(HTMLBlocks.split(HTMLBlocks.join(blocks)) == blocks, "split(join(split(h))) != split(h) for \(html)",
                sourceLocation: sourceLocation)
        let inputText = HTMLBlocks.text(html).filter { !$0.isWhitespace }
        let blockText = blocks.map(\.text).joined().filter { !$0.isWhitespace }
        #expect(inputText == blockText, "text differs for \(html)", sourceLocation: sourceLocation)
    }

    @Test func paragraphsHeadingsQuotesAndRules() {
        let html = #"<h1>Trip</h1><p class="lead">Pack <b>light</b>, see <a href="https://example.org/?a=1&amp;b=2">the list</a>.</p><blockquote><p>Travel far.</p><p>— someone</p></blockquote><hr><h3>Day 1</h3>"#
        let blocks = HTMLBlocks.split(html)
        #expect(blocks == [
            Block(.heading(level: 1), content: "Trip"),
            Block(.paragraph, attributes: [HTMLAttribute(name: "class", value: "lead")],
                  content: #"Pack <b>light</b>, see <a href="https://example.org/?a=1&amp;b=2">the list</a>."#),
            Block(.quote, content: "<p>Travel far.</p><p>— someone</p>"),
            Block(.rule),
            Block(.heading(level: 3), content: "Day 1"),
        ])
        #expect(HTMLBlocks.join(blocks) == #"""
            <h1>Trip</h1>
            <p class="lead">Pack <b>light</b>, see <a href="https://example.org/?a=1&amp;b=2">the list</a>.</p>
            <blockquote><p>Travel far.</p><p>— someone</p></blockquote>
            <hr>
            <h3>Day 1</h3>
            """#)
        #expect(blocks[1].text == "Pack light, see the list.")
        expectInvariants(html)
    }

    @Test func nestedListsSplitIntoItemsAndJoinBackExactly() {
        let html = "<ul><li>fruit<ul><li>apples</li><li>pears<ol><li>conference</li><li>williams</li></ol></li></ul></li><li>bread</li></ul>"
        let blocks = HTMLBlocks.split(html)
        #expect(blocks == [
            Block(.listItem(containers: [bullet]), content: "fruit"),
            Block(.listItem(containers: [bullet, bullet]), content: "apples"),
            Block(.listItem(containers: [bullet, bullet]), content: "pears"),
            Block(.listItem(containers: [bullet, bullet, numbered]), content: "conference"),
            Block(.listItem(containers: [bullet, bullet, numbered]), content: "williams"),
            Block(.listItem(containers: [bullet]), content: "bread"),
        ])
        #expect(blocks.map(\.depth) == [1, 2, 2, 3, 3, 1])
        #expect(HTMLBlocks.join(blocks) == html)
        expectInvariants(html)
    }

    @Test func quillChecklistsKeepTheirListAttributes() throws {
        // Quill 1 writes one <ul data-checked> per run of equally ticked items.
        let html = #"<ul data-checked="true"><li>Buy milk</li></ul><ul data-checked="false"><li>Call Ann</li><li>Post letter</li></ul>"#
        let blocks = HTMLBlocks.split(html)
        #expect(blocks.map(\.checked) == [true, false, false])
        #expect(blocks.map(\.text) == ["Buy milk", "Call Ann", "Post letter"])
        // Top-level blocks, lists included, are joined with a newline between them.
        #expect(HTMLBlocks.join(blocks) == html.replacing("</ul><ul", with: "</ul>\n<ul"))
        expectInvariants(html)
    }

    @Test func checklistStatesFromEveryEditor() {
        let cases: [(String, [Bool?])] = [
            // TipTap / ProseMirror task lists.
            (#"<ul data-type="taskList"><li data-type="taskItem" data-checked="true"><label><input type="checkbox" checked="checked"><span></span></label><div><p>Done</p></div></li><li data-type="taskItem" data-checked="false"><label><input type="checkbox"><span></span></label><div><p>Todo</p></div></li></ul>"#,
             [true, false]),
            // Quill 2.
            (#"<ol><li data-list="checked">a</li><li data-list="unchecked">b</li><li data-list="bullet">c</li></ol>"#,
             [true, false, nil]),
            // Lexical.
            (#"<ul><li role="checkbox" aria-checked="true">a</li><li role="checkbox" aria-checked="false">b</li></ul>"#,
             [true, false]),
            // GitHub-style task lists and hand-written HTML.
            (#"<ul><li class="task-list-item"><input type="checkbox" class="task-list-item-checkbox" checked disabled> a</li><li><INPUT TYPE=checkbox> b</li><li>plain <input type="checkbox" checked></li></ul>"#,
             [true, false, nil]),
            // Class names.
            (#"<ul class="checklist"><li class="checked">a</li><li class="unchecked">b</li></ul>"#, [true, false]),
        ]
        for (html, expected) in cases {
            let blocks = HTMLBlocks.split(html)
            #expect(blocks.map(\.checked) == expected, "\(html)")
            #expect(HTMLBlocks.join(blocks) == html, "\(html)")
            expectInvariants(html)
        }
        let quill2 = HTMLBlocks.split(#"<ol><li data-list="bullet">a</li><li data-list="ordered">b</li><li>c</li></ol>"#)
        #expect(quill2.map(\.isOrderedListItem) == [false, true, true])
    }

    @Test func tiptapNestedTaskListStaysInsideItsItem() {
        // The nested list sits inside a <div> of the item: it is part of that item's content.
        let html = #"<ul data-type="taskList"><li data-checked="false"><label><input type="checkbox"></label><div><p>parent</p><ul data-type="taskList"><li data-checked="true"><label><input type="checkbox" checked></label><div><p>child</p></div></li></ul></div></li></ul>"#
        let blocks = HTMLBlocks.split(html)
        #expect(blocks.count == 1)
        #expect(blocks.first?.checked == false)
        #expect(HTMLBlocks.join(blocks) == html)
        expectInvariants(html)
    }

    @Test func codeBlocksKeepEveryCharacter() {
        let escaped = #"<pre><code class="language-swift">if a &lt; b {&#10;    x &lt;&lt;= 1 // &amp;&amp; done&#10;}</code></pre>"#
        let raw = "<pre>if a < b && c<5 {\n  print(\"<\")\n}\n</pre>"
        let escapedBlocks = HTMLBlocks.split(escaped)
        #expect(escapedBlocks.count == 1)
        #expect(escapedBlocks.first?.kind == .code)
        #expect(escapedBlocks.first?.text == "if a < b {\n    x <<= 1 // && done\n}")
        let rawBlocks = HTMLBlocks.split(raw)
        #expect(rawBlocks == [Block(.code, content: "if a &lt; b && c&lt;5 {\n  print(\"&lt;\")\n}\n")])
        #expect(rawBlocks.first?.text == "if a < b && c<5 {\n  print(\"<\")\n}\n")
        expectInvariants(escaped)
        expectInvariants(raw)
    }

    @Test func tablesAndUnknownElementsAreOpaqueAndVerbatim() {
        let table = #"<table class="grid"><tbody><tr><td>a</td><td>b &amp; c</td></tr></tbody></table>"#
        let html = "<p>before</p>\(table)<figure><img src=\"x.png\"><figcaption>cap</figcaption></figure><p>after</p>"
        let blocks = HTMLBlocks.split(html)
        #expect(blocks.map(\.kind) == [.paragraph, .opaque, .opaque, .paragraph])
        #expect(blocks[1].content == table)
        #expect(blocks[1].text == "a\nb & c")
        expectInvariants(html)
    }

    @Test func divParagraphsAndWrappers() {
        // Apple Notes / Trix: a div per line; a div holding blocks is a wrapper.
        let html = #"<div><h1>Title</h1></div><div>first line</div><div><br></div><div class="note"><p>inside</p><ul><li>x</li></ul></div>"#
        let blocks = HTMLBlocks.split(html)
        #expect(blocks == [
            Block(.opaque, content: "<div>"),
            Block(.heading(level: 1), content: "Title"),
            Block(.opaque, content: "</div>"),
            Block(.division, content: "first line"),
            Block(.division, content: "<br>"),
            Block(.opaque, content: #"<div class="note">"#),
            Block(.paragraph, content: "inside"),
            Block(.listItem(containers: [bullet]), content: "x"),
            Block(.opaque, content: "</div>"),
        ])
        expectInvariants(html)
    }

    @Test func tokenizerEdgeCases() {
        // Entities: named, decimal, hex, unknown, without semicolon.
        let entities = HTMLBlocks.split("<p>&lt;tag&gt; &amp; &eacute;&#233;&#xE9; &bogus; &amp no</p>")
        #expect(entities.first?.text == "<tag> & ééé &bogus; &amp no")
        // Attributes: quoted either way, unquoted, bare, upper-case names, entities in values.
        let attributes = HTMLBlocks.split(#"<P CLASS=lead data-x='a "b"' hidden title="x &amp; y">t</P>"#)
        #expect(attributes.first?.attributes == [
            HTMLAttribute(name: "class", value: "lead"), HTMLAttribute(name: "data-x", value: #"a "b""#),
            HTMLAttribute(name: "hidden"), HTMLAttribute(name: "title", value: "x & y"),
        ])
        #expect(HTMLBlocks.join(attributes) == #"<p class="lead" data-x="a &quot;b&quot;" hidden title="x &amp; y">t</p>"#)
        // Comments between and inside blocks; whitespace between blocks.
        let comments = HTMLBlocks.split("<p>a<!-- <p>not a block</p> -->b</p>\n\n  <!-- lone -->\n<p>c</p>")
        #expect(comments == [
            Block(.paragraph, content: "a<!-- <p>not a block</p> -->b"),
            Block(.opaque, content: "<!-- lone -->"),
            Block(.paragraph, content: "c"),
        ])
        #expect(comments.first?.text == "ab")
        // Unclosed <p> and <li>, as HTML allows.
        #expect(HTMLBlocks.split("<p>one<p>two<ul><li>x<li>y</ul>three") == [
            Block(.paragraph, content: "one"), Block(.paragraph, content: "two"),
            Block(.listItem(containers: [bullet]), content: "x"), Block(.listItem(containers: [bullet]), content: "y"),
            Block(.opaque, content: "three"),
        ])
        // <br> and inline markup.
        let lines = HTMLBlocks.split("<p>a<br>b<BR/><span style=\"color:red\">c</span></p>")
        #expect(lines.first?.text == "a\nb\nc")
        // Empty and whitespace-only input.
        #expect(HTMLBlocks.split("").isEmpty)
        #expect(HTMLBlocks.split(" \n\t ").isEmpty)
        #expect(HTMLBlocks.join([]) == "")
        // A `<` that is not a tag is text, written back as &lt;.
        #expect(HTMLBlocks.split("<p>1 < 2 <3 <-> <</p>") == [Block(.paragraph, content: "1 &lt; 2 &lt;3 &lt;-> &lt;")])
        // Script and style bodies are not markup and not visible text.
        let script = HTMLBlocks.split("<p>x</p><script>if (a<b) document.write('<p>')</script><style>p>b{}</style>")
        #expect(script.count == 2)
        #expect(script[1].text == "")
        for html in [
            "<p>&lt;tag&gt; &amp; &eacute;&#233;&#xE9; &bogus; &amp no</p>",
            #"<P CLASS=lead data-x='a "b"' hidden>t</P>"#,
            "<p>a<!-- x -->b</p>\n\n  <!-- lone -->\n<p>c</p>",
            "<p>one<p>two<ul><li>x<li>y</ul>three",
            "<p>1 < 2 <3 <-> <</p>",
            "<p>x</p><script>if (a<b) document.write('<p>')</script>",
        ] {
            expectInvariants(html)
        }
    }

    @Test func malformedHTMLBecomesOpaqueAndLosesNothing() {
        let cases = [
            "stray text <b>bold</b> then <p>para</p> tail",
            "<div>never closed <p>para</p>",
            "<h2>heading <p>with a block inside</p></h2>",
            "<blockquote>open quote",
            "<pre>unclosed code <b>x</b>",
            "<p>unclosed tag <a href=\"x",
            "<p>unterminated <!-- comment",
            "<ul><li>a</li><!-- between --><li>b</li></ul>",
            "<ul><li>a</li><p>not an item</p><li>b</li></ul>",
            "<li>item with no list</li><li>another",
            "</div></p>text</li>",
            "<ul><li>a<ul><li>b</li></ul>after nested</li></ul>",
            "<ul><ul><li>deep first</li></ul><li>shallow</li></ul>",
            "<div><blockquote>crossed</div></blockquote>",
            "<p =x>odd attribute</p>",
            "<html><head><title>T</title></head><body><p>x</p></body></html>",
            "<script>never closed <p>x</p>",
        ]
        for html in cases {
            let blocks = HTMLBlocks.split(html)
            #expect(!blocks.isEmpty, "\(html)")
            expectInvariants(html)
        }
        #expect(HTMLBlocks.split("<div>never closed <p>para</p>") == [
            Block(.opaque, content: "<div>"), Block(.opaque, content: "never closed"), Block(.paragraph, content: "para"),
        ])
        #expect(HTMLBlocks.split("<ul><li>a<ul><li>b</li></ul>after nested</li></ul>") == [
            Block(.listItem(containers: [bullet]), content: "a"),
            Block(.listItem(containers: [bullet, bullet]), content: "b"),
            Block(.listItem(containers: [bullet]), content: "after nested"),
        ])
        #expect(HTMLBlocks.split("<p>unterminated <!-- comment") == [
            Block(.paragraph, content: "unterminated &lt;!-- comment"),
        ])
    }

    @Test func joinRebuildsListsAfterEditsChangedTheirShape() {
        let blocks = [
            Block(.listItem(containers: [bullet]), content: "a"),
            Block(.listItem(containers: [bullet, bullet, numbered]), content: "deep"),
            Block(.paragraph, content: "between"),
            Block(.listItem(containers: [numbered]), content: "n"),
            Block(.listItem(containers: [bullet]), content: "b"),
        ]
        let html = HTMLBlocks.join(blocks)
        #expect(html == "<ul><li>a<ul><ol><li>deep</li></ol></ul></li></ul>\n<p>between</p>\n<ol><li>n</li></ol>\n<ul><li>b</li></ul>")
        #expect(HTMLBlocks.split(html) == blocks)
    }

    @Test func deepNestingNeitherCrashesNorLosesText() {
        // Far deeper than any editor writes; the splitter must not recurse this deep.
        let depth = 5_000
        for (open, close) in [("<div><p>x</p>", "</div>"), ("<ul><li>x", "</li></ul>"), ("<ol>", "</ol>"),
                              ("<blockquote><p>x</p>", "</blockquote>")] {
            let html = String(repeating: open, count: depth) + "<p>end</p>" + String(repeating: close, count: depth)
            let blocks = HTMLBlocks.split(html)
            #expect(!blocks.isEmpty)
            #expect(blocks.map(\.text).joined().filter { !$0.isWhitespace }.count
                    == HTMLBlocks.text(html).filter { !$0.isWhitespace }.count)
            #expect(HTMLBlocks.split(HTMLBlocks.join(blocks)) == blocks)
            #expect(!HTMLBlocks.markdown(blocks).isEmpty)
        }
    }

    @Test func paragraphFromPlainTextEscapes() {
        let block = Block.paragraph("a < b & c > d")
        #expect(block.content == "a &lt; b &amp; c &gt; d")
        #expect(block.text == "a < b & c > d")
        #expect(HTMLBlocks.split(HTMLBlocks.join([block])) == [block])
    }
}
