import Control
import Foundation
import Testing
import TestSupport

/// A laptop away from home (docs/away-from-home.md): no mDNS, the home machine given by host
/// name (`--peer homebox:7479`), the name resolved through the laptop's own hosts file as a
/// VPN's DNS would resolve it. The home machine moves to another address; the laptop finds it
/// again at the next dial, because a peer given by name is resolved at every dial.
@Suite(.serialized, .enabled(if: Netlab.canRun(for: "AwayFromHomeTests"), "needs root and network namespaces (scripts/netlab check)"))
struct AwayFromHomeTests {
    @Test func aPeerGivenByNameIsFollowedToItsNewAddress() async throws {
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let lab = try await Netlab.up(hosts: 2)
        let hostsDirectory = "/etc/netns/" + lab.namespace(1)
        var daemons: [LabDaemon] = []
        defer {
            for daemon in daemons { daemon.stopNow() }
            try? FileManager.default.removeItem(atPath: hostsDirectory)
            lab.down()
        }
        // The laptop's hosts file, rewritten in place later: a running process keeps the
        // file it was started with bind-mounted, so the same inode must change.
        try FileManager.default.createDirectory(atPath: hostsDirectory, withIntermediateDirectories: true)
        let hosts = hostsDirectory + "/hosts"
        try #require(FileManager.default.createFile(atPath: hosts, contents: nil))
        func point(homebox address: String) throws {
            let handle = try #require(FileHandle(forUpdatingAtPath: hosts))
            try handle.truncate(atOffset: 0)
            try handle.write(contentsOf: Data("127.0.0.1 localhost\n\(address) homebox\n".utf8))
            try handle.close()
        }
        let first = lab.address(2)
        let moved = first.split(separator: ".").dropLast().joined(separator: ".") + ".102"
        try point(homebox: first)

        let laptop = try await LabDaemon(lab: lab, host: 1, scratch: scratch, extraArguments: ["--no-mdns", "--peer", "homebox:7479"])
        let home = try await LabDaemon(lab: lab, host: 2, scratch: scratch, listen: "0.0.0.0:7479", extraArguments: ["--no-mdns"])
        daemons = [laptop, home]
        do {
            try await home.start()
            try await laptop.start()
            let code = try await home.call(InviteResult.self, ["invite"]).code
            try await laptop.ctl(["join", code, "--address", "homebox:7479"]).check()
            let before = try await home.call(NoteSummary.self, ["new", "--title", "Before the move"], input: "<p>at home</p>")
            try await waitUntil("the laptop has the note written at home", seen: { laptop.logTail }) {
                try await laptop.nudge()
                return try await laptop.library().contains { $0.hasPrefix(before.id) }
            }

            // The home machine gets a new address (a new DHCP lease, another VPN address), and
            // starts before it has one: only loopback is up, as on a machine whose network
            // comes later; listening on 0.0.0.0 must work then too.
            await home.stop()
            try await lab.run(inside: 2, ["ip", "address", "del", first + "/24", "dev", "nl0"])
            try await home.start()
            try await lab.run(inside: 2, ["ip", "address", "add", moved + "/24", "dev", "nl0"])
            try point(homebox: moved)
            let after = try await home.call(NoteSummary.self, ["new", "--title", "After the move"], input: "<p>new address</p>")
            let away = try await laptop.call(NoteSummary.self, ["new", "--title", "From the laptop"], input: "<p>on the road</p>")
            try await waitUntil("both sides have everything again", timeout: .seconds(90), seen: { laptop.logTail + "\n" + home.logTail }) {
                try await laptop.nudge()
                let laptopHas = try await laptop.library().contains { $0.hasPrefix(after.id) }
                let homeHas = try await home.library().contains { $0.hasPrefix(away.id) }
                return laptopHas && homeHas
            }
            // The peer is still the name the person gave, now reached at the new address.
            let peer = try #require(try await laptop.status().peers.first { $0.name == home.name })
            #expect(peer.connected && peer.address == "homebox:7479", "\(peer)")
            #expect(try await home.status().peers.contains { $0.name == laptop.name && $0.connected })
        } catch {
            print(daemons.map(\.logTail).joined(separator: "\n"))
            throw error
        }
    }
}
