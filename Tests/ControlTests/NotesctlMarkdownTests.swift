import Control
import Foundation
import Testing
import TestSupport

/// `notesctl new FILE`, formats from flags, extensions and content, and `edit` in Markdown.
@Suite struct NotesctlMarkdownTests {
    static func createParams(_ arguments: [String], input: String = "") throws -> NoteCreateParams {
        let server = try TestControlServer { request in
            request.respond(to: ControlMethods.NotesCreate.self) { _ in Samples.note }
        }
        let run = try NotesctlBinaryTests.run(["--socket", server.path] + arguments, input: input)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(server.waitUntilFinished())
        return try #require(server.incoming.first).params(NoteCreateParams.self)
    }

    @Test func newTakesAMarkdownFileAsItsArgument() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/groceries.md"
        try "# Groceries\n\n- [ ] milk\n- [x] eggs\n".write(toFile: path, atomically: true, encoding: .utf8)
        let params = try Self.createParams(["new", path])
        #expect(params == NoteCreateParams(title: "Groceries", body: "\n- [ ] milk\n- [x] eggs\n", format: .markdown))
    }

    @Test func theFormatComesFromTheFlagTheExtensionOrTheText() throws {
        let directory = try TemporaryDirectory()
        let html = directory.path + "/page.htm", text = directory.path + "/plain.txt"
        try "<h1>Page</h1><p>x</p>".write(toFile: html, atomically: true, encoding: .utf8)
        try "Plain *text*\n".write(toFile: text, atomically: true, encoding: .utf8)
        #expect(try Self.createParams(["new", html]) == NoteCreateParams(title: "Page", html: "<h1>Page</h1><p>x</p>"))
        #expect(try Self.createParams(["new", text]) == NoteCreateParams(title: "Plain *text*", html: "<p>Plain *text*</p>"))
        #expect(try Self.createParams(["new", text, "--markdown", "--title", "T"]) == NoteCreateParams(title: "T", body: "Plain *text*\n", format: .markdown))
        // stdin: Markdown unless it starts with `<`.
        #expect(try Self.createParams(["new", "--title", "S"], input: "*hi*\n") == NoteCreateParams(title: "S", body: "*hi*\n", format: .markdown))
        #expect(try Self.createParams(["new", "--title", "S"], input: "  <p>hi</p>") == NoteCreateParams(title: "S", html: "  <p>hi</p>"))
        #expect(try Self.createParams(["new", "-", "--html", "--title", "S"], input: "*hi*") == NoteCreateParams(title: "S", html: "*hi*"))
    }

    @Test func newReadsFrontMatterThroughTheDaemon() throws {
        let parsed = MarkdownParseResult(title: "Plan", tags: ["work"], pinned: true, unknownKeys: ["aliases"], hasFrontMatter: true, body: "- a\n")
        let server = try TestControlServer { request in
            request.method == ControlMethods.MarkdownParse.name
                ? request.respond(to: ControlMethods.MarkdownParse.self) { _ in parsed }
                : request.respond(to: ControlMethods.NotesCreate.self) { _ in Samples.note }
        }
        let run = try NotesctlBinaryTests.run(["--socket", server.path, "new"], input: "---\ntitle: Plan\n---\n- a\n")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr == "notesctl: front matter keys notesd keeps no field for, left out: aliases\n")
        #expect(server.waitUntilFinished())
        #expect(try server.incoming[0].params(MarkdownParseParams.self) == MarkdownParseParams(text: "---\ntitle: Plan\n---\n- a\n"))
        #expect(try server.incoming[1].params(NoteCreateParams.self) == NoteCreateParams(
            title: "Plan", body: "- a\n", format: .markdown, tags: ["work"], pinned: true))
    }

    /// On a terminal (`script` gives notesctl one), `edit` opens the note's Markdown and sends
    /// the edited Markdown back with the heads it was read at.
    @Test func editOnATerminalOpensMarkdownAndSavesWithBaseHeads() throws {
        let shown = NoteDocument(summary: Samples.note, format: .markdown, body: "milk & eggs\n\n- bread\n", heads: [String(repeating: "ab", count: 32)])
        let server = try TestControlServer { request in
            request.method == ControlMethods.NotesGet.name
                ? request.respond(to: ControlMethods.NotesGet.self) { _ in shown }
                : request.respond(to: ControlMethods.NotesUpdate.self) { _ in Samples.note }
        }
        let directory = try TemporaryDirectory()
        let editor = directory.path + "/editor.sh"
        try "#!/bin/sh\nprintf -- '- butter\\n' >> \"$1\"\n".write(toFile: editor, atomically: true, encoding: .utf8)
        // Run by sh, not executed: a script just written may still be open in a child another
        // test is spawning at the same moment, and executing it would fail with ETXTBSY.
        let notesctl = try NotesctlBinaryTests.executable().path
        let command = "env -i PATH=/usr/bin:/bin EDITOR='/bin/sh \(editor)' \(notesctl) --socket \(server.path) edit 0190"
        let result = try ChildProcess.runBlocking(["/usr/bin/script", "-qec", command, "/dev/null"])
        #expect(result.status == 0, "\(result.output) \(result.error)")
        #expect(server.waitUntilFinished())
        try #require(server.incoming.count == 2)
        #expect(try server.incoming[0].params(NoteGetParams.self) == NoteGetParams(id: "0190", format: .markdown))
        #expect(try server.incoming[1].params(NoteUpdateParams.self) == NoteUpdateParams(
            id: Samples.note.id, baseHeads: shown.heads, body: "milk & eggs\n\n- bread\n- butter\n", format: .markdown))
    }
}
