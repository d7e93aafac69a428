import Control
import Foundation
import Testing
import TestSupport

/// The real-LAN proof (docs/testing.md): three `notesd` processes, each in its own network
/// namespace with its own D-Bus and avahi-daemon (`scripts/netlab`), **no static peers**:
/// they find each other only through mDNS, pair with `invite` / `join CODE` (no address),
/// converge, heal a partition (one host's link unplugged) with exactly one conflict copy, and
/// find each other again after an avahi-daemon restart. Driven only by `notesctl`, run inside
/// each host. Figures are printed, never asserted.
///
/// Needs root and network namespaces (`scripts/netlab check`); elsewhere the suite is skipped
/// and prints why.
@Suite(.serialized, .enabled(if: Netlab.canRun(for: "RealLANTests"), "needs root and network namespaces (scripts/netlab check)"))
struct RealLANTests {
    @Test func threeHostsPairByDiscoveryHealAPartitionAndOutliveAnAvahiRestart() async throws {
        for product in ["notesd", "notesctl"] {
            try #require(FileManager.default.isExecutableFile(atPath: builtProduct(product)),
                         "\(builtProduct(product)) is missing; build it with swift build --build-tests")
        }
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let labStart = ContinuousClock.now
        let lab = try await Netlab.up(hosts: 3)  // removes what it made if it fails half-way
        var daemons: [LabDaemon] = []
        defer {
            for daemon in daemons { daemon.stopNow() }
            lab.down()
        }
        figure("lab of 3 hosts up (namespaces, D-Bus, avahi-daemon)", ContinuousClock.now - labStart)
        do {
            for host in 1...lab.hosts { daemons.append(try await LabDaemon(lab: lab, host: host, scratch: scratch)) }
            try await startAndPairByDiscovery(daemons)
            let notes = try await editsOnEachDeviceConverge(daemons)
            try await partitionHealsWithOneConflictCopy(daemons, lab: lab, notes: notes)
            try await peersAreFoundAgainAfterAnAvahiRestart(daemons, lab: lab, notes: notes)
        } catch {
            print(daemons.map(\.logTail).joined(separator: "\n"))
            throw error
        }
    }

    /// The notes the phases share.
    struct Notes {
        /// Four paragraphs; edited on both sides of the partition.
        let plan: String
        /// A list; edited on the connected side during the partition.
        let shopping: String
    }

    // MARK: - Phases

    /// Every daemon advertises and browses; two join the first one's household by code alone,
    /// the inviter found through discovery; then all three hold sessions with each other.
    private func startAndPairByDiscovery(_ daemons: [LabDaemon]) async throws {
        let start = ContinuousClock.now
        for daemon in daemons { try await daemon.start() }
        try await waitUntil("every daemon advertises and browses", seen: { await statuses(daemons) }) {
            try await all(daemons) { try await $0.status().discovery.state == .running }
        }
        figure("3 notesd started, discovery running on all", ContinuousClock.now - start)

        let inviter = daemons[0]
        let household = try #require(try await inviter.status().household)
        for joiner in daemons.dropFirst() {
            let invite = try await inviter.call(InviteResult.self, ["invite"])
            let joinStart = ContinuousClock.now
            // No --address: the joiner tries every _notesd._tcp service it sees.
            let joined = try await joiner.call(JoinResult.self, ["join", invite.code])
            figure("\(joiner.name) joined by code alone (inviter found by discovery)", ContinuousClock.now - joinStart)
            #expect(joined.household.id == household.id)
        }

        let meshStart = ContinuousClock.now
        let names = Set(daemons.map(\.name))
        try await waitUntil("every daemon holds a session with both others", seen: { await statuses(daemons) }) {
            try await all(daemons) { try await $0.connectedPeers() == names.subtracting([$0.name]) }
        }
        figure("all 3 connected to each other after the last join", ContinuousClock.now - meshStart)
        for daemon in daemons {
            let devices = try await daemon.call([DeviceInfo].self, ["devices"])
            #expect(Set(devices.map(\.name)) == names, "\(daemon.name)'s roster: \(devices.map(\.name))")
        }
    }

    /// A note made on host 1, one on host 2 and an edit on host 3 reach every device.
    private func editsOnEachDeviceConverge(_ daemons: [LabDaemon]) async throws -> Notes {
        let (first, second, third) = (daemons[0], daemons[1], daemons[2])
        let start = ContinuousClock.now
        let plan = try await first.call(NoteSummary.self, ["new", "--title", "Plan"], input: paragraphs("one", "two", "three", "four"))
        try await waitConverged(daemons, "host1's new note is on every device")
        figure("a note made on host1 is on all 3 (polling included)", ContinuousClock.now - start)

        let shopping = try await second.call(NoteSummary.self, ["new", "--title", "Shopping"], input: "<ul><li>milk</li></ul>")
        try await third.ctl(["edit", plan.id], input: paragraphs("one", "two", "three", "four from host3")).check()
        let edits = ContinuousClock.now
        try await waitConverged(daemons, "host2's note and host3's edit are on every device")
        figure("a note from host2 and an edit from host3 are on all 3", ContinuousClock.now - edits)
        for daemon in daemons {
            #expect(try await daemon.body(of: plan.id).contains("four from host3"), "\(daemon.name) lacks host3's edit")
            #expect(try await daemon.body(of: shopping.id).contains("milk"), "\(daemon.name) lacks host2's note")
        }
        return Notes(plan: plan.id, shopping: shopping.id)
    }

    /// Host 3 is unplugged. Host 1 edits paragraphs one and two of the plan, host 2 the
    /// shopping list; host 3 edits paragraphs one and three and writes a new note. Plugged
    /// back in, all three converge: the different paragraphs merge, paragraph one becomes
    /// exactly one conflict copy (the same on every device), and nothing is lost.
    private func partitionHealsWithOneConflictCopy(_ daemons: [LabDaemon], lab: Netlab, notes: Notes) async throws {
        let (first, second, isolated) = (daemons[0], daemons[1], daemons[2])
        try await lab.setLink(isolated.host, up: false)

        // The connected side: edits between host1 and host2 still flow.
        try await first.ctl(["edit", notes.plan], input: paragraphs("one from host1", "two from host1", "three", "four from host3")).check()
        try await waitUntil("host2 has host1's edit while host3 is unplugged", seen: { await libraries([first, second]) }) {
            try await second.library() == first.library()
        }
        try await second.ctl(["edit", notes.shopping], input: "<ul><li>milk</li><li>eggs from host2</li></ul>").check()
        try await waitUntil("host1 has host2's edit while host3 is unplugged", seen: { await libraries([first, second]) }) {
            try await first.library() == second.library()
        }

        // The unplugged side.
        try await isolated.ctl(["edit", notes.plan], input: paragraphs("one from host3", "two", "three from host3", "four from host3")).check()
        let offline = try await isolated.call(NoteSummary.self, ["new", "--title", "Written offline"], input: paragraphs("while unplugged"))
        #expect(try await !isolated.body(of: notes.plan).contains("from host1"), "host3 received host1's edit through an unplugged link")
        #expect(try await !first.library().contains { $0.hasPrefix(offline.id) }, "host1 received host3's note through an unplugged link")

        try await lab.setLink(isolated.host, up: true)
        let heal = ContinuousClock.now
        try await waitConverged(daemons, "all 3 converge after host3's link comes back")
        figure("all 3 converged after the link came back (polling included)", ContinuousClock.now - heal)

        var copyIDs: Set<String> = []
        for daemon in daemons {
            let copies = try await daemon.conflictCopies()
            #expect(copies.count == 1, "\(daemon.name) has \(copies.count) conflict copies: \(copies.map(\.title))")
            #expect(copies.allSatisfy { $0.conflictOf == notes.plan })
            copyIDs.formUnion(copies.map(\.id))
        }
        #expect(copyIDs.count == 1, "the devices derived different conflict copies: \(copyIDs)")

        let merged = try await isolated.body(of: notes.plan)
        for kept in ["two from host1", "three from host3", "four from host3"] {
            #expect(merged.contains(kept), "the merged plan lost \"\(kept)\": \(merged)")
        }
        let copy = try #require(copyIDs.first)
        let copyBody = try await isolated.body(of: copy)
        // Both versions of paragraph one survive: one in the note, the other in the copy.
        for version in ["one from host1", "one from host3"] {
            #expect(Set([merged.contains(version), copyBody.contains(version)]) == [true, false],
                    "\"\(version)\" should be in exactly one of the note and its copy:\n\(merged)\n---\n\(copyBody)")
        }
        #expect(try await isolated.body(of: notes.shopping).contains("eggs from host2"))
        #expect(try await first.library().contains { $0.hasPrefix(offline.id) })
    }

    /// Host 2's avahi-daemon stops: its notesd says discovery is unavailable, and running again
    /// once the daemon is back. Sessions do not depend on Avahi, so to show that the peers are
    /// *found* again, host 1's notesd then restarts: with no static peers and no dialling of
    /// remembered addresses, it reaches host 2 again only through mDNS (host 2's service,
    /// withdrawn by the goodbye packets when its Avahi stopped, published again, or host 2
    /// browsing and dialling host 1). Edits then flow to and from host 2.
    private func peersAreFoundAgainAfterAnAvahiRestart(_ daemons: [LabDaemon], lab: Netlab, notes: Notes) async throws {
        let (first, restarted, third) = (daemons[0], daemons[1], daemons[2])
        let stop = ContinuousClock.now
        try await lab.stopAvahi(restarted.host)
        try await waitUntil("host2's notesd reports discovery unavailable", seen: { await statuses([restarted]) }) {
            try await restarted.status().discovery.state == .unavailable
        }
        figure("host2's status says unavailable after its avahi-daemon stopped", ContinuousClock.now - stop)
        let reason = try await restarted.status().discovery.reason ?? ""
        print("RealLANTests: host2 discovery reason: \(reason)")
        #expect(reason.contains("Avahi daemon is not running"), "unexpected reason: \(reason)")

        let start = ContinuousClock.now
        try await lab.startAvahi(restarted.host)
        try await waitUntil("host2's notesd reports discovery running again", seen: { await statuses([restarted]) }) {
            try await restarted.status().discovery.state == .running
        }
        figure("host2's status says running after its avahi-daemon started", ContinuousClock.now - start)
        #expect(try await restarted.connectedPeers() == ["host1", "host3"], "sessions do not depend on Avahi")

        await first.stop()
        try await waitUntil("host2 and host3 see host1 leave", seen: { await statuses([restarted, third]) }) {
            try await all([restarted, third]) { try await !$0.connectedPeers().contains(first.name) }
        }
        let restart = ContinuousClock.now
        try await first.start()
        try await waitUntil("the restarted host1 finds host2 and host3 again", seen: { await statuses(daemons) }) {
            let found = try await first.connectedPeers(), foundBy = try await restarted.connectedPeers()
            return found == ["host2", "host3"] && foundBy == ["host1", "host3"]
        }
        figure("host1 restarted and reconnected to both by discovery", ContinuousClock.now - restart)

        try await restarted.ctl(["edit", notes.shopping], input: "<ul><li>milk</li><li>eggs from host2</li><li>bread after the restart</li></ul>").check()
        let later = try await first.call(NoteSummary.self, ["new", "--title", "After the restart"], input: paragraphs("from host1"))
        let edits = ContinuousClock.now
        try await waitConverged(daemons, "edits from host2 and host1 after the Avahi restart are on every device")
        figure("edits from host2 and host1 after the Avahi restart are on all 3", ContinuousClock.now - edits)
        #expect(try await third.body(of: notes.shopping).contains("bread after the restart"))
        #expect(try await restarted.library().contains { $0.hasPrefix(later.id) })
    }

    // MARK: - Helpers

    /// Waits (bounded) until every daemon holds the same library: each round asks each to
    /// sync (`sync --wait`, bounded) and compares `ls` / `show --html` everywhere.
    private func waitConverged(_ daemons: [LabDaemon], _ what: String) async throws {
        try await waitUntil(what, seen: { await libraries(daemons) }) {
            var libraries: Set<[String]> = []
            for daemon in daemons {
                try await daemon.nudge()
                libraries.insert(try await daemon.library())
            }
            return libraries.count == 1
        }
    }

    /// Whether `predicate` holds for every daemon (asked one after the other).
    private func all(_ daemons: [LabDaemon], _ predicate: (LabDaemon) async throws -> Bool) async throws -> Bool {
        for daemon in daemons where try await !predicate(daemon) { return false }
        return true
    }

    private func libraries(_ daemons: [LabDaemon]) async -> String {
        var lines: [String] = []
        for daemon in daemons {
            let library = (try? await daemon.library()).map { $0.joined(separator: "\n    ") } ?? "(unreadable)"
            lines.append("  \(daemon.name):\n    \(library)")
        }
        return lines.joined(separator: "\n")
    }

    private func statuses(_ daemons: [LabDaemon]) async -> String {
        var lines: [String] = []
        for daemon in daemons {
            guard let status = try? await daemon.status() else {
                lines.append("  \(daemon.name): no status")
                continue
            }
            let peers = status.peers.map { "\($0.name ?? "?")@\($0.address ?? "-") \($0.status.rawValue)\($0.lastError.map { " (\($0))" } ?? "")" }
            lines.append("  \(daemon.name): discovery \(status.discovery.state.rawValue) \(status.discovery.reason ?? ""); peers \(peers.joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }

    private func paragraphs(_ texts: String...) -> String { texts.map { "<p>\($0)</p>" }.joined() }

    /// Printed as the test goes; never asserted (they depend on the machine and its load).
    private func figure(_ what: String, _ elapsed: Duration) {
        print("RealLANTests: \(what): \(elapsed.milliseconds) ms")
    }
}
