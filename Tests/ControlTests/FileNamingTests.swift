import Control
import Foundation
import Testing
@testable import notesctl

@Suite struct FileNamingTests {
    @Test func unsafeCharactersAreReplaced() {
        #expect(FileNaming.safeName("A/B testing") == "A_B testing")
        #expect(FileNaming.safeName(#"a\b:c*d?e"f<g>h|i"#) == "a_b_c_d_e_f_g_h_i")
        #expect(FileNaming.safeName("tab\there\u{0}nul\u{7F}del\u{9F}c1") == "tab here_nul_del_c1")
        #expect(FileNaming.safeName("line one\nline two\r\n") == "line one line two")
        #expect(FileNaming.safeName("  lots   of   space  ") == "lots of space")
    }

    @Test func noHiddenOrDotOnlyOrEmptyNames() {
        #expect(FileNaming.safeName(".bashrc") == "bashrc")
        #expect(FileNaming.safeName("...") == "Untitled")
        #expect(FileNaming.safeName("..") == "Untitled")
        #expect(FileNaming.safeName("") == "Untitled")
        #expect(FileNaming.safeName("   ") == "Untitled")
        #expect(FileNaming.safeName("end. ") == "end")
        #expect(FileNaming.safeName("//") == "__")
        #expect(FileNaming.safeName("../../etc/passwd") == "_.._etc_passwd", "no path traversal")
    }

    @Test func reservedDeviceNamesAreAvoided() {
        #expect(FileNaming.safeName("CON") == "CON_")
        #expect(FileNaming.safeName("com1") == "com1_")
        #expect(FileNaming.safeName("CONSOLE") == "CONSOLE")
    }

    @Test func longTitlesAreCutOnCharacterBoundaries() {
        let name = FileNaming.safeName(String(repeating: "é", count: 300))
        #expect(name.utf8.count <= FileNaming.maximumNameBytes)
        #expect(name.allSatisfy { $0 == "é" })
        let emoji = FileNaming.safeName(String(repeating: "👩‍👩‍👧", count: 100))
        #expect(emoji.utf8.count <= FileNaming.maximumNameBytes)
        #expect(emoji.allSatisfy { $0 == "👩‍👩‍👧" })
        #expect(FileNaming.safeName("ü" + String(repeating: "a", count: 300)).utf8.count <= FileNaming.maximumNameBytes)
    }

    @Test func duplicatesGetNumbersIgnoringCase() {
        var taken: Set<String> = []
        #expect(FileNaming.uniqueName(base: "Note", extension: ".html", taken: &taken) == "Note.html")
        #expect(FileNaming.uniqueName(base: "note", extension: ".html", taken: &taken) == "note (2).html")
        #expect(FileNaming.uniqueName(base: "Note (2)", extension: ".html", taken: &taken) == "Note (2) (2).html")
        #expect(FileNaming.uniqueName(base: "Note", extension: ".html", taken: &taken) == "Note (3).html")
        #expect(FileNaming.uniqueName(base: "Note", extension: ".md", taken: &taken) == "Note.md")
    }

    private func note(_ id: String, _ title: String, folder: String = "", created: Int64 = 0) -> NoteSummary {
        NoteSummary(id: id, short: id, title: title, folder: folder.isEmpty ? nil : "f", folderPath: folder, pinned: false, color: nil,
                    tags: [], trashed: false, conflictOf: nil, created: Timestamp(rawValue: created), modified: Timestamp(rawValue: created))
    }

    @Test func exportPlanUsesFoldersAndIsStable() {
        let notes = [
            note("c", "Plan", folder: "Work/Projects", created: 3),
            note("a", "Plan", folder: "Work/Projects", created: 1),
            note("b", "plan", folder: "work/projects", created: 2),
            note("d", "A/B", created: 4),
            note("e", "Work", created: 5),
            note("f", "Projects", folder: "Work", created: 6),
            note("g", "inside", folder: "Work/Projects.html", created: 7),
        ]
        let files = ExportPlan.files(for: notes, fileExtension: ".html")
        let paths = Dictionary(uniqueKeysWithValues: files.map { ($0.noteID, $0.path.joined(separator: "/")) })
        #expect(paths["a"] == "Work/Projects/Plan.html", "oldest note keeps the plain name")
        #expect(paths["b"] == "Work/Projects/plan (2).html", "folders differing in case share a directory")
        #expect(paths["c"] == "Work/Projects/Plan (3).html")
        #expect(paths["d"] == "A_B.html")
        #expect(paths["e"] == "Work.html", "a file may share a directory's stem")
        #expect(paths["f"] == "Work/Projects (2).html", "a file never takes a sibling directory's name")
        #expect(paths["g"] == "Work/Projects.html/inside.html")
        #expect(ExportPlan.files(for: notes.reversed(), fileExtension: ".html") == files, "order of the listing does not matter")
        #expect(Set(files.map { $0.path.joined(separator: "/").lowercased() }).count == files.count)
    }

