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
    let deadline: UInt64
    /// Without an address, how long to wait for discovery to find anyone.
    let discoveryDeadline: UInt64
    var lastFailure: RPCError?
    /// Who is waiting for the answer.
    let token: EngineCore.RequestToken
}

/// Why a join connection ended before pairing finished.
enum JoinConnectionFailure {
    /// Nobody answered at that address (or it did not resolve).
    case unreachable(String)
    /// Something answered but ended the connection (a wrong code fails the handshake).
    case refused(String)
}

extension EngineCore {
    public static let inviteLifetime: UInt64 = 10 * 60 * 1000
    public static let joinTimeout: UInt64 = 60_000
    static let joinDiscoveryWindow: UInt64 = 10_000

    // MARK: - Inviting (the household side)

    public func invite() throws -> InviteResult {
        guard removedFromHousehold == nil else { throw notInHousehold }
        guard let code = InviteCode(secret: environment.randomBytes(InviteCode.secretByteCount)) else {
            throw RPCError.internalError("the random source gave an invite secret of the wrong length")
        }
        try replica.pruneInvites(now: now)
        try replica.storeInvite(secretID: code.secretID, secret: code.secret, now: now, lifetime: Self.inviteLifetime)
        // Mirror the store, pruned: each inbound handshake tries every key in this list.
        inviteKeys = try Self.inviteKeys(replica)
        log.info("created an invite code (valid \(Self.minutes(Self.inviteLifetime)), one use)")
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
        return environment.interfaceAddresses().map { PeerAddress(host: $0, port: bound.port).description }
    }

    /// A frame on a connection that proved an invite's key.
    func admit(_ frame: Frame, on id: PeerNetwork.ConnectionID, _ admission: Pairing.Admission) {
        guard let link = connections[id], let publicKey = link.publicKey else { return }
        let name: String
        switch admission.receive(frame, fallbackName: link.device?.short ?? "device") {
        case .refuse(let refusal):
            refuse(id, refusal)
            return
        case .admit(let given):
            name = given
        }
        do {
            try replica.admit(publicKey: publicKey, name: name, inviteSecretID: admission.inviteSecretID, now: now)
        } catch {
            switch error {
            case .refused(let reason):
                refuse(id, Pairing.Admission.refusal(reason, lifetime: Self.minutes(Self.inviteLifetime)))
            case .failed(let underlying):
                log.error("cannot admit \(name): \(underlying)")
                refuse(id, Refusal(.other, "the inviting device could not save the new member: \(underlying)"))
            }
            return
        }
        log.info("pairing: admitted \(name) (\(link.device?.short ?? "?")) to the household")
        let members = roster().filter { !$0.revoked }.map { RosterMember(publicKey: $0.device.publicKey, name: $0.device.name) }
        send(householdKeysForJoiner(publicKey, on: id) + [Pairing.Admission.accepted(householdKey: household.key, roster: members)], on: id)
        close(id, reason: "pairing done")
        publish(replica.lastChanges, origin: .local)
        rosterChanged()
        localChange()
    }

    // MARK: - Joining (the new device's side)

    /// `join`: pair with the inviting device; the answer comes as `Action.reply(token, .join)`.
    public func startJoin(_ params: JoinParams, token: RequestToken) {
        let complete: (Result<JoinResult, RPCError>) -> Void = { self.actions.append(.reply(token, .join($0))) }
        let code: InviteCode
        do {
            code = try InviteCode(parsing: params.code)
        } catch {
            complete(.failure(RPCError(code: .inviteInvalid, message: "\(error); check the code `notesctl invite` printed on the inviting device")))
            return
        }
        // Its own invite would admit the device to itself: nothing would be joined, and a
        // device locked out of its household would stay so.
        if (try? replica.invites())?.contains(where: { $0.secret == code.secret }) == true {
            complete(.failure(RPCError(code: .inviteInvalid, message: "this invite code was made on this device; make one with `notesctl invite` on another device of the household, or run `notesctl join CODE` on the device that is to join")))
            return
        }
        let others = roster().filter { $0.id != identity.deviceID && !$0.revoked }
        guard others.isEmpty || removedFromHousehold != nil || lockedOutOfHousehold else {
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
            candidates = discoveredAddresses()
        }
        let id = (joinAttempts.keys.max() ?? 0) + 1
        joinAttempts[id] = JoinAttempt(
            id: id, code: code, candidates: candidates, usesDiscovery: params.address == nil, deadline: now + Self.joinTimeout,
            discoveryDeadline: now + Self.joinDiscoveryWindow, token: token)
        tryNextJoinCandidate(id)
    }

    /// The addresses discovery has found, in the order of their target keys: a join tries
    /// them in an order that does not depend on a dictionary's layout, so a simulation seed
    /// replays the same in any process.
    func discoveredAddresses() -> [PeerAddress] {
        targets.keys.sorted().compactMap { key in
            guard let target = targets[key], case .discovered = target.origin else { return nil }
            return target.address
        }
    }

