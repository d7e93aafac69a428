import Control
import Foundation
import Merge
import Peer

/// A `join` in progress on the joining device.
struct JoinAttempt {
    typealias ID = UInt64

    let id: ID
    let code: InviteCode
    /// Addresses still to try; empty while waiting for discovery to find one.
    var candidates: [PeerAddress]
    var tried: Set<String> = []
    /// True when the user gave no address: discovered devices are tried as they appear.
    let usesDiscovery: Bool
    var connection: PeerNetwork.ConnectionID?
    let deadline: UInt64
    /// Without an address, how long to wait for discovery to find anyone.
    let discoveryDeadline: UInt64
    var lastFailure: RPCError?
    let complete: @Sendable (Result<JoinResult, RPCError>) -> Void
}

extension Engine {
    static let inviteLifetime: UInt64 = 10 * 60 * 1000
    static let joinTimeout: UInt64 = 60_000
    static let joinDiscoveryWindow: UInt64 = 10_000

    // MARK: - Inviting (the household side)

    func invite() throws -> InviteResult {
        guard removedFromHousehold == nil else { throw notInHousehold }
        let code = InviteCode.generate()
        let now = Self.now()
        try replica.pruneInvites(now: now)
        try replica.storeInvite(secretID: code.secretID, secret: code.secret, now: now, lifetime: Self.inviteLifetime)
        // Mirror the store, pruned: each inbound handshake tries every key in this list.
        inviteKeys = try Self.inviteKeys(replica)
        log.info("created an invite code (valid 10 minutes, one use)")
        return InviteResult(
            code: code.description, expiresAt: Timestamp(millisecondsSince1970: Int64(now + Self.inviteLifetime)),
            addresses: reachableAddresses())
    }

    /// Where this device can be reached: each interface address with the listen port,
    /// non-loopback IPv4 first, then IPv6, loopback last.
    func reachableAddresses() -> [String] {
        guard let bound = listenAddresses.first else { return [] }
        let wildcard = ["0.0.0.0", "::", "[::]"].contains(bound.host)
        guard wildcard else { return [bound.description] }
        return InterfaceAddresses.current().map { PeerAddress(host: $0, port: bound.port).description }
    }

    /// A frame on a connection that proved an invite's key: only a join request is expected.
    func admit(_ frame: Frame, on id: PeerNetwork.ConnectionID, inviteSecretID: String) {
        guard let link = links[id], let publicKey = link.publicKey else { return }
        guard case .joinRequest(let name) = frame else {
            refuse(id, Refusal(.other, "expected a join request on an invite connection"))
            return
        }
        let cleanName = name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty ? (link.device?.short ?? "device") : name
        do {
            try replica.admit(publicKey: publicKey, name: cleanName, inviteSecretID: inviteSecretID, now: Self.now())
        } catch {
            switch error {
            case .refused(let refusal):
                let answer = switch refusal {
                case .unknown: Refusal(.inviteUnknown, "this invite code is not known to the inviting device; ask for a new one with `notesctl invite`")
                case .expired: Refusal(.inviteExpired, "this invite code has expired (codes last 10 minutes); ask for a new one with `notesctl invite`")
                case .used: Refusal(.inviteUsed, "this invite code was already used; ask for a new one with `notesctl invite`")
                }
                refuse(id, answer)
            case .failed(let underlying):
                log.error("cannot admit \(cleanName): \(underlying)")
                refuse(id, Refusal(.other, "the inviting device could not save the new member: \(underlying)"))
            }
            return
        }
        log.info("pairing: admitted \(cleanName) (\(link.device?.short ?? "?")) to the household")
        let members = roster().filter { !$0.revoked }.map { RosterMember(publicKey: $0.device.publicKey, name: $0.device.name) }
        network.send([.joinAccepted(householdKey: household.key.bytes, roster: members)], on: id)
        network.close(id, reason: "pairing done")
        links[id]?.purpose = .sync
        publish(replica.lastChanges, origin: .local)
        rosterChanged()
        localChange()
    }

    // MARK: - Joining (the new device's side)

