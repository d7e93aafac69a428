import Foundation
import Synchronization
import Testing
import TestSupport

/// `notesctl backup` under a write storm and `notesd --restore-backup` with real daemons
/// (docs/architecture.md, "Backups").
@Suite(.serialized) struct BackupTests {
    func syncWait(_ daemons: [Daemon]) throws {
        for daemon in daemons { try daemon.ctl(["sync", "--wait", "--timeout", "30"]) }
    }

    func restore(_ file: String, into daemon: Daemon) throws -> CommandResult {
        try ChildProcess.runBlocking([builtProduct("notesd"), "--restore-backup", file, "--data-dir", daemon.directory], timeout: .seconds(60))
    }

    func replicaInUse(_ daemon: Daemon, scratch: Scratch, name: String) throws -> String {
        let result = try daemon.json(["backup", scratch.file(name)]) as! [String: Any]
        return result["replica"] as! String
    }

    @Test func aRestoredBackupCatchesUpWithEverythingWrittenAfterItUnderANewReplicaID() async throws {
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
        try pair(bravo, through: alpha)

        // Offered to bravo before the backup.
        for index in 1...5 { _ = try alpha.json(["new", "--title", "before \(index)"], input: "<p>before \(index)</p>") }
        try waitUntil("bravo has alpha's first notes") { try syncWait([alpha, bravo]); return try bravo.library().count == 5 }

        // bravo away: what alpha writes now is offered to nobody when the backup is taken.
        bravo.stop()
        let unseen = try alpha.json(["new", "--title", "Draft"], input: "<p>draft one</p>") as! [String: Any]
        let draft = unseen["id"] as! String
        let originalReplica = try replicaInUse(alpha, scratch: scratch, name: "probe-1.db")

        // The backup, while another thread keeps writing.
        let stormDone = Atomic<Bool>(false)
        let stormWrites = Atomic<Int>(0)
        let notesctl = builtProduct("notesctl"), socket = alpha.socket
        let storm = Thread {
            var index = 0
            while !stormDone.load(ordering: .acquiring) {
                index += 1
                let command = [notesctl, "--socket", socket, "new", "--title", "storm \(index)"]
                if (try? ChildProcess.runBlocking(command, input: "<p>storm \(index)</p>", timeout: .seconds(60)))?.status == 0 {
                    stormWrites.add(1, ordering: .relaxed)
                }
            }
        }
        storm.start()
        try waitUntil("the storm is writing") { stormWrites.load(ordering: .relaxed) >= 3 }
        let backupFile = scratch.file("alpha-backup.db")
        let backup = try alpha.ctl(["backup", backupFile])
        let writesDuringBackup = stormWrites.load(ordering: .relaxed)
        try waitUntil("the storm writes past the backup") { stormWrites.load(ordering: .relaxed) >= writesDuringBackup + 3 }
        stormDone.store(true, ordering: .releasing)
        while !storm.isFinished { usleep(10_000) }
        #expect(backup.status == 0, "\(backup.error)")
        var status = stat()
        #expect(stat(backupFile, &status) == 0 && status.st_mode & 0o777 == 0o600)

        // After the backup: the draft edited again (folded into the same unoffered entry),
        // and one more note; then bravo gets everything.
        #expect(try alpha.ctl(["edit", draft], input: "<p>draft one</p><p>draft two, after the backup</p>").status == 0)
        _ = try alpha.json(["new", "--title", "after"], input: "<p>after the backup</p>")
        let history = try alpha.json(["log", draft]) as! [[String: Any]]
        #expect(history.count == 1, "the draft's edits folded into one revision")
        try bravo.start()
        try waitUntil("bravo has everything alpha wrote") {
            try syncWait([alpha, bravo])
            return try bravo.library() == alpha.library()
        }
        let expected = try bravo.library()

        // alpha loses its disk: restored from the backup, with notesd stopped.
        alpha.stop()
        let restored = try restore(backupFile, into: alpha)
        #expect(restored.status == 0, "\(restored.error)")
        #expect(restored.output.contains("now writes as replica"), "\(restored.output)")
        // The draft and the storm's notes in the copy were offered to nobody: left out, and
        // sent back by bravo in the form they have now.
        #expect(restored.output.contains("were left out"), "\(restored.output)")
        try alpha.start()
        try waitUntil("alpha caught up after the restore") {
            try syncWait([alpha, bravo])
            return try alpha.library() == expected && bravo.library() == expected
        }
        let shown = try alpha.json(["show", draft, "--html"]) as! [String: Any]
        #expect((shown["body"] as! String).contains("draft two, after the backup"))
        let conflicts = try alpha.json(["ls", "--conflicts"]) as! [[String: Any]]
        #expect(conflicts.isEmpty, "the restore made no conflict copy")
        let titles = try alpha.json(["ls"]) as! [[String: Any]]
        #expect(Set(titles.map { $0["title"] as! String }).count == titles.count, "nothing duplicated")
        let newReplica = try replicaInUse(alpha, scratch: scratch, name: "probe-2.db")
        #expect(newReplica != originalReplica)

        // Writes under the new replica id reach bravo.
        _ = try alpha.json(["new", "--title", "restored and writing"], input: "<p>new id</p>")
        try waitUntil("bravo has alpha's write after the restore") {
            try syncWait([alpha, bravo])
            return try bravo.library() == alpha.library()
        }
    }

    @Test func aBackupOfAnotherHouseholdOrAnythingElseIsRefusedSayingWhatItIs() async throws {
        try await offThePool { try refusalStory() }
    }

    func refusalStory() throws {
        let scratch = try Scratch()
        let alpha = try Daemon(name: "alpha", root: scratch.path)
        let stranger = try Daemon(name: "stranger", root: scratch.path)
        for daemon in [alpha, stranger] { try daemon.start() }
        _ = try alpha.json(["new", "--title", "mine"], input: "<p>mine</p>")
        _ = try stranger.json(["new", "--title", "theirs"], input: "<p>theirs</p>")
        let foreign = scratch.file("stranger.db")
        #expect(try stranger.ctl(["backup", foreign]).status == 0)
        let before = try alpha.library()
        for daemon in [alpha, stranger] { daemon.stop() }

        let refused = try restore(foreign, into: alpha)
        #expect(refused.status == 1)
        #expect(refused.error.contains("another household"), "\(refused.error)")
        let text = scratch.file("notes.txt")
        try "just some text\n".write(toFile: text, atomically: true, encoding: .utf8)
        let notDatabase = try restore(text, into: alpha)
        #expect(notDatabase.status == 1 && notDatabase.error.contains("not a SQLite database"), "\(notDatabase.error)")

        try alpha.start()
        defer { alpha.stop() }
        #expect(try alpha.library() == before, "a refused restore changes nothing")
        // While notesd runs, a restore is refused too.
        let own = scratch.file("alpha.db")
        #expect(try alpha.ctl(["backup", own]).status == 0)
        let running = try restore(own, into: alpha)
        #expect(running.status == 1 && running.error.contains("stop it first"), "\(running.error)")
    }
}