    @Test func exportPlanSanitizesFolderNames() {
        let files = ExportPlan.files(for: [note("a", "x", folder: "..hidden/ok:yes")], fileExtension: ".md")
        #expect(files.first?.path == ["hidden", "ok_yes", "x.md"])
    }

    @Test func importKindsByExtension() {
        #expect(ImportPlan.kind(ofFileNamed: "a.html") == .html)
        #expect(ImportPlan.kind(ofFileNamed: "a.HTM") == .html)
        #expect(ImportPlan.kind(ofFileNamed: "a.md") == .markdown)
        #expect(ImportPlan.kind(ofFileNamed: "a.txt") == .text)
        #expect(ImportPlan.kind(ofFileNamed: "a.pdf") == nil)
        #expect(ImportPlan.kind(ofFileNamed: ".hidden.html") == nil)
        #expect(ImportPlan.kind(ofFileNamed: "html") == nil)
    }

    @Test func referencedFilesAreTheLocalLinksAndEmbeds() {
        let text = "![a](img/a.png) [doc](<My Doc.pdf>) [web](https://x.org/a.png) [top](#top) ![[b.png|200]] [[Wiki]] [m](mailto:x@y)"
        #expect(ImportPlan.referencedFiles(in: text) == ["img/a.png", "My Doc.pdf", "b.png"])
    }

    @Test func importTitlesAndFolders() {
        let html = ImportPlan.note(relativePath: ["Work", "Projects", "plan.html"], contents: "<html><head><title>Q3 &amp; Q4</title></head><body>\n<p>x</p>\n</body></html>", kind: .html)
        #expect(html == ImportPlan.Note(title: "Q3 & Q4", html: "<p>x</p>", folder: "Work/Projects"))
        let heading = ImportPlan.note(relativePath: ["n.htm"], contents: "<H2 class=x>Hello <b>you</b></H2><p>y</p>", kind: .html)
        #expect(heading == ImportPlan.Note(title: "Hello you", html: "<H2 class=x>Hello <b>you</b></H2><p>y</p>", folder: nil))
        let bare = ImportPlan.note(relativePath: ["my  note.html"], contents: "<p>no title</p>", kind: .html)
        #expect(bare.title == "my note")
        let markdown = ImportPlan.note(relativePath: ["d", "a.md"], contents: "\n# Shopping\n\nmilk <2>\n", kind: .markdown)
        #expect(markdown == ImportPlan.Note(title: "Shopping", markdown: "\nmilk <2>\n", folder: "d"))
        #expect(ImportPlan.note(relativePath: ["b.md"], contents: "- a\n", kind: .markdown) == ImportPlan.Note(title: "b", markdown: "- a\n", folder: nil))
        let text = ImportPlan.note(relativePath: ["todo.txt"], contents: "# not a title here\nline", kind: .text)
        #expect(text == ImportPlan.Note(title: "todo", html: "<p># not a title here<br>line</p>", folder: nil))
        #expect(ImportPlan.note(relativePath: [".txt"], contents: "", kind: .text).title == "Untitled")
    }
}

@Suite struct NoteTextTests {
    @Test func plainTextBecomesEscapedParagraphs() {
        #expect(NoteText.paragraphs(fromPlainText: "a & b\n<c>\n\n\n\"d\"\r\n") == "<p>a &amp; b<br>&lt;c&gt;</p>\n<p>&quot;d&quot;</p>")
        #expect(NoteText.paragraphs(fromPlainText: "") == "")
        #expect(NoteText.paragraphs(fromPlainText: "\n \n") == "")
    }

    @Test func plainTextTitleIsTheFirstLine() {
        #expect(NoteText.title(fromPlainText: "\n  Hello   world \nrest") == "Hello world")
        #expect(NoteText.title(fromPlainText: " \n") == nil)
    }

    @Test func htmlTitleComesFromTitleThenHeading() {
        #expect(NoteText.title(fromHTML: "<title> A </title><h1>B</h1>") == "A")
        #expect(NoteText.title(fromHTML: "<title></title><h1>B</h1>") == "B")
        #expect(NoteText.title(fromHTML: "<p>x</p><h3>C &#x263A; &#65;</h3>") == "C ☺ A")
        #expect(NoteText.title(fromHTML: "<header>no</header><hr><p>x</p>") == nil, "<header> and <hr> are not headings")
        #expect(NoteText.title(fromHTML: "<h1>unclosed") == nil)
        #expect(NoteText.title(fromHTML: "İİİ<title>ß</title>") == "ß", "offsets survive case-changing letters")
    }

    @Test func documentRoundTrips() {
        let body = "<p>One</p>\n<ul>\n<li>two</li>\n</ul>"
        let title = "Tom & Jerry <3"
        let document = NoteText.document(title: title, body: body)
        #expect(NoteText.title(fromHTML: document) == title)
        #expect(NoteText.bodyFragment(ofHTML: document) == body)
        #expect(NoteText.bodyFragment(ofHTML: "<p>fragment</p>") == "<p>fragment</p>")
        #expect(NoteText.bodyFragment(ofHTML: "<BODY class=x><p>y</p></BODY>") == "<p>y</p>")
    }