    func startJoin(_ params: JoinParams, complete: @escaping @Sendable (Result<JoinResult, RPCError>) -> Void) {
        let code: InviteCode
        do {
            code = try InviteCode(parsing: params.code)
        } catch {
            complete(.failure(RPCError(code: .inviteInvalid, message: "\(error); check the code `notesctl invite` printed on the inviting device")))
            return
        }
        let others = roster().filter { $0.id != identity.deviceID && !$0.revoked }
        guard others.isEmpty || removedFromHousehold != nil else {
            complete(.failure(RPCError(code: .invalidOperation, message: "this device already shares a household with \(others.count) other device(s); remove it there first with `notesctl devices remove`")))
            return
        }
        var candidates: [PeerAddress] = []
        if let text = params.address {
            guard let address = Self.address(text) else {
                complete(.failure(.invalidParams("\"\(text)\" is not a host:port address")))
                return
            }
            candidates = [address]
        } else {
            candidates = targets.values.filter { if case .discovered = $0.origin { true } else { false } }.map(\.address)
        }
        let now = Self.now()
        let id = (joinAttempts.keys.max() ?? 0) + 1
        joinAttempts[id] = JoinAttempt(
            id: id, code: code, candidates: candidates, usesDiscovery: params.address == nil, deadline: now + Self.joinTimeout,
            discoveryDeadline: now + Self.joinDiscoveryWindow, complete: complete)
        tryNextJoinCandidate(id)
        reschedule()
    }

    /// Dials the next untried address for a join; fails it when nothing is left to try.
    func tryNextJoinCandidate(_ id: JoinAttempt.ID) {
        guard var attempt = joinAttempts[id], attempt.connection == nil else { return }
        if attempt.usesDiscovery {
            let fresh = targets.values.filter { if case .discovered = $0.origin { true } else { false } }.map(\.address)
            for address in fresh where !attempt.tried.contains(address.description) && !attempt.candidates.contains(address) {
                attempt.candidates.append(address)
            }
        }
        guard let next = attempt.candidates.first else {
            joinAttempts[id] = attempt
            if !attempt.usesDiscovery || Self.now() >= attempt.discoveryDeadline { finishJoin(id, .failure(joinFailure(attempt))) }
            return
        }
        attempt.candidates.removeFirst()
        attempt.tried.insert(next.description)
        let connection = network.dial(next, psk: attempt.code.pskForPairing)
        attempt.connection = connection
        joinAttempts[id] = attempt
        links[connection] = Link(id: connection, direction: .outbound, remote: next.description, purpose: .joining(id))
        log.info("pairing: trying \(next) with the invite code")
    }

    private func joinFailure(_ attempt: JoinAttempt) -> RPCError {
        if let failure = attempt.lastFailure { return failure }
        if attempt.usesDiscovery && attempt.tried.isEmpty {
            return RPCError(
                code: .peerUnreachable, message: "no notesd device was found on the network; give the inviter's address with `notesctl join CODE --address HOST:PORT`",
                encoding: UnreachableData(address: nil))
        }
        return RPCError(code: .pairingFailed, message: "no device accepted this invite code; check the code, or ask for a new one with `notesctl invite`")
    }

    func joinEstablished(_ id: PeerNetwork.ConnectionID, attempt: JoinAttempt.ID) {
        network.send([.joinRequest(deviceName: settings.deviceName)], on: id)
    }

    func joinReceived(_ frame: Frame, on id: PeerNetwork.ConnectionID, attempt attemptID: JoinAttempt.ID) {
        guard let attempt = joinAttempts[attemptID] else { return }
        switch frame {
        case .joinAccepted(let key, let members):
            guard let householdKey = PreSharedKey(bytes: key) else { return }
            let inviter = links[id]?.remote
            do {
                try household.replace(with: householdKey)
                let now = Self.now()
                // Even if a later step fails, what was added is committed: read it again.
                defer { cachedRoster = nil }
                for member in members where member.publicKey != identity.publicKey.bytes {
                    try replica.addDevice(publicKey: member.publicKey, name: member.name, now: now)
                }
                if let inviter, !attempt.usesDiscovery {
                    try replica.addStaticPeer(inviter, now: now)
                    try addTarget(inviter, origin: .connected)
                }
            } catch {
                finishJoin(attemptID, .failure(RPCError(code: .databaseError, message: "joined, but could not save the household: \(error)", encoding: DatabaseErrorData(sqliteCode: (error as? SQLiteError)?.resultCode ?? 0))))
                return
            }
            log.info("pairing: joined household \(household.householdID.prefix(8)) through \(inviter ?? "?")")
            network.close(id, reason: "pairing done")
            links[id]?.purpose = .sync
            joinAttempts[attemptID]?.connection = nil
            acceptedByHousehold()
            let result = JoinResult(household: householdInfo(), devices: deviceInfos())
            finishJoin(attemptID, .success(result))
            rosterChanged()
        case .refuse(let refusal):
            let error: RPCError = switch refusal.code {
            case .inviteExpired: RPCError(code: .inviteExpired, message: refusal.message)
            case .inviteUsed: RPCError(code: .inviteUsed, message: refusal.message)
            default: RPCError(code: .pairingFailed, message: refusal.message)
            }
            joinAttempts[attemptID]?.lastFailure = error
            finishJoin(attemptID, .failure(error))
        default:
            break
        }
    }

