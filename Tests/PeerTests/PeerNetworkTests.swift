import Foundation
import Merge
import Synchronization
import Testing
@testable import Peer
import TestSupport

/// Collects network events from the network thread; tests wait on conditions, not time.
final class EventLog: Sendable {
    private let events = Mutex<[PeerNetwork.Event]>([])
    private let condition = NSCondition()

    func append(_ event: PeerNetwork.Event) {
        condition.lock()
        events.withLock { $0.append(event) }
        condition.broadcast()
        condition.unlock()
    }

    var all: [PeerNetwork.Event] { events.withLock { $0 } }

    /// Waits (at most `seconds`) until `predicate` holds for the events so far.
    @discardableResult
    func wait(seconds: Double = 10, until predicate: ([PeerNetwork.Event]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(all) {
            if !condition.wait(until: deadline) { return predicate(all) }
        }
        return true
    }
}

extension PeerNetwork.Event {
    var establishedPeer: ChannelPeer? {
        if case .established(_, let peer, _, _) = self { return peer }
        return nil
    }

    var closedReason: String?? {
        if case .closed(_, let reason) = self { return .some(reason) }
        return nil
    }

    var dialFailure: String? {
        if case .dialFailed(_, let reason) = self { return reason }
        return nil
    }

    var receivedFrames: [Frame] {
        if case .frames(_, let frames) = self { return frames }
        return []
    }
}

@Suite(.serialized) struct PeerNetworkTests {
    let household = PreSharedKey.generate()

    func makeNetwork(_ identity: DeviceIdentity, keys: [PreSharedKey], log: EventLog) throws -> PeerNetwork {
        try PeerNetwork(identity: identity, responderKeys: { keys }, events: { log.append($0) })
    }

    /// A plain TCP connection to `address` on loopback (no handshake): the descriptor, or nil.
    static func connectRaw(to address: PeerAddress) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = address.port.bigEndian
        socketAddress.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    @Test func aPeerIsNotReadFromWhileItsOwnerIsBehind() async throws {
        try await offThePool { try self.blockingAPeerIsNotReadFromWhileItsOwnerIsBehind() }
    }

