import Control
import Foundation
import Testing
import TestSupport

/// Two real notesd processes on loopback tell each other their version in the handshake
/// payloads, and notesctl shows it (docs/protocol.md "Versions and features").
@Suite(.serialized) struct VersionEndToEndTests {
    @Test func statusAndDevicesShowEachPeersVersion() async throws {
        try await offThePool { try versionsStory() }
    }

    func versionsStory() throws {
        let scratch = try Scratch()
        let alpha = try Daemon(name: "alpha", root: scratch.path)
        let bravo = try Daemon(name: "bravo", root: scratch.path)
        for daemon in [alpha, bravo] { try daemon.start() }
        defer { for daemon in [alpha, bravo] { daemon.stop() } }
        let invite = try alpha.json(["invite"]) as! [String: Any]
        let joined = try bravo.ctl(["join", invite["code"] as! String, "--address", alpha.address])
        #expect(joined.status == 0, "\(joined.error)")
        try waitUntil("alpha syncs with bravo", seconds: 60) {
            let status = try alpha.json(["status"]) as! [String: Any]
            return (status["peers"] as! [[String: Any]]).contains { $0["name"] as? String == "bravo" && $0["connected"] as? Bool == true }
        }
        for (daemon, other) in [(alpha, "bravo"), (bravo, "alpha")] {
            let peers = (try daemon.json(["status"]) as! [String: Any])["peers"] as! [[String: Any]]
            #expect(peers.first { $0["name"] as? String == other }?["version"] as? String == NotesVersion.string)
            let devices = try daemon.json(["devices"]) as! [[String: Any]]
            #expect(devices.allSatisfy { $0["version"] as? String == NotesVersion.string })
        }
        let table = try alpha.ctl(["devices"])
        #expect(table.output.contains("VERSION"))
        #expect(table.output.split(separator: "\n").contains { $0.contains("bravo") && $0.contains(NotesVersion.string) })
    }
}
