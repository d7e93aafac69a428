import Foundation
import Testing
import TestSupport

/// Household key rotation with three real notesd processes on loopback (docs/security.md,
/// "Key rotation"): a removal makes a new key, a member that was stopped takes it when it
/// starts again, and then the removed device's handshake fails at message 1 everywhere.
@Suite(.serialized) struct KeyRotationEndToEndTests {
    @Test func aRemovedDeviceIsLockedOutOnceTheMemberThatWasAwayHoldsTheNewKey() async throws {
        try await offThePool { try rotationStory() }
    }

    /// `status --json`'s household key: (epoch, state, older keys accepted).
    func key(_ daemon: Daemon) throws -> (epoch: Int, state: String, previous: Int)? {
        let status = try daemon.json(["status"]) as! [String: Any]
        guard let key = (status["household"] as? [String: Any])?["key"] as? [String: Any] else { return nil }
        return (key["epoch"] as! Int, key["state"] as! String, key["previousKeysAccepted"] as! Int)
    }

    /// Each device's key epoch as `daemon` lists its devices.
    func epochs(_ daemon: Daemon) throws -> [String: Int] {
        let devices = try daemon.json(["devices"]) as! [[String: Any]]
        return Dictionary(uniqueKeysWithValues: devices.compactMap { device in
            (device["keyEpoch"] as? Int).map { (device["name"] as! String, $0) }
        })
    }

    func rotationStory() throws {
        let scratch = try Scratch()
        let household = try startHousehold(["alpha", "bravo", "charlie"], root: scratch.path)
        let (alpha, bravo, charlie) = (household[0], household[1], household[2])
        defer { for daemon in household { daemon.stop() } }
        try waitUntil("alpha knows which key every device holds", seconds: 60) {
            try epochs(alpha) == ["alpha": 0, "bravo": 0, "charlie": 0]
        }

        bravo.stop()
        let removed = try alpha.ctl(["devices", "remove", "charlie"])
        #expect(removed.status == 0, "\(removed.error)")
        let waiting = try #require(try key(alpha))
        #expect(waiting.epoch == 1 && waiting.state == "distributing" && waiting.previous == 1, "\(waiting)")
        let shown = try alpha.ctl(["status"]).output
        #expect(shown.contains("household key") && shown.contains("bravo"), "\(shown)")

        // bravo comes back: it takes a new key with no invite, and then both accept no other.
        try bravo.start()
        try waitUntil("alpha and bravo hold one new key and accept no older one", seconds: 60) {
            guard let a = try key(alpha), let b = try key(bravo) else { return false }
            return a.state == "settled" && b.state == "settled" && a.epoch == 1 && b.epoch == 1 && a.previous == 0 && b.previous == 0
        }
        #expect(try epochs(bravo)["alpha"] == 1)
        #expect(try epochs(alpha)["bravo"] == 1)

        // charlie starts again and dials both with the key it still holds.
        let logsBefore = household.map(\.log.count)
        charlie.stop()
        try charlie.start()
        do {
            try waitUntil("alpha and bravo drop charlie's handshake at message 1", seconds: 60) {
                alpha.log.dropFirst(logsBefore[0]).contains("handshake failed at message 1")
                    && bravo.log.dropFirst(logsBefore[1]).contains("handshake failed at message 1")
            }
        } catch {
            throw HarnessError("\(error)\n" + zip(household, logsBefore).map { $0.logTail(after: $1) }.joined(separator: "\n"))
        }
        try waitUntil("charlie says no message 2 came from either", seconds: 30) {
            let peers = try charlie.json(["status"]) as! [String: Any]
            let errors = (peers["peers"] as! [[String: Any]]).compactMap { $0["lastError"] as? String }
            return errors.filter { $0.contains("without answering handshake message 1") }.count >= 2
        }
    }
}
