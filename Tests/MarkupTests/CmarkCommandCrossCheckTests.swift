import Foundation
import Testing
import Markup
import Merge
import TestSupport

/// Our import against the `cmark-gfm` command (Debian package `cmark-gfm`) on the Markdown
/// files under Tests/MarkupTests/Samples: the same blocks, so what notesd keeps of a file is
/// what GitHub's own renderer reads in it. Front matter is taken off first (the command would
/// read it as a rule and a heading).
@Suite struct CmarkCommandCrossCheckTests {
    static let samples = packageRoot + "/Tests/MarkupTests/Samples"
    static let command = ["/usr/bin/cmark-gfm", "--unsafe", "--nobreaks", "--validate-utf8",
                          "-e", "table", "-e", "strikethrough", "-e", "autolink", "-e", "tasklist"]

    static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: samples)) ?? []).filter { $0.hasSuffix(".md") }.sorted()
    }

    @Test func theSamplesAreThere() {
        #expect(Self.files == ["bom.md", "code.md", "crlf.md", "frontmatter.md", "html.md", "lists.md", "nesting.md",
                               "quotes.md", "tables.md", "tabs.md", "tasks.md"])
    }

    /// The file at `path` as notesd imports it and as the command renders it (both after the
    /// front matter is taken off), with the Markdown body they were made from.
    static func bothReadings(of path: String) throws -> (body: String, ours: [Block], theirs: [Block], theirHTML: String) {
        let (yaml, body) = FrontMatterBlock.split(try String(contentsOfFile: path, encoding: .utf8))
        let result = try ChildProcess.runBlocking(yaml == nil ? command + [path] : command, input: yaml == nil ? nil : body).check()
        return (body, MarkdownImport.blocks(body), HTMLBlocks.split(result.output), result.output)
    }

    @Test(arguments: files) func ourImportMatchesTheCommand(_ file: String) throws {
        let (body, ours, theirs, theirHTML) = try Self.bothReadings(of: Self.samples + "/" + file)
        #expect(ours == theirs, "\(file): ours\n\(HTMLBlocks.join(ours))\ntheirs\n\(theirHTML)")
        #expect(!ours.isEmpty)
        // Every word of the file's Markdown text is in the blocks (markup characters aside).
        let words = Set(HTMLBlocks.join(ours).split(whereSeparator: { !$0.isLetter }).map(String.init))
        for word in body.split(whereSeparator: { !$0.isLetter }) where word.count > 3 && !["http", "https", "www"].contains(word) {
            #expect(words.contains(String(word)), "\(file): \"\(word)\" is lost")
        }
    }

    @Test func theSamplesLandInTheBlockModel() throws {
        func blocks(_ file: String) throws -> [Block] {
            MarkdownImport.blocks(FrontMatterBlock.split(try String(contentsOfFile: Self.samples + "/" + file, encoding: .utf8)).body)
        }
        let tasks = try blocks("tasks.md")
        #expect(tasks.compactMap(\.checked) == [false, true, true, false, true, false])
        #expect(tasks.filter { $0.depth == 2 }.count == 2)
        let nesting = try blocks("nesting.md")
        #expect(nesting.map(\.depth).max() == 4)
        let code = try blocks("code.md")
        #expect(code.filter { $0.kind == .code }.count == 4)
        let tables = try blocks("tables.md")
        #expect(tables.first?.kind == .opaque && tables.first?.content.hasPrefix("<table>") == true)
        let front = try blocks("frontmatter.md")
        #expect(front.first == Block(.heading(level: 1), content: "Heading after front matter"))
        #expect(try blocks("crlf.md") == MarkdownImport.blocks("# CRLF note\n\n- one\n- two\n\n```\ncode\n```\n\nline one\nline two\n"))
        #expect(try blocks("bom.md").first == Block(.heading(level: 1), content: "BOM note"))
        let tabs = try blocks("tabs.md")
        // The tab-indented line after the list continues item "two", after its nested list.
        #expect(tabs.filter { $0.depth > 0 }.map(\.depth) == [1, 1, 2, 1])
        let quotes = try blocks("quotes.md")
        #expect(quotes.allSatisfy { $0.kind == .quote } && quotes.count == 3)
    }
}