    /// The join connection ended; if pairing did not finish, try the next candidate.
    func joinClosed(_ attemptID: JoinAttempt.ID, reason: String?) {
        guard var attempt = joinAttempts[attemptID] else { return }
        attempt.connection = nil
        if let reason, attempt.lastFailure == nil || attempt.lastFailure?.code == .peerUnreachable {
            attempt.lastFailure = reason.contains("cannot connect") || reason.contains("cannot reach")
                ? RPCError(code: .peerUnreachable, message: "\(reason); check the address and that notesd runs there", encoding: UnreachableData(address: attempt.tried.sorted().last))
                : RPCError(code: .pairingFailed, message: "the inviting device did not accept this code (\(reason)); check the code, or ask for a new one with `notesctl invite`")
        }
        joinAttempts[attemptID] = attempt
        tryNextJoinCandidate(attemptID)
    }

    func finishJoin(_ id: JoinAttempt.ID, _ result: Result<JoinResult, RPCError>) {
        guard let attempt = joinAttempts.removeValue(forKey: id) else { return }
        if let connection = attempt.connection, case .failure = result { network.close(connection, reason: "join abandoned") }
        attempt.complete(result)
    }

    func expireJoins(now: UInt64) {
        for (id, attempt) in joinAttempts {
            if now >= attempt.deadline {
                finishJoin(id, .failure(RPCError(code: .timeout, message: "pairing did not finish within 60 s; check that the inviting device is running and reachable")))
            } else if attempt.connection == nil {
                tryNextJoinCandidate(id)
            }
        }
    }
}

/// The addresses of this machine's network interfaces, best first for an invite.
enum InterfaceAddresses {
    static func current() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var v4: [String] = [], v6: [String] = [], loopback: [String] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            let family = Int32(address.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
            guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) != 0 {
                loopback.append(text)
            } else if family == AF_INET {
                v4.append(text)
            } else if !text.hasPrefix("fe80") {
                v6.append(text)
            }
        }
        return v4 + v6 + loopback
    }
}

extension Engine {
    // MARK: - Removal of this device

    static let rejoinAdvice = "its notes stay here; to sync again, run `notesctl invite` on a household device and `notesctl join CODE` here"

    /// A household device refused this one as removed: remember it, so `status` shows no
    /// household and `invite`/`sync` explain why, until a household device accepts it again.
    func removedBy(_ link: Link) {
        guard removedFromHousehold == nil else { return }
        let now = Self.now()
        do {
            try replica.setRemovedFromHousehold(true, now: now)
        } catch {
            log.error("cannot record that this device was removed from its household: \(error)")
        }
        removedFromHousehold = now
        log.warning("\(link.deviceName ?? link.device?.short ?? link.remote) says this device was removed from the household; \(Self.rejoinAdvice)")
    }

    /// A household device accepted this one (a join, or a hello): it is a member again.
    func acceptedByHousehold() {
        guard removedFromHousehold != nil else { return }
        do {
            try replica.setRemovedFromHousehold(false, now: Self.now())
        } catch {
            log.error("cannot record that this device is in a household again: \(error)")
        }
        removedFromHousehold = nil
        log.info("this device is a member of household \(household.householdID.prefix(8)) again")
    }

    var notInHousehold: RPCError {
        RPCError(code: .notInHousehold, message: "this device was removed from its household; \(Self.rejoinAdvice)")
    }
}
