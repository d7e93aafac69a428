import Foundation
import Testing
import TestSupport

/// `notesctl import` of a folder of Markdown and `export --markdown` back, against a real
/// notesd (docs/markdown.md).
@Suite(.serialized) struct MarkdownImportEndToEndTests {
    static func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test func aFolderOfMarkdownImportsWithStructureAndBadFilesAreNamed() async throws {
        try await offThePool { try folderImport() }
    }

    func folderImport() throws {
        let scratch = try Scratch()
        let daemon = try Daemon(name: "solo", root: scratch.path)
        try daemon.start()
        defer { daemon.stop() }
        let existing = try daemon.json(["new", "--title", "Kept"], input: "<p><b>mine</b></p>") as! [String: Any]
        let before = try daemon.library()

        let vault = scratch.path + "/vault"
        try Self.write("# Groceries\n\n- [ ] milk\n- [x] eggs\n\nSee [[Recipes]] #shopping and ![photo](missing.png)\n", to: vault + "/Home/groceries.md")
        try Self.write("---\ntitle: Plan\ntags: [work, q3]\npinned: true\nfolder: Work/Projects\nmodified: 2024-05-07\nreviewers: [ann]\n---\n## Steps\n\n1. one\n2. two\n", to: vault + "/Elsewhere/plan.md")
        try Self.write("---\ntitle: [unclosed\n---\ntext\n", to: vault + "/broken.md")
        try Data([0x23, 0x20, 0xff, 0xfe, 0x0a]).write(to: URL(fileURLWithPath: vault + "/latin1.md"))
        try Data([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]).write(to: URL(fileURLWithPath: vault + "/image.md"))
        let huge = FileManager.default.createFile(atPath: vault + "/huge.md", contents: nil)
        #expect(huge)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: vault + "/huge.md"))
        try handle.truncate(atOffset: 50 * 1024 * 1024)
        try handle.close()

        try Self.write("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE en-export SYSTEM "http://xml.evernote.com/pub/evernote-export3.dtd">
            <en-export><note><title>From Evernote</title><content><![CDATA[<en-note><div>kept <b>bold</b></div><en-media type="image/png" hash="ab"/></en-note>]]></content>
            <created>20240506T093000Z</created><tag>imported</tag><resource><mime>image/png</mime></resource></note></en-export>
            """, to: vault + "/Old/Notebook.enex")
        try Self.write("<?xml version=\"1.0\"?><en-export><note><title>cut", to: vault + "/cut.enex")
        let result = try daemon.ctl(["import", vault])
        #expect(result.status == 1, "some files failed: \(result.output) \(result.error)")
        let errors = result.error.split(separator: "\n").map(String.init)
        #expect(errors.contains { $0.hasPrefix("notesctl: broken.md: ") && $0.contains("front matter line") })
        #expect(errors.contains { $0.hasPrefix("notesctl: latin1.md: not UTF-8 text") })
        #expect(errors.contains { $0.hasPrefix("notesctl: image.md: a binary file") })
        #expect(errors.contains { $0.hasPrefix("notesctl: huge.md: too large (50.0 MB") })
        #expect(errors.contains { $0 == "notesctl: Elsewhere/plan.md: front matter keys notesd keeps no field for, left out: reviewers" })
        #expect(errors.contains { $0.hasPrefix("notesctl: Home/groceries.md: references missing.png, which is not there") })
        #expect(errors.contains { $0.hasPrefix("notesctl: cut.enex: not well-formed XML at line 1") })
        #expect(errors.contains { $0 == "notesctl: Old/Notebook.enex note 1 \"From Evernote\": not kept: 1 embedded file (<en-media>)" })
        #expect(errors.contains { $0 == "notesctl: Old/Notebook.enex note 1 \"From Evernote\": not kept: 1 attachment (notesd keeps no attachments)" })
        #expect(errors.last == "notesctl: 5 files were not imported")
        #expect(result.output.hasPrefix("Imported 3 notes"))

        let notes = try daemon.json(["ls"]) as! [[String: Any]]
        let groceries = try #require(notes.first { $0["title"] as? String == "Groceries" })
        #expect(groceries["folderPath"] as? String == "Home")
        let evernote = try #require(notes.first { $0["title"] as? String == "From Evernote" })
        #expect(evernote["folderPath"] as? String == "Old/Notebook" && evernote["tags"] as? [String] == ["imported"])
        #expect(evernote["created"] as? Int == 1_714_987_800_000)
        let plan = try #require(notes.first { $0["title"] as? String == "Plan" })
        #expect(plan["folderPath"] as? String == "Work/Projects" && plan["pinned"] as? Bool == true)
        #expect(plan["tags"] as? [String] == ["q3", "work"])
        #expect(plan["modified"] as? Int == 1_715_040_000_000)
        let body = try daemon.json(["show", groceries["id"] as! String, "--html"]) as! [String: Any]
        let html = body["body"] as! String
        #expect(html.contains("<li><input type=\"checkbox\" disabled=\"\" /> milk</li>"))
        #expect(html.contains("<li><input type=\"checkbox\" checked=\"\" disabled=\"\" /> eggs</li>"))
        #expect(html.contains("[[Recipes]] #shopping"))
        let shown = try daemon.ctl(["show", groceries["id"] as! String, "--markdown"])
        #expect(shown.output.hasPrefix("- [ ] milk\n- [x] eggs\n\nSee [[Recipes]] #shopping"))

        // Nothing that was there changed.
        let keptNow = try daemon.json(["show", existing["id"] as! String, "--html"]) as! [String: Any]
        #expect(keptNow["body"] as? String == "<p><b>mine</b></p>")
        #expect(try daemon.library().filter { before.contains($0) } == before)
    }

    @Test func exportThenImportIntoAnEmptyLibraryGivesTheSameNotes() async throws {
        try await offThePool { try exportImport() }
    }

    func exportImport() throws {
        let scratch = try Scratch()
        let first = try Daemon(name: "first", root: scratch.path)
        try first.start()
        defer { first.stop() }
        let source = scratch.path + "/source"
        try Self.write("# Trip\n\n- [ ] passport\n  - [x] photo\n\n> quoted **bold**\n\n```sh\nls -la\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", to: source + "/Travel/trip.md")
        try Self.write("---\ntitle: \"Quote \\\" and colon: here\"\ntags: home\ncolor: \"#ffcc00\"\n---\nplain *text* with snake_case\n", to: source + "/odd.md")
        #expect(try first.ctl(["import", source]).status == 0)
        _ = try first.json(["new", "--title", "From the editor", "--html"], input: "<p>Buy <b>fresh</b> <span style=\"color:red\">red</span></p><ul data-type=\"taskList\"><li data-checked=\"true\"><p>milk</p></li></ul>")
        let exported = scratch.path + "/exported"
        #expect(try first.ctl(["export", "--markdown", exported]).status == 0)

        let second = try Daemon(name: "second", root: scratch.path)
        try second.start()
        defer { second.stop() }
        let imported = try second.ctl(["import", exported])
        #expect(imported.status == 0, "\(imported.error)")
        func notes(_ daemon: Daemon) throws -> [String: [String: Any]] {
            let list = try daemon.json(["ls"]) as! [[String: Any]]
            return Dictionary(uniqueKeysWithValues: list.map { ($0["title"] as! String, $0) })
        }
        let was = try notes(first), now = try notes(second)
        #expect(Set(was.keys) == Set(now.keys))
        for (title, note) in was {
            let copy = try #require(now[title])
            for key in ["folderPath", "pinned", "color", "tags", "created", "modified"] {
                #expect(String(describing: note[key]) == String(describing: copy[key]), "\(title) \(key)")
            }
            let markdown = { (daemon: Daemon, id: Any?) in try daemon.ctl(["show", id as! String, "--markdown"]).output }
            #expect(try markdown(first, note["id"]) == markdown(second, copy["id"]), "\(title): same meaning")
            if title != "From the editor" {
                let html = { (daemon: Daemon, id: Any?) in (try daemon.json(["show", id as! String, "--html"]) as! [String: Any])["body"] as! String }
                #expect(try html(first, note["id"]) == html(second, copy["id"]), "\(title): notes that came from Markdown come back byte for byte")
            }
        }
    }
}
