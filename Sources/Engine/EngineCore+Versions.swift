import Control
import Peer

/// Versions and features between devices (docs/protocol.md "Versions and features"): what
/// this release says in its handshake payload, and what each connection agreed.
extension EngineCore {
    /// Features this release implements, by the names it advertises. Each sends its frames
    /// only where `agreement(on:)` says both devices use it.
    public static let knownFeatures: Set<Feature> = [.keyRotation]

    /// What this device says about itself in handshake messages 2 and 3.
    public static let handshakeInfo = HandshakeInfo(
        software: NotesVersion.string, protocols: [Hello.currentVersion], features: Set(knownFeatures.map(\.rawValue)))

    /// The bytes the network puts in handshake messages 2 (accepting) and 3 (dialling).
    public static var handshakePayload: [UInt8] { handshakeInfo.encoded }

    /// What the connection `id` runs on, once its handshake is done; a device of release 0.1
    /// gets `.release01`: protocol 1 as recorded in Tests/Fixtures/protocol-1, nothing newer.
    public func agreement(on id: PeerNetwork.ConnectionID) -> PeerAgreement? { connections[id]?.agreement }

    /// The agreement with `device` on its live sync session, if there is one.
    public func agreement(with device: DeviceID) -> PeerAgreement? {
        connections.values.first { $0.device == device && $0.isSyncing }?.agreement
    }

    /// Reads the peer's handshake payload and agrees on a protocol; refuses the connection
    /// (and returns false) when its payload is malformed or no protocol is common.
    func agree(on id: PeerNetwork.ConnectionID, payload: [UInt8]) -> Bool {
        let remote: HandshakeInfo
        do {
            remote = try HandshakeInfo.decode(payload)
        } catch {
            refuse(id, Refusal(.other, "the handshake information from \(connections[id]?.remote ?? "the peer") is malformed (\(error)); update notesd on both devices"))
            return false
        }
        do {
            let agreement = try PeerAgreement.negotiate(local: advertised, remote: remote, known: Self.knownFeatures)
            connections[id]?.agreement = agreement
            let ignored = remote.features.subtracting(advertised.features)
            log.debug("\(connections[id]?.remote ?? "\(id)") runs notesd \(agreement.peerVersionText), protocol \(agreement.protocolVersion)"
                + (agreement.features.isEmpty ? "" : ", using \(agreement.features.map(\.rawValue).sorted().joined(separator: ", "))")
                + (ignored.isEmpty ? "" : "; features not known here, ignored: \(ignored.sorted().joined(separator: ", "))"))
            return true
        } catch {
            refuse(id, Refusal(.protocolVersion, error.description))
            if let target = connections[id]?.target { blockTarget(target, on: id, reason: error.description) }
            return false
        }
    }
}

extension EngineCore {
    /// Each peer's notesd version by device id: from its live session, else as last stored.
    func peerVersions() -> [String: String] {
        var versions: [String: String] = [:]
        for record in (try? replica.peers()) ?? [] { versions[record.peer] = record.software }
        for link in connections.values where link.isSyncing {
            if let device = link.device, let agreement = link.agreement { versions[device.description] = agreement.peerVersionText }
        }
        return versions
    }
}
