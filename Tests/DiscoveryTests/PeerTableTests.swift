import Merge
import Testing
@testable import Discovery

private let ipv4 = Int32(0), ipv6 = Int32(1)

private func instance(_ name: String, _ ipProtocol: Int32 = ipv4, interface: Int32 = 2) -> ServiceInstance {
    ServiceInstance(interface: interface, ipProtocol: ipProtocol, name: name, domain: "local")
}

private func resolution(_ address: String, id: String? = "PEER", port: UInt16 = 7001, host: String = "peer.local") -> Resolution {
    Resolution(hostName: host, address: IPAddress(numeric: address, interfaceIndex: 2), port: port,
               txt: TXTRecord(version: 1, deviceID: id))
}

@Suite struct PeerTableTests {
    @Test func aPeerIsFoundWhenItResolvesAndLostWhenItsLastInstanceGoes() throws {
        var table = PeerTable(ownDeviceID: "SELF")
        let v4 = instance("notesd-PEER"), v6 = instance("notesd-PEER", ipv6)

        let appeared = [table.appeared(v4), table.appeared(v6)]
        #expect(appeared == [true, true])
        let found = table.resolved(v4, resolution("10.0.0.2"))
        #expect(found == [.found(DiscoveredPeer(
            serviceName: "notesd-PEER", deviceID: "PEER", protocolVersion: 1, hostName: "peer.local",
            addresses: [try #require(IPAddress(numeric: "10.0.0.2"))], port: 7001))])

        guard case .found(let both)? = table.resolved(v6, resolution("fe80::2")).first else {
            Issue.record("the second address should update the peer")
            return
        }
        #expect(both.addresses.map(\.description) == ["10.0.0.2", "fe80::2%2"])
        #expect(table.resolved(v6, resolution("fe80::2")).isEmpty, "nothing changed, nothing reported")

        guard case .found(let remaining)? = table.disappeared(v6).first else {
            Issue.record("losing one address should update the peer")
            return
        }
        #expect(remaining.addresses.map(\.description) == ["10.0.0.2"])
        #expect(table.disappeared(v4) == [.lost(serviceName: "notesd-PEER")])
        #expect(table.disappeared(v4).isEmpty, "an unknown instance changes nothing")
    }

    @Test func theNewestResolutionDescribesThePeer() {
        var table = PeerTable(ownDeviceID: "SELF")
        let a = instance("p"), b = instance("p", ipv6)
        _ = table.appeared(a)
        _ = table.appeared(b)
        _ = table.resolved(a, resolution("10.0.0.2", port: 1))
        let events = table.resolved(b, resolution("fe80::2", port: 2))
        guard case .found(let peer)? = events.first else {
            Issue.record("expected found, got \(events)")
            return
        }
        #expect(peer.port == 2)
    }

    @Test func nothingIsReportedBeforeResolutionOrForUnknownInstances() {
        var table = PeerTable(ownDeviceID: "SELF")
        #expect(table.resolved(instance("ghost"), resolution("10.0.0.9")).isEmpty)
        let first = table.appeared(instance("p")), again = table.appeared(instance("p"))
        #expect(first)
        #expect(!again, "already tracked")
        #expect(table.disappeared(instance("p")).isEmpty, "never reported, so never lost")
    }

    @Test func ourOwnDeviceIsNeverAPeer() {
        var table = PeerTable(ownDeviceID: "SELF")
        let mine = instance("notesd-SELF"), stale = instance("renamed")
        _ = table.appeared(mine)
        #expect(table.resolved(mine, resolution("10.0.0.1", id: "SELF")).isEmpty)
        _ = table.appeared(stale)
        #expect(table.resolved(stale, resolution("10.0.0.3", id: "OTHER")).count == 1)
        #expect(table.resolved(stale, resolution("10.0.0.3", id: "SELF")) == [.lost(serviceName: "renamed")],
                "a service that turns out to carry our id is withdrawn")
    }

