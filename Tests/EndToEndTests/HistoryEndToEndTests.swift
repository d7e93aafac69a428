import Foundation
import Testing
import TestSupport

/// `notesctl restore --to`, `show --at`, `log --patch` and `purge` against two real daemons.
@Suite(.serialized) struct HistoryEndToEndTests {
    @Test func restoringAnOldRevisionReachesThePeerAndTheHistoryShowsIt() async throws {
        try await offThePool { try restoreStory() }
    }

    func restoreStory() throws {
        let scratch = try Scratch()
        let alpha = try Daemon(name: "alpha", root: scratch.path)
        let bravo = try Daemon(name: "bravo", root: scratch.path)
        alpha.dials([bravo])
        bravo.dials([alpha])
        for daemon in [alpha, bravo] { try daemon.start() }
        defer { for daemon in [alpha, bravo] { daemon.stop() } }
        let invite = try alpha.json(["invite"]) as! [String: Any]
        #expect(try bravo.ctl(["join", invite["code"] as! String, "--address", alpha.address]).status == 0)

        func syncBoth() throws { for daemon in [alpha, bravo] { try daemon.ctl(["sync", "--wait", "--timeout", "30"]) } }
        func body(_ version: Int) -> String { "<p>first v\(version)</p><p>second</p>" }
        let created = try alpha.json(["new", "--title", "Plan"], input: body(1)) as! [String: Any]
        let id = created["id"] as! String
        try waitUntil("bravo has the note") { try syncBoth(); return (try? bravo.json(["show", id])) != nil }
        // Each edit is offered to bravo before the next, so none folds into another.
        for version in 2...5 {
            #expect(try alpha.ctl(["edit", id], input: body(version)).status == 0)
            try waitUntil("bravo has version \(version)") {
                try syncBoth()
                let shown = try bravo.json(["show", id, "--html"]) as! [String: Any]
                return (shown["body"] as! String).contains("first v\(version)<")
            }
        }
        let history = try alpha.json(["log", id]) as! [[String: Any]]
        #expect(history.count == 5)
        let second = history[3]["revision"] as! String  // newest first
        let prefix = String(second.prefix(12))

        let old = try alpha.json(["show", id, "--at", prefix, "--html"]) as! [String: Any]
        #expect((old["body"] as! String).contains("first v2<"))
        let restored = try alpha.ctl(["restore", id, "--to", prefix])
        #expect(restored.status == 0, "\(restored.error)")
        #expect(restored.output.contains("to revision \(prefix)"))
        let now = try alpha.json(["show", id, "--html"]) as! [String: Any]
        #expect((now["body"] as! String).contains("first v2<"))
        #expect(now["body"] as! String == old["body"] as! String)

        try waitUntil("bravo shows the restored text") {
            try syncBoth()
            let shown = try bravo.json(["show", id, "--html"]) as! [String: Any]
            return (shown["body"] as! String) == (old["body"] as! String)
        }
        let onBravo = try bravo.ctl(["log", id])
        #expect(onBravo.output.contains("restored from \(prefix)"), "\(onBravo.output)")
        let patch = try bravo.ctl(["log", id, "--patch"])
        #expect(patch.output.contains("+ first v2") && patch.output.contains("- first v5"), "\(patch.output)")

        let unknown = try alpha.ctl(["restore", id, "--to", "zzzz"])
        #expect(unknown.status != 0 && unknown.error.contains("not a revision id"))

        // A purge confirmed with --yes covers what it read, and deletes when nothing changed.
        let purged = try bravo.ctl(["purge", id, "--yes"])
        #expect(purged.status == 0 && purged.output.contains("permanently"), "\(purged.error)")
        try waitUntil("alpha no longer has the note") { try syncBoth(); return try alpha.ctl(["show", id]).status != 0 }
    }
}
