import Foundation
import Testing
import TestSupport

/// Real Avahi on a private LAN: `scripts/netlab` makes network namespaces joined by a bridge,
/// each host with its own D-Bus and avahi-daemon, and `discovery-probe` runs `AvahiDiscovery`
/// inside each host. Nothing runs in the root namespace or touches a real interface.
///
/// Needs root and network namespaces; elsewhere the suite is skipped and says why.
@Suite(.enabled("needs root and network namespaces (scripts/netlab check)") { Netlab.canRun(for: "NamespaceTests") })
struct NamespaceTests {
    private static func serviceName(_ host: Int) -> String { "notesd-DEVICE\(host)" }

    /// Whether `probe`, counting only lines from `start` on, currently sees exactly `hosts`,
    /// each with the right device id, version, port and an address in the lab's subnet.
    private func sees(_ probe: ProbeProcess, _ hosts: [Int], in lab: Netlab, after start: Int = 0,
                      named name: (Int) -> String = serviceName) -> Bool {
        let peers = probe.peers(after: start)
        return peers.count == hosts.count && hosts.allSatisfy { host in
            guard let peer = peers[name(host)] else { return false }
            return peer.id == "DEVICE\(host)" && peer.v == 1 && peer.port == UInt16(7000 + host)
                && peer.addresses?.contains(lab.address(host)) == true
        }
    }

