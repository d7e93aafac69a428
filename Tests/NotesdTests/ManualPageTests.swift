import Foundation
import Testing
import TestSupport
@testable import notesd

/// `man/notesd.8` lists every option exactly as `notesd --help` does.
@Suite struct NotesdManualPageTests {
    /// The OPTIONS section: the help's option lines (everything after the usage line).
    static func optionsSection() -> String {
        let lines = DaemonArguments.help.components(separatedBy: "\n")
        let options = lines.drop { !$0.hasPrefix("  -") }.joined(separator: "\n")
        // Each usage line (`usage: notesd …`, then `       notesd …`) as a line of its own.
        let usages = DaemonArguments.usage.components(separatedBy: "\n").map { line in
            ".B " + Roff.escape(line.replacingOccurrences(of: "usage: ", with: "").trimmingCharacters(in: .whitespaces))
        }
        return """
            \(usages.joined(separator: "\n.br\n"))
            .PP
            \(Roff.preformatted(options))
            """
    }

    @Test func optionsSectionIsTheHelp() throws {
        let difference = try GeneratedText.checkSection(
            "man/notesd.8", begin: #".\" BEGIN GENERATED OPTIONS"#, end: #".\" END GENERATED OPTIONS"#,
            content: Self.optionsSection())
        #expect(difference == nil, "\(difference ?? "")")
    }
}