    func blockingAPeerIsNotReadFromWhileItsOwnerIsBehind() throws {
        let limit = 64 * 1024
        var configuration = PeerNetwork.Configuration()
        configuration.maxUnprocessedBytes = limit
        // The server's owner processes nothing until told to; the sink checks, at every event,
        // that what was handed over unprocessed never runs past the limit by more than one read.
        let unprocessed = Mutex<(events: [(PeerNetwork.ConnectionID, Int)], bytes: Int, worst: Int)>(([], 0, 0))
        let serverLog = EventLog()
        let keys = [household]
        let server = try PeerNetwork(identity: .generate(), configuration: configuration, responderKeys: { keys }, events: { event in
            if case .frames(let id, let frames) = event {
                let bytes = frames.reduce(0) { $0 + FrameCodec.encode($1).count }
                unprocessed.withLock { state in
                    state.events.append((id, bytes))
                    state.bytes += bytes
                    state.worst = max(state.worst, state.bytes)
                }
            }
            serverLog.append(event)
        })
        let clientLog = EventLog()
        let client = try makeNetwork(.generate(), keys: [household], log: clientLog)
        defer { server.stop(); client.stop() }
        let address = try server.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        let connection = client.dial(address, psk: household)
        #expect(clientLog.wait { $0.contains { $0.establishedPeer != nil } })
        #expect(serverLog.wait { $0.contains { $0.establishedPeer != nil } })
        let frames = (0..<400).map { index in Frame.blocks([[UInt8](repeating: UInt8(index % 251), count: 8 * 1024)]) }
        client.send(frames, on: connection)

        let serverConnection = try #require(serverLog.all.compactMap { event -> PeerNetwork.ConnectionID? in
            if case .established(let id, _, _, _) = event { return id }
            return nil
        }.first)
        #expect(poll(seconds: 10) { server.isFull(serverConnection) }, "the server stops reading at the limit")
        // Now the owner catches up, event by event, and everything arrives.
        #expect(poll(seconds: 20) {
            let pending = unprocessed.withLock { state -> [(PeerNetwork.ConnectionID, Int)] in
                defer { state.events = []; state.bytes = 0 }
                return state.events
            }
            for (id, _) in pending { server.processed(id) }
            return serverLog.all.flatMap(\.receivedFrames).count == frames.count
        })
        let worst = unprocessed.withLock { $0.worst }
        #expect(worst <= limit + 128 * 1024, "handed over unprocessed: up to \(worst) bytes for a \(limit)-byte limit")
    }

    @Test func silentStrangersCannotTakeEverySlot() async throws {
        try await offThePool { try self.blockingSilentStrangersCannotTakeEverySlot() }
    }

    func blockingSilentStrangersCannotTakeEverySlot() throws {
        let serverLog = EventLog(), clientLog = EventLog()
        var configuration = PeerNetwork.Configuration()
        configuration.maxConnections = 8
        configuration.maxPendingHandshakes = 4
        let keys = [household]
        let server = try PeerNetwork(identity: .generate(), configuration: configuration, responderKeys: { keys }, events: { serverLog.append($0) })
        let client = try makeNetwork(.generate(), keys: [household], log: clientLog)
        defer { server.stop(); client.stop() }
        let address = try server.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        // More strangers than connection slots, each connected and silent.
        let strangers = (0..<12).compactMap { _ in Self.connectRaw(to: address) }
        defer { for descriptor in strangers { close(descriptor) } }
        #expect(strangers.count == 12)
        client.dial(address, psk: household)
        #expect(clientLog.wait { $0.contains { $0.establishedPeer != nil } }, "the household device got in: \(clientLog.all)")
    }

    @Test func twoDevicesConnectAndExchangeFrames() async throws {
        try await offThePool { try self.blockingTwoDevicesConnectAndExchangeFrames() }
    }

    func blockingTwoDevicesConnectAndExchangeFrames() throws {
        let serverLog = EventLog(), clientLog = EventLog()
        let serverIdentity = DeviceIdentity.generate(), clientIdentity = DeviceIdentity.generate()
        let server = try makeNetwork(serverIdentity, keys: [household], log: serverLog)
        let client = try makeNetwork(clientIdentity, keys: [household], log: clientLog)
        defer { server.stop(); client.stop() }
        let address = try server.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        let connection = client.dial(address, psk: household)
        #expect(clientLog.wait { $0.contains { $0.establishedPeer != nil } })
        #expect(serverLog.wait { $0.contains { $0.establishedPeer != nil } })
        #expect(clientLog.all.compactMap(\.establishedPeer).first?.deviceID == serverIdentity.deviceID)
        #expect(serverLog.all.compactMap(\.establishedPeer).first?.deviceID == clientIdentity.deviceID)
        #expect(serverLog.all.compactMap(\.establishedPeer).first?.matchedPSKIndex == 0)
        client.send([.ping(1, VersionVector()), .refuse(Refusal(.other, "bye"))], on: connection)
        #expect(serverLog.wait { $0.flatMap(\.receivedFrames).count == 2 })
        client.close(connection)
        #expect(serverLog.wait { $0.contains { $0.closedReason != nil } })
    }

    @Test func aDeviceWithAnotherHouseholdKeyIsRefusedAtTheFirstMessage() async throws {
        try await offThePool { try self.blockingADeviceWithAnotherHouseholdKeyIsRefusedAtTheFirstMessage() }
    }

    func blockingADeviceWithAnotherHouseholdKeyIsRefusedAtTheFirstMessage() throws {
        let serverLog = EventLog(), clientLog = EventLog()
        let server = try makeNetwork(.generate(), keys: [household], log: serverLog)
        let client = try makeNetwork(.generate(), keys: [], log: clientLog)
        defer { server.stop(); client.stop() }
        let address = try server.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        client.dial(address, psk: PreSharedKey.generate())
        #expect(serverLog.wait { $0.contains { ($0.closedReason ?? nil)?.contains("message 1") == true } })
        #expect(clientLog.wait { $0.contains { $0.closedReason != nil } })
        #expect(!serverLog.all.contains { $0.establishedPeer != nil })
        #expect(!clientLog.all.contains { $0.establishedPeer != nil })
    }

    @Test func garbageAndOversizedLengthsCloseOnlyThatConnection() async throws {
        try await offThePool { try self.blockingGarbageAndOversizedLengthsCloseOnlyThatConnection() }
    }

    func blockingGarbageAndOversizedLengthsCloseOnlyThatConnection() throws {
        let serverLog = EventLog(), clientLog = EventLog()
        let server = try makeNetwork(.generate(), keys: [household], log: serverLog)
        let client = try makeNetwork(.generate(), keys: [household], log: clientLog)
        defer { server.stop(); client.stop() }
        let address = try server.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        let good = client.dial(address, psk: household)
        #expect(clientLog.wait { $0.contains { $0.establishedPeer != nil } })

        // A raw TCP client sends a huge length prefix, another sends garbage then hangs up.
        for payload: [UInt8] in [[0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3], Array("GET / HTTP/1.0\r\n\r\n".utf8)] {
            let descriptor = try #require(Self.connectRaw(to: address))
            _ = payload.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
            // The server closes this connection: our read sees end of stream.
            var scratch = [UInt8](repeating: 0, count: 64)
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            #expect(recv(descriptor, &scratch, scratch.count, 0) <= 0)
            close(descriptor)
        }
        // The good connection still works.
        client.send([.ping(7, VersionVector())], on: good)
        #expect(serverLog.wait { $0.flatMap(\.receivedFrames).contains(.ping(7, VersionVector())) })
    }

    @Test func aHalfHandshakeIsDroppedAfterTheTimeout() async throws {
        try await offThePool { try self.blockingAHalfHandshakeIsDroppedAfterTheTimeout() }
    }

    func blockingAHalfHandshakeIsDroppedAfterTheTimeout() throws {
        let serverLog = EventLog()
        var configuration = PeerNetwork.Configuration()
        configuration.handshakeTimeout = .milliseconds(300)
        let keys = [household]
        let server = try PeerNetwork(identity: .generate(), configuration: configuration, responderKeys: { keys }, events: { serverLog.append($0) })
        defer { server.stop() }
        let address = try server.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        // Connect and say nothing: the server must give up on its own.
        let descriptor = try #require(Self.connectRaw(to: address))
        defer { close(descriptor) }
        #expect(serverLog.wait { $0.contains { ($0.closedReason ?? nil)?.contains("no completed handshake") == true } })
    }

    @Test func dialingNothingReportsAClearReason() async throws {
        try await offThePool { try self.blockingDialingNothingReportsAClearReason() }
    }

    func blockingDialingNothingReportsAClearReason() throws {
        let log = EventLog()
        let client = try makeNetwork(.generate(), keys: [], log: log)
        defer { client.stop() }
        // Port 1 on loopback: nothing listens there.
        client.dial(PeerAddress(host: "127.0.0.1", port: 1), psk: household)
        #expect(log.wait { $0.contains { $0.dialFailure?.contains("cannot connect") == true } })
    }

    @Test func aDialClosedWhileItsNameResolvesNeverConnects() async throws {
        try await offThePool { try self.blockingADialClosedWhileItsNameResolvesNeverConnects() }
    }

    func blockingADialClosedWhileItsNameResolvesNeverConnects() throws {
        let serverLog = EventLog(), clientLog = EventLog()
        let server = try makeNetwork(.generate(), keys: [household], log: serverLog)
        defer { server.stop() }
        let bound = try server.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        // The name server answers only once the test has closed the dial.
        let answer = DispatchSemaphore(value: 0)
        var configuration = PeerNetwork.Configuration()
        configuration.resolve = { address in
            answer.wait()
            return try address.resolve()
        }
        let client = try PeerNetwork(identity: .generate(), configuration: configuration, responderKeys: { [] }, events: { clientLog.append($0) })
        defer { client.stop() }
        let id = client.dial(bound, psk: household)
        // Queued for the loop before the resolver can answer, so the loop sees it first.
        client.close(id, reason: "cancelled")
        answer.signal()
        #expect(clientLog.wait { $0.contains { ($0.closedReason ?? nil) == "cancelled" } }, "the owner hears the dial is closed")
        #expect(!serverLog.wait(seconds: 1) { $0.contains { $0.establishedPeer != nil } }, "no handshake ever happens")
        #expect(!clientLog.all.contains { $0.establishedPeer != nil })
    }

    @Test func aBoundAddressReportsThePortTheKernelChose() async throws {
        try await offThePool { try self.blockingABoundAddressReportsThePortTheKernelChose() }
    }

    func blockingABoundAddressReportsThePortTheKernelChose() throws {
        let network = try makeNetwork(.generate(), keys: [household], log: EventLog())
        defer { network.stop() }
        let bound = try network.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        #expect(bound.host == "127.0.0.1" && bound.port != 0)
        #expect(PeerAddress(host: "::1", port: 5).description == "[::1]:5")
    }
}