    private func startProbes(_ lab: Netlab, names: [Int: String] = [:], only: [Int]? = nil,
                             churn: [Int: Int] = [:]) throws -> [Int: ProbeProcess] {
        try #require(FileManager.default.isExecutableFile(atPath: probeExecutable.path),
                     "\(probeExecutable.path) is missing; build it with swift build --build-tests")
        var probes: [Int: ProbeProcess] = [:]
        for host in only ?? Array(1...lab.hosts) {
            probes[host] = try lab.probe(host: host, deviceID: "DEVICE\(host)", port: UInt16(7000 + host),
                                         serviceName: names[host], churn: churn[host] ?? 0)
        }
        return probes
    }

    private func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }

    @Test func peersFindEachOtherAndFindThemAgainAfterALinkFlapAndAnAvahiRestart() async throws {
        let labStart = ContinuousClock.now
        let lab = try await Netlab.up(hosts: 3)
        defer { lab.down() }
        let labUp = milliseconds(since: labStart)
        // Host 3 first starts and stops discovery 40 times while the others' announcements arrive.
        let probes = try startProbes(lab, churn: [3: 40])
        defer { probes.values.forEach { $0.stop() } }

        // 1. Everyone finds everyone else, never itself, and publishes under its own name.
        for (host, probe) in probes.sorted(by: { $0.key < $1.key }) {
            let others = (1...3).filter { $0 != host }
            try await probe.wait(until: "it finds hosts \(others)") { _ in sees(probe, others, in: lab) }
            try await probe.wait(until: "it is running") { lines in
                lines.contains { $0.state == "running" && $0.name == Self.serviceName(host) }
            }
        }
        #expect(probes[3]?.lines.first?.event == "churned", "the churning probe survived: \(probes[3]?.transcript ?? "")")
        let discovery = probes.values.map { probe in
            probe.lines.filter { $0.event == "found" && $0.addresses?.contains { $0.hasPrefix("10.199.") } == true }
                .map(\.ms).max() ?? 0
        }.max() ?? 0

        // 2. Host 1's link goes down: it loses both peers. Back up: it finds them again.
        let host1 = try #require(probes[1])
        var mark = host1.lines.count
        try await lab.setLink(1, up: false)
        try await host1.wait(until: "it loses both peers when its link goes down") { lines in
            Set(lines.dropFirst(mark).filter { $0.event == "lost" }.compactMap(\.name))
                == [Self.serviceName(2), Self.serviceName(3)]
        }
        mark = host1.lines.count
        let linkUp = ContinuousClock.now
        try await lab.setLink(1, up: true)
        try await host1.wait(until: "it finds both peers again after the link comes back") { _ in
            sees(host1, [2, 3], in: lab, after: mark)
        }
        let rediscovery = milliseconds(since: linkUp)

        // 3. Host 2's avahi-daemon restarts: host 2 goes unavailable, then running, and finds its
        //    peers again; host 1 sees host 2 leave (goodbye packets) and come back.
        let host2 = try #require(probes[2])
        let mark2 = host2.lines.count, mark1 = host1.lines.count
        let restart = ContinuousClock.now
        try await lab.restartAvahi(2)
        try await host2.wait(until: "it reports Avahi unavailable, then running again") { lines in
            let after = Array(lines.dropFirst(mark2))
            guard let down = after.firstIndex(where: { $0.state == "unavailable" }) else { return false }
            return after[down].reason?.contains("Avahi daemon is not running") == true
                && after[down...].contains { $0.state == "running" && $0.name == Self.serviceName(2) }
        }
        let unavailableAt = try #require(host2.lines[mark2...].firstIndex { $0.state == "unavailable" })
        try await host2.wait(until: "it finds its peers again after the restart") { _ in
            sees(host2, [1, 3], in: lab, after: unavailableAt)
        }
        try await host1.wait(until: "it sees host 2 lost, then found again") { lines in
            let after = Array(lines.dropFirst(mark1))
            guard let lost = after.firstIndex(where: { $0.event == "lost" && $0.name == Self.serviceName(2) }) else {
                return false
            }
            return after[lost...].contains { $0.event == "found" && $0.name == Self.serviceName(2) }
        }
        let recovery = milliseconds(since: restart)

        print("netlab figures: lab of 3 up in \(labUp) ms; all peers found \(discovery) ms after the probes started; "
            + "found again \(rediscovery) ms after link up; avahi-daemon restart to peers found again \(recovery) ms")
    }

    @Test func aNameCollisionRenamesOneAndBothStayVisible() async throws {
        let lab = try await Netlab.up(hosts: 3)
        defer { lab.down() }
        let probes = try startProbes(lab, names: [1: "twin", 2: "twin"])
        defer { probes.values.forEach { $0.stop() } }
        let observer = try #require(probes[3])

        try await observer.wait(until: "it sees both twins under different names") { _ in
            let ids = observer.peers().values.map(\.id)
            return Set(ids) == ["DEVICE1", "DEVICE2"] && ids.count == 2
        }
        let names = Set(observer.peers().keys)
        #expect(names.contains("twin"))
        #expect(names.contains { $0 != "twin" && $0.hasPrefix("twin") }, "the other one is renamed: \(names)")

        // Each twin publishes under the name the observer sees for it, and sees the other one.
        for (host, other) in [(1, 2), (2, 1)] {
            let probe = try #require(probes[host])
            let published = try #require(observer.peers().first { $0.value.id == "DEVICE\(host)" }?.key)
            let otherName = try #require(observer.peers().first { $0.value.id == "DEVICE\(other)" }?.key)
            try await probe.wait(until: "it runs as \"\(published)\"") { lines in
                lines.last { $0.state != nil }.map { $0.state == "running" && $0.name == published } == true
            }
            try await probe.wait(until: "it sees its twin as \"\(otherName)\" and host 3") { _ in
                sees(probe, [other, 3], in: lab, named: { $0 == other ? otherName : Self.serviceName($0) })
            }
        }
        let renamed = try #require([1, 2].compactMap { probes[$0] }.first { probe in
            probe.lines.contains { $0.state == "running" && $0.name != "twin" }
        })
        #expect(renamed.lines.contains { line in
            line.event == "log" && line.reason?.hasPrefix("the service name \"twin\" is already used on the network") == true
        }, "\(renamed.transcript)")
        let renamedAfter = probes.values.compactMap { probe in
            probe.lines.first { $0.state == "running" && $0.name != "twin" && $0.name?.hasPrefix("twin") == true }?.ms
        }.first ?? 0
        print("netlab figures: name collision resolved, renamed twin running \(renamedAfter) ms after start")
    }

    @Test func aPeerWhoseHostDoesNotAnswerYetIsFoundOnceItDoes() async throws {
        let lab = try await Netlab.up(hosts: 2)
        defer { lab.down() }
        let probe = try #require(try startProbes(lab, only: [1])[1])
        defer { probe.stop() }

        // A service on host 2 that points at a host name nobody answers for yet: Avahi's
        // resolver gives up (after about 5 s), and discovery must try again later.
        let service = try lab.spawn(host: 2, ["avahi-publish", "-s", "-H", "ghost.local", "ghost", "_notesd._tcp",
                                              "7009", "v=1", "id=GHOST"])
        defer { service.stop() }
        try await probe.wait(until: "resolving the ghost fails and is retried") { lines in
            lines.contains { $0.event == "log" && $0.reason?.hasPrefix("could not resolve \"ghost\"") == true }
        }
        #expect(probe.peers()["ghost"] == nil)

        let address = try lab.spawn(host: 2, ["avahi-publish", "-a", "-R", "ghost.local", "10.199.0.9"])
        defer { address.stop() }
        try await probe.wait(until: "the ghost is found once its host name resolves") { _ in
            guard let ghost = probe.peers()["ghost"] else { return false }
            return ghost.id == "GHOST" && ghost.port == 7009 && ghost.addresses == ["10.199.0.9"]
        }
    }
}
