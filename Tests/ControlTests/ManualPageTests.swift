import Testing
import TestSupport
@testable import notesctl

/// `man/notesctl.1` documents every command exactly as `notesctl help COMMAND` does: its
/// COMMANDS section is the help text, so the two cannot drift.
@Suite struct ManualPageTests {
    /// The COMMANDS section: per command its usage line, summary and details.
    static func commandsSection() -> String {
        CommandSpec.all.map { spec in
            """
            .SS \(spec.name)
            .B notesctl \(Roff.escape(spec.usage))
            .PP
            \(Roff.escape(spec.summary))
            .PP
            \(Roff.preformatted(spec.details))
            """
        }.joined(separator: "\n")
    }

    @Test func commandsSectionIsTheHelp() throws {
        let difference = try GeneratedText.checkSection(
            "man/notesctl.1", begin: #".\" BEGIN GENERATED COMMANDS"#, end: #".\" END GENERATED COMMANDS"#,
            content: Self.commandsSection())
        #expect(difference == nil, "\(difference ?? "")")
    }

    /// The global options the page describes by hand are the ones `notesctl help` lists.
    @Test func globalOptionsAreDocumented() throws {
        let page = try String(contentsOfFile: packageRoot + "/man/notesctl.1", encoding: .utf8)
        for option in ["--socket", "--json", "--help", "-h", "--version"] {
            #expect(CommandSpec.overview.contains(option), "notesctl help no longer lists \(option)")
            #expect(page.contains(Roff.escape(option)), "man/notesctl.1 does not describe \(option)")
        }
        for status in ["0 ok", "1 failed", "2 notesd unreachable", "64 usage error"] {
            #expect(CommandSpec.overview.contains(status), "notesctl help's exit statuses changed: update EXIT STATUS in man/notesctl.1")
        }
    }
}