    @Test func entities() {
        #expect(NoteText.decodeEntities("a &amp;&lt;&gt;&quot;&apos;&nbsp;&#33;&#x21; &bogus; & &#xZZ;") == "a &<>\"'\u{A0}!! &bogus; & &#xZZ;")
        #expect(NoteText.escapeHTML("<a href=\"x\">&</a>") == "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;")
    }

    @Test func markdownTitle() {
        #expect(NoteText.splitMarkdownTitle("# T\nbody").title == "T")
        #expect(NoteText.splitMarkdownTitle("# T\nbody").body == "body")
        #expect(NoteText.splitMarkdownTitle("## T\nbody").title == nil)
        #expect(NoteText.splitMarkdownTitle("text").body == "text")
    }
}

@Suite struct RenderTests {
    private let now = Date(timeIntervalSince1970: 1_715_000_000)
    private var time: TimeText { TimeText(now: now, timeZone: TimeZone(identifier: "UTC")!) }

    private func ago(_ seconds: Double) -> Timestamp { Timestamp(now.addingTimeInterval(-seconds)) }

    @Test func relativeTimes() {
        #expect(time.relative(ago(5)) == "just now")
        #expect(time.relative(ago(-30)) == "just now", "small clock skew")
        #expect(time.relative(ago(125)) == "2 min ago")
        #expect(time.relative(ago(3 * 3600 + 5)) == "3 h ago")
        #expect(time.relative(ago(86_400 + 5)) == "1 day ago")
        #expect(time.relative(ago(3 * 86_400)) == "3 days ago")
        #expect(time.relative(Timestamp(rawValue: 0)) == "1970-01-01")
        #expect(time.relative(ago(-7200)) == "2024-05-06 14:53", "future times are absolute")
        #expect(time.remaining(until: ago(-540)) == "in 9 min")
        #expect(time.remaining(until: ago(5)) == "expired")
    }

    @Test func tablesAlignColumns() {
        let table = TextTable(header: ["ID", "TITLE", "X"], rows: [["1", "long title", ""], ["22", "é", "z"]]).render()
        #expect(table == "ID  TITLE       X\n1   long title\n22  é           z")
    }

    @Test func listsShowShortIDsAndPins() {
        let output = Render(time: time).notes([Samples.note, Samples.plainNote])
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[1].hasPrefix("0190a1b2 "))
        #expect(lines[1].contains("  * Groceries  "))
        #expect(lines[1].contains("Home/Lists") && lines[1].contains("home,weekly"))
        #expect(lines[2].contains("(untitled)"))
        #expect(Render(time: time).notes([]) == "No notes.")
    }

    @Test func statusMentionsEveryPart() {
        let output = Render(time: time).status(Samples.status)
        for fragment in ["desktop (ZZZZYYYY)", "household HHHH (2 devices)", "0.0.0.0:7654", "unavailable: avahi-daemon is not running",
                         "p50 4 ms, p95 12 ms (80 samples)", "laptop", "connection reset", "offline", "never"] {
            #expect(output.contains(fragment), "\(fragment)")
        }
    }

    @Test func everyEventRendersOnOneLine() {
        for event in Samples.events {
            let line = Render(time: time).event(event)
            #expect(!line.contains("\n"))
            #expect(line.hasPrefix("00:00:00"))
        }
    }

    @Test func truncation() {
        #expect(Render.truncate("abcdef", to: 4) == "abc…")
        #expect(Render.truncate("a\nb", to: 10) == "a b")
    }
}

@Suite struct ControlPathsTests {
    @Test func firstMatchWins() {
        let all = ["NOTESD_SOCKET": "/x/s.sock", "RUNTIME_DIRECTORY": "/run/notesd", "XDG_RUNTIME_DIR": "/run/user/1000"]
        #expect(ControlPaths.defaultSocketPath(environment: all, userID: 1000) == "/x/s.sock")
        var environment = all
        environment["NOTESD_SOCKET"] = ""
        #expect(ControlPaths.defaultSocketPath(environment: environment, userID: 1000) == "/run/notesd/control.sock")
        environment["RUNTIME_DIRECTORY"] = "/run/a/:/run/b"
        #expect(ControlPaths.defaultSocketPath(environment: environment, userID: 1000) == "/run/a/control.sock")
        environment["RUNTIME_DIRECTORY"] = nil
        #expect(ControlPaths.defaultSocketPath(environment: environment, userID: 1000) == "/run/user/1000/notesd/control.sock")
        environment["XDG_RUNTIME_DIR"] = "relative"
        #expect(ControlPaths.defaultSocketPath(environment: environment, userID: 1000) == "/tmp/notesd-1000/control.sock")
        #expect(ControlPaths.defaultSocketPath(environment: [:], userID: 0) == "/tmp/notesd-0/control.sock")
    }
}
