import Foundation
import Testing
import TestSupport
@testable import notesctl

/// `notesctl ui` hands the browser a private page that forwards to the sign-in link, so the
/// token is never on a command line other users can read.
@Suite struct SignInPageTests {
    @Test func thePageIsPrivateAndForwardsToTheLink() throws {
        let runtime = try TemporaryDirectory()
        let url = "http://127.0.0.1:7480/#login=abc&x=\"<y>"
        let path = try SignInPage.write(url: url, environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(path == runtime.path + "/notesd/sign-in.html")
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
        #expect(stat(runtime.path + "/notesd", &status) == 0 && status.st_mode & 0o077 == 0)
        let page = try String(contentsOfFile: path, encoding: .utf8)
        let escaped = "http://127.0.0.1:7480/#login=abc&amp;x=&quot;&lt;y&gt;"
        #expect(page.contains("<meta http-equiv=\"refresh\" content=\"0;url=\(escaped)\">"))
        #expect(page.contains("<a href=\"\(escaped)\">"))
        // A second sign-in replaces the page.
        _ = try SignInPage.write(url: "http://127.0.0.1:7480/#login=second", environment: ["XDG_RUNTIME_DIR": runtime.path])
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("login=second"))
    }

    @Test func withoutARuntimeDirectoryItUsesAPrivateOneInTmp() throws {
        let path = try SignInPage.write(url: "http://127.0.0.1:1/#login=t", environment: [:])
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        var status = stat()
        #expect(path.hasPrefix("/tmp/notesctl-ui-"))
        #expect(stat((path as NSString).deletingLastPathComponent, &status) == 0 && status.st_mode & 0o777 == 0o700)
    }
}