    @Test func aFailedResolutionWithdrawsItsAddress() {
        var table = PeerTable(ownDeviceID: "SELF")
        let v4 = instance("p")
        _ = table.appeared(v4)
        _ = table.resolved(v4, resolution("10.0.0.2"))
        #expect(table.failedToResolve(v4) == [.lost(serviceName: "p")])
        #expect(table.resolved(v4, resolution("10.0.0.2")).count == 1, "a later resolution finds it again")
    }

    @Test func trackingIsBounded() {
        var table = PeerTable(ownDeviceID: "SELF")
        let accepted = (0..<PeerTable.maxInstances).filter { table.appeared(instance("p\($0)")) }
        #expect(accepted.count == PeerTable.maxInstances)
        let overflow = table.appeared(instance("one-too-many"))
        #expect(!overflow)
        _ = table.disappeared(instance("p0"))
        let afterRoomWasMade = table.appeared(instance("one-too-many"))
        #expect(afterRoomWasMade)
    }

    @Test func removingEverythingLosesReportedPeersOnly() {
        var table = PeerTable(ownDeviceID: "SELF")
        for name in ["b", "a", "unresolved"] { _ = table.appeared(instance(name)) }
        _ = table.resolved(instance("a"), resolution("10.0.0.2"))
        _ = table.resolved(instance("b"), resolution("10.0.0.3"))
        #expect(table.removeAll() == [.lost(serviceName: "a"), .lost(serviceName: "b")])
        #expect(table.resolved(instance("a"), resolution("10.0.0.2")).isEmpty, "old instances are forgotten")
        #expect(table.removeAll().isEmpty)
    }

    /// Random browser/resolver histories: the events always describe exactly the resolved,
    /// non-self instances, and `lost` only ever follows `found`.
    @Test func eventsAlwaysMatchTheInstancesProperty() {
        for seed in UInt64(1)...300 {
            var random = SplitMix64(seed: seed)
            var table = PeerTable(ownDeviceID: "SELF")
            var resolved: [ServiceInstance: (resolution: Resolution, time: Int)] = [:]
            var tracked = Set<ServiceInstance>()
            var reported: [String: DiscoveredPeer] = [:]
            var failure: String?

            for step in 0..<60 where failure == nil {
                let target = instance("p\(random.next(3))", random.next(2) == 0 ? ipv4 : ipv6,
                                      interface: Int32(2 + random.next(2)))
                var events: [DiscoveryEvent] = []
                switch random.next(5) {
                case 0, 1:
                    if table.appeared(target) { tracked.insert(target) }
                case 2:
                    let id = ["PEER", "OTHER", "SELF"][random.next(3)]
                    let address = target.ipProtocol == ipv4 ? "10.0.0.\(1 + random.next(3))" : "fe80::\(1 + random.next(3))"
                    events = table.resolved(target, resolution(address, id: id))
                    if tracked.contains(target) { resolved[target] = (resolution(address, id: id), step) }
                case 3:
                    events = table.failedToResolve(target)
                    resolved[target] = nil
                default:
                    events = table.disappeared(target)
                    tracked.remove(target)
                    resolved[target] = nil
                }
                for event in events {
                    switch event {
                    case .found(let peer): reported[peer.serviceName] = peer
                    case .lost(let name):
                        if reported.removeValue(forKey: name) == nil { failure = "lost \(name) that was never found" }
                    case .state: failure = "the table never reports state"
                    }
                }
                let expected = Dictionary(grouping: resolved, by: \.key.name).compactMapValues { entries -> Set<IPAddress>? in
                    let newest = entries.max { $0.value.time < $1.value.time }!.value.resolution
                    return newest.txt.deviceID == "SELF" ? nil : Set(entries.compactMap(\.value.resolution.address))
                }
                if expected != reported.mapValues({ Set($0.addresses) }) {
                    failure = "after step \(step): expected \(expected), reported \(reported)"
                }
            }
            #expect(failure == nil, "seed \(seed): \(failure ?? "")")
        }
    }
}

extension SplitMix64 {
    /// A number in `0..<upperBound`.
    mutating func next(_ upperBound: Int) -> Int { Int(next() % UInt64(upperBound)) }
}
