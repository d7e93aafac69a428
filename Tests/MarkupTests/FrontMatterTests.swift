import Testing
import Markup

@Suite struct FrontMatterTests {
    @Test func theKnownKeysAreReadAndUnknownOnesListed() throws {
        let (yaml, body) = FrontMatterBlock.split("---\ntitle: Trip plan\ntags: [travel, \"#summer\"]\ncreated: 2024-05-06\nmodified: 2024-05-07T09:30:00+02:00\npinned: yes\ncolor: yellow\nfolder: Home/Trips\nid: 0190a1b2\naliases: [trip]\ncssclass: wide\n---\n# Day one\n")
        #expect(body == "# Day one\n")
        let fields = try FrontMatter.parse(try #require(yaml))
        #expect(fields.title == "Trip plan")
        #expect(fields.tags == ["travel", "summer"])
        #expect(fields.created == 1_714_953_600_000)
        #expect(fields.modified == 1_715_067_000_000)
        #expect(fields.pinned == true && fields.color == "yellow" && fields.folder == "Home/Trips" && fields.id == "0190a1b2")
        #expect(fields.unknownKeys == ["aliases", "cssclass"])
    }

    @Test func tagsMayBeACommaStringAndTimesNumbers() throws {
        let fields = try FrontMatter.parse("tags: a, b ,c\ncreated: 1700000000\nmodified: 1700000000123\n")
        #expect(fields.tags == ["a", "b", "c"])
        #expect(fields.created == 1_700_000_000_000 && fields.modified == 1_700_000_000_123)
    }

    @Test func withoutAClosingLineThereIsNoFrontMatter() {
        #expect(FrontMatterBlock.split("---\ntitle: x\n\ntext\n").yaml == nil)
        #expect(FrontMatterBlock.split("text\n---\n").yaml == nil)
        #expect(FrontMatterBlock.split("\u{FEFF}---\r\ntitle: x\r\n...\r\nbody\r\n") == ("title: x", "body\n"))
    }

    @Test func malformedFrontMatterIsNamedWithItsLine() {
        #expect(throws: FrontMatter.Problem.self) { try FrontMatter.parse("title: [unclosed\n") }
        do {
            _ = try FrontMatter.parse("title: ok\ntags: [a\nb: : :\n")
            Issue.record("parsed")
        } catch {
            #expect(error.description.hasPrefix("front matter line "))
        }
        #expect(throws: FrontMatter.Problem.notAMapping) { try FrontMatter.parse("- a\n- b\n") }
        #expect(throws: FrontMatter.Problem.badValue(key: "pinned", expected: "true or false")) { try FrontMatter.parse("pinned: maybe\n") }
        #expect(throws: FrontMatter.Problem.badValue(key: "created", expected: "a date like 2024-05-06 or 2024-05-06T09:30:00Z")) {
            try FrontMatter.parse("created: last tuesday\n")
        }
    }

    /// Aliases share nodes: reading them out must stop, not multiply ("billion laughs").
    @Test func repeatedAliasesAreRefusedNotExpanded() {
        var yaml = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        var previous = "a"
        for level in 1..<9 {
            let name = "l\(level)"
            yaml += "\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 10).joined(separator: ", ") + "]\n"
            previous = name
        }
        yaml += "tags: *\(previous)\n"
        #expect(throws: FrontMatter.Problem.self) { try FrontMatter.parse(yaml) }
    }
}
