import Testing
import Enex

@Suite struct EnexTests {
    static let export = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE en-export SYSTEM "http://xml.evernote.com/pub/evernote-export3.dtd">
        <en-export export-date="20240506T100000Z" application="Evernote" version="10">
          <note>
            <title>Groceries &amp; more</title>
            <content><![CDATA[<?xml version="1.0" encoding="UTF-8" standalone="no"?>
        <!DOCTYPE en-note SYSTEM "http://xml.evernote.com/pub/enml2.dtd">
        <en-note><div><b>Buy</b>&nbsp;soon</div><div><en-todo checked="true"/>milk</div><div><en-todo/>eggs</div><en-media type="image/png" hash="abc"/></en-note>]]></content>
            <created>20240506T093000Z</created>
            <updated>20240507T100000Z</updated>
            <tag>home</tag><tag>shopping</tag>
            <resource><data encoding="base64">iVBORw0KGgo=</data><mime>image/png</mime></resource>
          </note>
          <note><title></title><content><![CDATA[<en-note>plain</en-note>]]></content></note>
        </en-export>
        """

    @Test func notesComeWithTitleTagsTimesAndTheirBody() throws {
        let notes = try Enex.notes(in: Array(Self.export.utf8))
        #expect(notes.count == 2)
        let first = notes[0]
        #expect(first.title == "Groceries & more")
        #expect(first.tags == ["home", "shopping"])
        #expect(first.created == 1_714_987_800_000)
        #expect(first.updated == 1_715_076_000_000)
        #expect(first.html == "<div>\n<b>Buy</b>\u{A0}soon</div>\n<div>\n<input type=\"checkbox\" checked>milk</div>\n<div>\n<input type=\"checkbox\">eggs</div>")
        #expect(first.html.contains("<b>Buy</b>") && first.html.contains("eggs") && !first.html.contains("en-media"))
        #expect(first.notKept == ["1 embedded file (<en-media>)", "1 attachment (notesd keeps no attachments)"])
        #expect(notes[1].title == "" && notes[1].html == "plain" && notes[1].notKept.isEmpty)
    }

    /// A hostile export: external entities (a local file, a URL) and an external DTD.
    /// Nothing is fetched or read, and the references are not expanded.
    @Test func aHostileFileFetchesAndReadsNothing() throws {
        let hostile = """
            <?xml version="1.0"?>
            <!DOCTYPE en-export SYSTEM "http://127.0.0.1:9/evil.dtd" [
              <!ENTITY passwd SYSTEM "file:///etc/passwd">
              <!ENTITY remote SYSTEM "http://127.0.0.1:9/secret">
              <!ENTITY inner "inner text">
            ]>
            <en-export><note><title>T&passwd;&remote;&inner;</title><content>x</content></note></en-export>
            """
        let notes = try Enex.notes(in: Array(hostile.utf8))
        #expect(notes.count == 1)
        #expect(notes[0].title == "T")
        #expect(notes[0].notKept == ["passwd", "remote", "inner"].map { "the entity reference &\($0); (entities are never expanded)" })
    }

    /// Nested entities ("billion laughs") are refused by libxml2 before anything grows.
    @Test func nestedEntitiesAreRefused() {
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE en-export [
              <!ENTITY a "aaaaaaaaaa">
              <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
              <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
              <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
            ]>
            <en-export><note><title>&d;</title></note></en-export>
            """
        #expect {
            try Enex.notes(in: Array(laughs.utf8))
        } throws: { error in
            (error as? Enex.Problem).map { "\($0)".contains("entity reference loop") } ?? false
        }
    }

    @Test func truncatedOrForeignFilesAreRefusedWithTheReason() {
        let truncated = String(Self.export.prefix(300))
        #expect {
            try Enex.notes(in: Array(truncated.utf8))
        } throws: { error in
            (error as? Enex.Problem).map { "\($0)".hasPrefix("not well-formed XML at line ") } ?? false
        }
        #expect(throws: Enex.Problem.notAnExport(root: "html")) { try Enex.notes(in: Array("<html><body/></html>".utf8)) }
    }
}
