import Dispatch
import Synchronization
import Testing
@testable import Discovery

@Suite struct StaticPeersTests {
    private let advertisement: Advertisement
    private let laptop: PeerEndpoint
    private let desktop: PeerEndpoint

    init() throws {
        advertisement = try Advertisement(port: 7000, deviceID: "SELF")
        laptop = try PeerEndpoint(parsing: "laptop.lan:7001")
        desktop = try PeerEndpoint(parsing: "10.0.0.3:7002")
    }

    /// Resolves every host to 10.0.0.<port % 256>, at once.
    private static let fakeResolve: StaticPeers.Resolver = { endpoint in
        [IPAddress(numeric: "10.0.0.\(endpoint.port % 256)")].compactMap { $0 }
    }

    private func found(_ events: [DiscoveryEvent]) -> [String: DiscoveredPeer] {
        var peers: [String: DiscoveredPeer] = [:]
        for event in events {
            switch event {
            case .found(let peer): peers[peer.serviceName] = peer
            case .lost(let name): peers[name] = nil
            case .state: break
            }
        }
        return peers
    }

    @Test func reportsConfiguredPeersWhenStarted() async throws {
        let peers = StaticPeers([laptop, desktop, laptop], resolve: Self.fakeResolve)
        #expect(peers.endpoints == [laptop, desktop], "duplicates are dropped")
        let recorder = EventRecorder()
        peers.start(advertising: advertisement, onEvent: recorder.handler)
        defer { peers.stop() }

        try await recorder.wait(until: "both peers are found") { found($0).count == 2 }
        let peer = try #require(found(recorder.all)["laptop.lan:7001"])
        #expect(peer == DiscoveredPeer(serviceName: "laptop.lan:7001", deviceID: nil, protocolVersion: nil,
                                       hostName: "laptop.lan", addresses: [try #require(IPAddress(numeric: "10.0.0.89"))],
                                       port: 7001))
        #expect(!recorder.all.contains { if case .state = $0 { true } else { false } }, "static peers have no state")
    }

    @Test func addAndRemoveAtRuntime() async throws {
        let peers = StaticPeers(resolve: Self.fakeResolve)
        let recorder = EventRecorder()
        peers.start(advertising: advertisement, onEvent: recorder.handler)
        defer { peers.stop() }

        #expect(peers.add(laptop))
        #expect(!peers.add(laptop), "already there")
        try await recorder.wait(until: "the added peer is found") { found($0)["laptop.lan:7001"] != nil }
        #expect(peers.remove(laptop))
        #expect(!peers.remove(laptop), "already gone")
        try await recorder.wait(until: "the removed peer is lost") { $0.last == .lost(serviceName: "laptop.lan:7001") }
        #expect(peers.endpoints.isEmpty)
    }

    @Test func aPeerRemovedWhileItsNameResolvesIsNeverReported() async throws {
        let gate = DispatchSemaphore(value: 0)
        let peers = StaticPeers(resolve: { endpoint in
            if endpoint.host == "slow.lan" { gate.wait() }
            return Self.fakeResolve(endpoint)
        })
        let recorder = EventRecorder()
        peers.start(advertising: advertisement, onEvent: recorder.handler)
        defer { peers.stop() }

        let slow = try PeerEndpoint(parsing: "slow.lan:7009")
        peers.add(slow)
        peers.remove(slow)
        gate.signal()
        try await waitUntil("the slow lookup is over", seen: { "\(peers.resolutionsInFlight) in flight" }) {
            peers.resolutionsInFlight == 0
        }
        // Events are delivered in order, so once this marker arrives anything about slow.lan would have too.
        peers.add(desktop)
        try await recorder.wait(until: "the marker peer is found") { found($0)["10.0.0.3:7002"] != nil }
        #expect(recorder.all.count == 1, "neither found nor lost for the removed peer: \(recorder.all)")
    }

    @Test func nothingArrivesAfterStop() async throws {
        let gate = DispatchSemaphore(value: 0)
        let peers = StaticPeers([laptop], resolve: { endpoint in
            gate.wait()
            return Self.fakeResolve(endpoint)
        })
        let recorder = EventRecorder()
        peers.start(advertising: advertisement, onEvent: recorder.handler)
        peers.stop()
        gate.signal()
        try await waitUntil("the lookup is over", seen: { "\(peers.resolutionsInFlight) in flight" }) {
            peers.resolutionsInFlight == 0
        }
        // Events are delivered in order on one queue: once a restarted source's first event
        // reached its new handler, anything the stopped one sent would have been delivered.
        let marker = EventRecorder()
        gate.signal()  // for the restarted source's own lookup
        peers.start(advertising: advertisement, onEvent: marker.handler)
        defer { peers.stop() }
        try await marker.wait(until: "the restarted source finds the laptop") { !found($0).isEmpty }
        #expect(recorder.all.isEmpty, "events after stop: \(recorder.all)")
    }

    @Test func restartingReportsThePeersAgain() async throws {
        let peers = StaticPeers([laptop], resolve: Self.fakeResolve)
        let first = EventRecorder(), second = EventRecorder()
        peers.start(advertising: advertisement, onEvent: first.handler)
        try await first.wait(until: "found by the first run") { $0.count == 1 }
        peers.start(advertising: advertisement, onEvent: second.handler)
        defer { peers.stop() }
        try await second.wait(until: "found again by the second run") { $0.count == 1 }
        #expect(first.all.count == 1)
    }

    @Test func theHandlerMayStopItsOwnSource() async throws {
        let peers = StaticPeers([laptop], resolve: Self.fakeResolve)
        let stopped = Mutex(false)
        peers.start(advertising: advertisement) { [peers] _ in
            peers.stop()
            stopped.withLock { $0 = true }
        }
        try await waitUntil("the handler has stopped the source", seen: { "not yet" }) { stopped.withLock { $0 } }
        peers.stop()
    }

    @Test func theSystemResolverResolvesNumericAddressesAndLocalhost() throws {
        #expect(StaticPeers.systemResolve(try PeerEndpoint(parsing: "127.0.0.1:7001")).map(\.description) == ["127.0.0.1"])
        #expect(StaticPeers.systemResolve(try PeerEndpoint(parsing: "[::1]:7001")).map(\.description) == ["::1"])
        let localhost = StaticPeers.systemResolve(try PeerEndpoint(parsing: "localhost:7001")).map(\.description)
        #expect(localhost.contains("127.0.0.1") || localhost.contains("::1"), "\(localhost)")
    }
}
