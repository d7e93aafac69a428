import Control
import Foundation
import Testing
import TestSupport

/// Cheap refusals across real addresses (docs/security.md, "Cheap refusals"): three network
/// namespaces, so the attacker and the member each have their own address. 1,000 wrong-key
/// handshakes from the attacker cost the home machine at most the limit's worth of failed
/// message 1s; the member, at another address, still connects and syncs at once.
@Suite(.serialized, .enabled(if: Netlab.canRun(for: "RateLimitTests"), "needs root and network namespaces (scripts/netlab check)"))
struct RateLimitTests {
    /// Dials HOST:PORT `count` times and sends a message 1 that no key opens (48 random
    /// bytes behind a valid length prefix), then reads until the responder closes.
    static let attacker = """
        import os, socket, sys
        host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        for _ in range(count):
            s = socket.create_connection((host, port), timeout=5)
            try:
                s.sendall((48).to_bytes(4, "big") + os.urandom(48))
                while s.recv(4096):
                    pass
            except OSError:
                pass
            finally:
                s.close()
        """

    @Test func aThousandWrongKeyHandshakesFromOneAddressDoNotDelayAMemberAtAnother() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let lab = try await Netlab.up(hosts: 3)
        var daemons: [LabDaemon] = []
        defer {
            for daemon in daemons { daemon.stopNow() }
            lab.down()
        }
        let home = try await LabDaemon(lab: lab, host: 1, scratch: scratch, extraArguments: ["--no-mdns"])
        let member = try await LabDaemon(lab: lab, host: 3, scratch: scratch, extraArguments: ["--no-mdns"])
        daemons = [home, member]
        do {
            try await home.start()
            try await member.start()
            let code = try await home.call(InviteResult.self, ["invite"]).code
            try await member.ctl(["join", code, "--address", home.listen]).check()
            try await waitUntil("the member syncs with home", seen: { home.logTail }) {
                try await member.connectedPeers().contains(home.name)
            }
            await member.stop()
            let failuresBefore = home.log.components(separatedBy: "handshake failed at message 1").count

            let attack = try await lab.run(inside: 2, ["python3", "-c", Self.attacker, lab.address(1), "7479", "1000"])
            #expect(attack.status == 0, "\(attack.error)")
            let failed = home.log.components(separatedBy: "handshake failed at message 1").count - failuresBefore
            #expect(failed >= 1 && failed <= 25, "home answered \(failed) of the attacker's message 1s; the limit is 20 a minute")

            // The member, at its own address, connects at its first dial and syncs.
            try await member.start()
            let note = try await home.call(NoteSummary.self, ["new", "--title", "After the attack"], input: "<p>still here</p>")
            try await waitUntil("the member has the note written after the attack", timeout: .seconds(30), seen: { member.logTail }) {
                try await member.library().contains { $0.hasPrefix(note.id) }
            }
            let peer = try #require(try await member.status().peers.first { $0.name == home.name })
            #expect(peer.connected && peer.retries == 0, "\(peer)")
        } catch {
            print(daemons.map(\.logTail).joined(separator: "\n"))
            throw error
        }
    }
}
