import Foundation
import Testing
@testable import Peer
import TestSupport

/// Cheap refusals (docs/security.md): failed message-1 attempts are limited per source
/// address, and past the limit that address is closed at accept, before any key is made. On
/// loopback, with distinct 127.0.0.x source addresses (all of 127.0.0.0/8 is loopback on
/// Linux), no namespaces needed.
@Suite(.serialized) struct PeerNetworkRefusalTests {
    let household = PreSharedKey.generate()

    enum Outcome: Equatable {
        /// The handshake finished: the responder took us in.
        case established
        /// The responder closed the connection (after message 1 failed, or at accept).
        case closedByPeer
        case failed(String)
    }

    /// A TCP connection from `source` to the loopback `port`, or nil.
    static func connect(from source: String, to port: UInt16) -> Int32? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, size) } }
        let connected = bound == 0 && withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, size) }
        } == 0
        guard connected else {
            close(descriptor)
            return nil
        }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return descriptor
    }

    static func sendAll(_ descriptor: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Runs a Noise handshake as initiator from `source`, proving `psk`, with blocking I/O.
    static func handshake(from source: String, to port: UInt16, psk: PreSharedKey) -> Outcome {
        guard let descriptor = connect(from: source, to: port) else { return .failed("cannot connect from \(source): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var channel = SecureChannel(role: .initiator(psk: psk), identity: .generate())
        sendAll(descriptor, channel.start())
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) { return .closedByPeer }
            guard count > 0 else { return .failed("no answer from the responder: \(String(cString: strerror(errno)))") }
            let output = channel.receive(buffer[0..<count])
            sendAll(descriptor, output.bytesToSend)
            if let error = output.error { return .failed("\(error)") }
            if channel.isEstablished { return .established }
        }
    }

    /// Whether a connection from `source` that sends nothing is closed by the responder.
    /// With a handshake timeout far longer than the read's, only a refusal at accept closes it.
    static func closedAtAccept(from source: String, to port: UInt16) -> Bool {
        guard let descriptor = connect(from: source, to: port) else { return false }
        defer { close(descriptor) }
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, 0)
        return count == 0 || (count < 0 && errno == ECONNRESET)
    }

    /// Connections the responder dropped because message 1 failed (each cost it a key).
    static func failedAtMessage1(_ events: [PeerNetwork.Event]) -> Int {
        events.filter { event in
            guard case .closed(_, let reason?) = event else { return false }
            return reason.contains("message 1")
        }.count
    }

    func server(window: Duration = .seconds(60)) throws -> (PeerNetwork, EventLog, UInt16) {
        let log = EventLog()
        var configuration = PeerNetwork.Configuration()
        configuration.handshakeTimeout = .seconds(600)
        configuration.failedHandshakeWindow = window
        let keys = [household]
        let network = try PeerNetwork(identity: .generate(), configuration: configuration, responderKeys: { keys }, events: { log.append($0) })
        let address = try network.listen(on: PeerAddress(host: "127.0.0.1", port: 0))
        return (network, log, address.port)
    }

    @Test func aThousandWrongKeyHandshakesFromOneAddressNeverDelayAMemberAtAnother() async throws {
        try await offThePool { try self.blockingThousandWrongKeys() }
    }

    func blockingThousandWrongKeys() throws {
        let (network, log, port) = try server()
        defer { network.stop() }
        let limit = PeerNetwork.Configuration().failedHandshakeLimit
        #expect(limit == 20)
        for attempt in 0..<1_000 {
            let outcome = Self.handshake(from: "127.0.0.2", to: port, psk: PreSharedKey.generate())
            guard outcome == .closedByPeer else {
                Issue.record("attempt \(attempt) from the attacker: \(outcome)")
                return
            }
        }
        // Only the first `limit` reached message 1; the rest were closed at accept.
        #expect(log.wait { Self.failedAtMessage1($0) >= limit })
        #expect(Self.closedAtAccept(from: "127.0.0.2", to: port), "the attacker is closed at accept, before any key is made")

        // A member at another address connects at once, and its handshake completes.
        #expect(Self.handshake(from: "127.0.0.3", to: port, psk: household) == .established)
        #expect(log.wait { $0.contains { event in
            if case .established(_, _, _, let remote) = event { return remote.hasPrefix("127.0.0.3:") }
            return false
        } })
        // Everything before the member's handshake has been reported by now (one loop, in order).
        #expect(Self.failedAtMessage1(log.all) == limit, "exactly \(limit) attempts cost a key")
        let refusals = log.all.compactMap { event -> String? in
            if case .refusing(let host, let failures, _) = event { return "\(host) after \(failures)" }
            return nil
        }
        #expect(refusals == ["127.0.0.2 after \(limit)"], "the refusal is reported once, for the attacker only")
        // The limit is per address: the attacker's address stays refused even with the right key.
        #expect(Self.handshake(from: "127.0.0.2", to: port, psk: household) == .closedByPeer)
    }

    @Test func anAddressIsAcceptedAgainOnceItsFailuresAgeOutOfTheWindow() async throws {
        try await offThePool { try self.blockingAgeOut() }
    }

    func blockingAgeOut() throws {
        let (network, log, port) = try server(window: .milliseconds(1_500))
        defer { network.stop() }
        let limit = PeerNetwork.Configuration().failedHandshakeLimit
        for _ in 0..<limit { #expect(Self.handshake(from: "127.0.0.4", to: port, psk: PreSharedKey.generate()) == .closedByPeer) }
        #expect(log.wait { Self.failedAtMessage1($0) == limit })
        // Once the failures are older than the window, a member at that address gets in again.
        var outcome = Outcome.closedByPeer
        let deadline = Date().addingTimeInterval(20)
        while outcome == .closedByPeer && Date() < deadline {
            outcome = Self.handshake(from: "127.0.0.4", to: port, psk: household)
            if outcome == .closedByPeer { usleep(100_000) }
        }
        #expect(outcome == .established)
    }
}
