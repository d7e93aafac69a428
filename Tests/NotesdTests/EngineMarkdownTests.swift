import Control
@testable import Engine
import EngineHarness
import Foundation
import Merge
import Testing

/// `notes.create`/`notes.update` with `format: "markdown"`, `notes.get` in Markdown, and
/// `created`/`modified` for imports (docs/control-protocol.md).
@Suite struct EngineMarkdownTests {
    @Test func aNoteCreatedInMarkdownHasItsStructure() throws {
        let device = try LoneDevice(name: "md")
        let summary = try device.run {
            try $0.notesCreate(NoteCreateParams(title: "Groceries", body: "- [ ] milk\n- [x] eggs\n\n*fresh*\n", format: .markdown))
        }
        let document = try device.run { try $0.notesGet(NoteGetParams(id: summary.id)) }
        let blocks = HTMLBlocks.split(document.body)
        #expect(blocks.map(\.checked) == [false, true, nil])
        #expect(blocks[2] == Block(.paragraph, content: "<em>fresh</em>"))
        let markdown = try device.run { try $0.notesGet(NoteGetParams(id: summary.id, format: .markdown)) }
        #expect(markdown.format == .markdown)
        #expect(markdown.body == "- [ ] milk\n- [x] eggs\n\n*fresh*\n")
    }

    @Test func createdAndModifiedAreKeptAndChecked() throws {
        let device = try LoneDevice(name: "md")
        let created = Timestamp(millisecondsSince1970: 1_500_000_000_000)
        let modified = Timestamp(millisecondsSince1970: 1_600_000_000_000)
        let summary = try device.run {
            try $0.notesCreate(NoteCreateParams(title: "Old", html: "<p>x</p>", created: created, modified: modified))
        }
        #expect(summary.created == created && summary.modified == modified)
        #expect(throws: RPCError.self) {
            try device.run { try $0.notesCreate(NoteCreateParams(title: "Bad", html: "", created: modified, modified: created)) }
        }
        #expect(throws: RPCError.self) {
            try device.run { try $0.notesCreate(NoteCreateParams(title: "Both", html: "<p>a</p>", body: "a", format: .markdown)) }
        }
    }

    /// The test: a note with `<b>`, colours and a checklist, edited in Markdown:
    /// untouched blocks keep their HTML byte for byte, the changed one is converted.
    @Test func editingInMarkdownKeepsUntouchedBlocksByteForByte() throws {
        let device = try LoneDevice(name: "md")
        let html = """
            <p>Buy <b>fresh</b> <span style="color: #c00">red</span> apples</p>
            <ul data-type="taskList"><li data-checked="true"><p>milk</p></li><li data-checked="false"><p>eggs</p></li></ul>
            <p style="color: blue">Call <i>mum</i></p>
            """
        let note = try device.run { try $0.notesCreate(NoteCreateParams(title: "Shopping", html: html)) }
        let shown = try device.run { try $0.notesGet(NoteGetParams(id: note.id, format: .markdown)) }
        #expect(shown.body == "Buy **fresh** red apples\n\n- [x] milk\n- [ ] eggs\n\nCall *mum*\n")
        let edited = shown.body.replacing("Call *mum*", with: "Call *dad*")
        _ = try device.run {
            try $0.notesUpdate(NoteUpdateParams(id: note.id, baseHeads: shown.heads, body: edited, format: .markdown))
        }
        let after = try device.run { try $0.notesGet(NoteGetParams(id: note.id)) }
        let blocks = HTMLBlocks.split(after.body)
        let original = HTMLBlocks.split(html)
        #expect(blocks.count == 4)
        #expect(Array(blocks[0...2]) == Array(original[0...2]))
        #expect(after.body.hasPrefix("<p>Buy <b>fresh</b> <span style=\"color: #c00\">red</span> apples</p>\n<ul data-type=\"taskList\">"))
        #expect(blocks[3] == Block(.paragraph, content: "Call <em>dad</em>"))

        // Saved unchanged: no revision at all.
        let again = try device.run { try $0.notesGet(NoteGetParams(id: note.id, format: .markdown)) }
        _ = try device.run {
            try $0.notesUpdate(NoteUpdateParams(id: note.id, baseHeads: again.heads, body: again.body, format: .markdown))
        }
        #expect(try device.run { try $0.notesGet(NoteGetParams(id: note.id)) }.heads == again.heads)
    }

    @Test func aMarkdownEditFromAVanishedRevisionIsRefusedClearly() throws {
        let device = try LoneDevice(name: "md")
        let note = try device.run { try $0.notesCreate(NoteCreateParams(title: "T", body: "one\n", format: .markdown)) }
        let shown = try device.run { try $0.notesGet(NoteGetParams(id: note.id, format: .markdown)) }
        // A second local edit within the coalescing window replaces the revision `shown` read.
        _ = try device.run { try $0.notesUpdate(NoteUpdateParams(id: note.id, html: "<p>two</p>")) }
        #expect(throws: RPCError.invalidParams("params.baseHeads names a revision this note does not have; read the note again and retry")) {
            try device.run { try $0.notesUpdate(NoteUpdateParams(id: note.id, baseHeads: shown.heads, body: "three\n", format: .markdown)) }
        }
        #expect(try device.run { try $0.notesGet(NoteGetParams(id: note.id)) }.body == "<p>two</p>")
    }

    @Test func createManyMakesTheGoodNotesInOneGoAndNamesTheBadOnes() throws {
        let device = try LoneDevice(name: "md")
        let outcomes = try device.run {
            try $0.notesCreateMany(NotesCreateManyParams(notes: [
                NoteCreateParams(title: "One", body: "- [x] a\n", format: .markdown),
                NoteCreateParams(title: "Bad", html: "<p>x</p>", folder: "No/Such/Folder"),
                NoteCreateParams(title: "Two", html: "<p>two</p>", tags: ["t"]),
            ]))
        }
        #expect(outcomes.count == 3)
        #expect(outcomes[0].note?.title == "One" && outcomes[2].note?.tags == ["t"])
        #expect(outcomes[1].note == nil && outcomes[1].error?.code == .notFound)
        #expect(try device.run { try $0.notesList(NotesListParams()) }.map(\.title).sorted() == ["One", "Two"])
    }
}