    /// Dials the next untried address for a join; fails it when nothing is left to try.
    func tryNextJoinCandidate(_ id: JoinAttempt.ID) {
        guard var attempt = joinAttempts[id], connection(forJoin: id) == nil else { return }
        if attempt.usesDiscovery {
            for address in discoveredAddresses() where !attempt.tried.contains(address.description) && !attempt.candidates.contains(address) {
                attempt.candidates.append(address)
            }
        }
        guard let next = attempt.candidates.first else {
            joinAttempts[id] = attempt
            if !attempt.usesDiscovery || now >= attempt.discoveryDeadline { finishJoin(id, .failure(joinFailure(attempt))) }
            return
        }
        attempt.candidates.removeFirst()
        attempt.tried.insert(next.description)
        let connection = environment.newConnectionID()
        actions.append(.dial(connection, next, psk: attempt.code.pskForPairing))
        joinAttempts[id] = attempt
        connections[connection] = Connection(id: connection, direction: .outbound, remote: next.description, state: .dialing(.join(id)))
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

    /// The connection of join attempt `id`, while one is open.
    func connection(forJoin id: JoinAttempt.ID) -> PeerNetwork.ConnectionID? {
        connections.values.first { $0.joinAttempt == id }?.id
    }

    func joinReceived(_ frame: Frame, on id: PeerNetwork.ConnectionID, _ join: Pairing.Join) {
        let attemptID = join.attempt
        guard let attempt = joinAttempts[attemptID] else { return }
        var join = join
        let step = join.receive(frame)
        connections[id]?.state = .joining(join)
        switch step {
        case .accepted(let householdKey, let members, let keys):
            let inviter = connections[id]?.remote
            do {
                try joinHousehold(key: householdKey, keys: keys)
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
            close(id, reason: "pairing done")
            acceptedByHousehold()
            let result = JoinResult(household: householdInfo(), devices: deviceInfos())
            finishJoin(attemptID, .success(result))
            rosterChanged()
        case .refused(let error):
            joinAttempts[attemptID]?.lastFailure = error
            finishJoin(attemptID, .failure(error))
        case .ignored:
            break
        }
    }

    /// The join connection ended; if pairing did not finish, try the next candidate.
    func joinClosed(_ attemptID: JoinAttempt.ID, failure: JoinConnectionFailure?) {
        guard var attempt = joinAttempts[attemptID] else { return }
        if let failure, attempt.lastFailure == nil || attempt.lastFailure?.code == .peerUnreachable {
            attempt.lastFailure = switch failure {
            case .unreachable(let reason):
                RPCError(code: .peerUnreachable, message: "\(reason); check the address and that notesd runs there", encoding: UnreachableData(address: attempt.tried.sorted().last))
            case .refused(let reason):
                RPCError(code: .pairingFailed, message: "the inviting device did not accept this code (\(reason)); check the code, or ask for a new one with `notesctl invite`")
            }
        }
        joinAttempts[attemptID] = attempt
        tryNextJoinCandidate(attemptID)
    }

    func finishJoin(_ id: JoinAttempt.ID, _ result: Result<JoinResult, RPCError>) {
        guard let attempt = joinAttempts.removeValue(forKey: id) else { return }
        if let connection = connection(forJoin: id), case .failure = result { close(connection, reason: "join abandoned") }
        actions.append(.reply(attempt.token, .join(result)))
    }

    func expireJoins() {
        for id in joinAttempts.keys.sorted() {
            guard let attempt = joinAttempts[id] else { continue }
            if now >= attempt.deadline {
                finishJoin(id, .failure(RPCError(code: .timeout, message: "pairing did not finish within \(Self.seconds(Self.joinTimeout)); check that the inviting device is running and reachable")))
            } else if connection(forJoin: id) == nil {
                tryNextJoinCandidate(id)
            }
        }
    }
}

extension EngineCore {
    // MARK: - Removal of this device

    static let rejoinAdvice = "its notes stay here; to sync again, run `notesctl invite` on a household device and `notesctl join CODE` here"

    /// A household device refused this one as removed: remember it, so `status` shows no
    /// household and `invite`/`sync` explain why, until a household device accepts it again.
    func removedBy(_ link: Connection) {
        guard removedFromHousehold == nil else { return }
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
            try replica.setRemovedFromHousehold(false, now: now)
        } catch {
            log.error("cannot record that this device is in a household again: \(error)")
        }
        removedFromHousehold = nil
        log.info("this device is a member of household \(household.householdID.prefix(8)) again")
        reviewHouseholdKeys()
    }

    var notInHousehold: RPCError {
        RPCError(code: .notInHousehold, message: "this device was removed from its household; \(Self.rejoinAdvice)")
    }
}
