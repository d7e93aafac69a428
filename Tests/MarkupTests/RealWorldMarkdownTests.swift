import Foundation
import Testing
import Markup
import Merge
import TestSupport

/// Real-world Markdown (docs/markdown.md, "Real-world files"): the READMEs, changelogs and API
/// documentation Debian installs with the packages `make test` needs (nodejs ships its whole
/// API reference as Markdown). Each file is imported as notesd imports it and compared with
/// what the `cmark-gfm` command renders: ≥ 95 % of the files must give exactly the same
/// blocks (headings, lists, code, quotes, tables), and every word must be kept in all of them.
/// The files are read where Debian put them, not copied into the repository.
@Suite struct RealWorldMarkdownTests {
    static let roots = ["/usr/share/doc", "/usr/share/nodejs"]

    static var files: [String] {
        roots.flatMap { root -> [String] in
            guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
            return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".md") }.map { root + "/" + $0 }
        }.filter { path in
            var status = stat()
            return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        }.sorted()
    }

    /// The Markdown without what is markup rather than text: link reference definitions
    /// (`[label]: url "title"`; their URLs and titles reach the links that use them), the
    /// labels of full reference links (`[text][label]`), which no renderer shows, and the info
    /// strings of code fences (CommonMark keeps only their first word, as a class).
    static func prose(_ markdown: String) -> String {
        markdown.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { $0.wholeMatch(of: /\ {0,3}\[[^\]]+\]:.*/) == nil }
            .map { $0.wholeMatch(of: /\ {0,3}(`{3,}|~{3,}).*/) == nil ? $0 : "" }
            .joined(separator: "\n")
            .replacing(/\]\[[^\]]*\]/, with: "]")
    }

    @Test func atLeastNinetyFivePercentMatchTheCommandAndNoWordIsLost() throws {
        let files = Self.files
        try #require(files.count >= 150, "only \(files.count) Markdown files under \(Self.roots); scripts/install-deps installs nodejs, whose documentation is most of them")
        var mismatched: [String] = []
        for path in files {
            let (body, ours, theirs, _) = try CmarkCommandCrossCheckTests.bothReadings(of: path)
            if ours != theirs { mismatched.append(path) }
            let words = Set(HTMLBlocks.join(ours).split(whereSeparator: { !$0.isLetter }).map(String.init))
            let lost = Set(Self.prose(body).split(whereSeparator: { !$0.isLetter }).map(String.init)).filter { $0.count > 3 && !words.contains($0) }
            #expect(lost.isEmpty, "\(path): \(lost.sorted().prefix(10)) lost")
        }
        let matched = Double(files.count - mismatched.count) / Double(files.count)
        #expect(matched >= 0.95, "\(mismatched.count) of \(files.count) files differ from cmark-gfm: \(mismatched.prefix(20))")
        print("real-world Markdown: \(files.count - mismatched.count) of \(files.count) files give cmark-gfm's blocks exactly; differ: \(mismatched)")
    }
}
