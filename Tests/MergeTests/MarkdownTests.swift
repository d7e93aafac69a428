import Testing
@testable import Merge

@Suite struct MarkdownTests {
    func markdown(_ html: String) -> String {
        HTMLBlocks.markdown(HTMLBlocks.split(html))
    }

    @Test func aWholeNote() {
        let html = """
            <h1>Trip <em>plan</em></h1>\
            <p>Pack <b>light</b>, read <a href="https://example.org/a b">the guide</a> and run <code>make `all`</code>.<br>Second line.</p>\
            <p><br></p>\
            <ul><li>clothes<ul><li>socks</li></ul></li><li>books</li></ul>\
            <ol start="3"><li>three</li><li>four<ol><li>four.one</li></ol></li></ol>\
            <ul data-type="taskList"><li data-checked="true"><label><input type="checkbox" checked></label><div><p>passport</p></div></li>\
            <li data-checked="false"><label><input type="checkbox"></label><div><p>tickets</p></div></li></ul>\
            <pre><code class="language-swift">let a = 1 &lt; 2\n</code></pre>\
            <blockquote><p>Travel far.</p><p>— someone</p></blockquote>\
            <hr>\
            <table><tr><td>a</td></tr></table>
            """
        #expect(markdown(html) == #"""
            # Trip *plan*

            Pack **light**, read [the guide](<https://example.org/a b>) and run `` make `all` ``.\
            Second line.

            - clothes
              - socks
            - books

            3. three
            4. four
               1. four.one

            - [x] passport
            - [ ] tickets

            ```swift
            let a = 1 < 2
            ```

            > Travel far.
            >
            > — someone

            ---

            <table><tr><td>a</td></tr></table>

            """#)
    }

    @Test func textThatLooksLikeMarkdownIsEscaped() {
        #expect(markdown("<p># not a heading</p><p>1. not a list * or _emphasis_ [x] &lt;b&gt;</p>")
            == ##"""
            \# not a heading

            1\. not a list \* or \_emphasis\_ \[x\] \<b\>

            """##)
    }

    @Test func emphasisAroundSpacesStaysValid() {
        #expect(markdown("<p>a<b> bold </b>b<i></i>c</p>") == "a **bold** bc\n")
    }

    @Test func quillChecklistsAndBullets() {
        #expect(markdown(#"<ol><li data-list="bullet">x</li><li data-list="checked">y</li><li data-list="ordered">z</li></ol>"#)
            == "- x\n- [x] y\n1. z\n")
    }

    @Test func codeFencesGrowPastBackticksInTheCode() {
        #expect(markdown("<pre>```\nx\n```</pre>") == "````\n```\nx\n```\n````\n")
        #expect(markdown("").isEmpty)
    }
}
