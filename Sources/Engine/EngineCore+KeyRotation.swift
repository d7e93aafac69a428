import Control
import Merge
import Peer

extension Feature {
    /// Household key rotation: `householdKeys` frames (grants and holdings) on sync and
    /// pairing connections (docs/security.md, "Key rotation").
    public static let keyRotation = Feature(rawValue: "key-rotation")
}

/// Household key rotation (docs/security.md, "Key rotation"): the engine's side of
/// `KeyRotation`. It reads the situation, performs the plan's steps (mint and seal a key,
/// install one sealed to this device, say what it holds, drop older keys) and shares what is
/// new with every connected device that takes part.
extension EngineCore {
    /// Looks at the household's keys again: after the roster or the key sets changed.
    func reviewHouseholdKeys() {
        guard removedFromHousehold == nil else {
            keyRotation = .notMember
            return
        }
        do {
            try installKeysSealedToThisDevice()
            // Each step changes the situation; three rounds reach a fixed point (install,
            // mint, extend or drop).
            for _ in 0..<4 {
                let plan = KeyRotation.plan(try keySituation())
                keyRotation = plan.status
                guard !plan.steps.isEmpty else { break }
                var new = (grants: [KeyGrant](), holdings: [KeyHolding]())
                for step in plan.steps { try perform(step, new: &new) }
                shareKeys(grants: new.grants, holdings: new.holdings, except: nil)
            }
        } catch {
            log.error("cannot review the household keys: \(error)")
        }
    }

    private func keySituation() throws -> KeyRotation.Situation {
        KeyRotation.Situation(
            me: identity.publicKey.bytes,
            members: roster().map { KeyRotation.Member(publicKey: $0.device.publicKey, name: $0.device.name, revoked: $0.revoked) },
            grants: try replica.keyGrants(), holdings: try replica.keyHoldings(), held: household.held.map(\.version))
    }

    /// Takes every key sealed to this device that is newer than the one it holds.
    private func installKeysSealedToThisDevice() throws {
        let current = household.current.version
        let mine = try replica.keyGrants().filter { $0.member == identity.publicKey.bytes && $0.key > current }
        for grant in mine.sorted(by: { $0.key < $1.key }) {
            guard let key = identity.openSealedKey(grant.sealed), key.fingerprint == grant.key.fingerprint else {
                log.warning("a household key sealed to this device (\(grant.key)) does not open; it is ignored")
                continue
            }
            try household.install(key, epoch: grant.key.epoch)
            log.info("household key: now holding \(grant.key)")
        }
        if household.current.version != current { announceKeys() }
    }

    private func perform(_ step: KeyRotation.Step, new: inout (grants: [KeyGrant], holdings: [KeyHolding])) throws {
        let me = identity.publicKey.bytes
        switch step {
        case .hold(let version):
            new.holdings += try replica.addKeys(grants: [], holdings: [KeyHolding(member: me, key: version)]).holdings
        case .mint(let epoch, let members):
            // From the environment's randomness (the system's, in the daemon), so a
            // simulated household replays exactly.
            guard let key = PreSharedKey(bytes: environment.randomBytes(PreSharedKey.byteCount)) else { return }
            let version = KeyVersion(epoch: epoch, fingerprint: key.fingerprint)
            // The key file first: a crash before the grants are stored leaves a held key
            // with no grants, which the next review seals again (`extend`).
            try household.install(key, epoch: epoch)
            announceKeys()
            let added = try replica.addKeys(grants: grants(of: key, version, to: members), holdings: [KeyHolding(member: me, key: version)])
            new.grants += added.grants
            new.holdings += added.holdings
            log.info("household key: rotated to \(version) for the \(members.count) remaining device(s); removed devices cannot connect once every member holds it")
        case .extend(let version, let members):
            guard household.current.version == version else { return }
            new.grants += try replica.addKeys(grants: grants(of: household.current.key, version, to: members), holdings: []).grants
        case .dropPrevious:
            try household.dropPrevious()
            announceKeys()
            log.info("household key: every member holds \(household.current.version); older keys are no longer accepted")
        }
    }

    private func grants(of key: PreSharedKey, _ version: KeyVersion, to members: [[UInt8]]) -> [KeyGrant] {
        members.compactMap { member in
            DevicePublicKey(bytes: member).map { KeyGrant(key: version, member: member, sealed: key.sealed(to: $0)) }
        }
    }

    /// Everything this device knows, as one frame (for a joiner, which has no log yet).
    func householdKeysFrame() throws -> Frame {
        .householdKeys(HouseholdKeys(
            household: Hex.decode(household.householdID) ?? [], grants: try replica.keyGrants(), holdings: try replica.keyHoldings()))
    }

    /// A session with a device that takes part started: it is to be told everything (both
    /// sets are small: one grant per member per rotation), once it has caught up.
    func shareAllKeys(on id: PeerNetwork.ConnectionID) {
        guard connections[id]?.agreement?.uses(.keyRotation) == true else { return }
        do {
            connections[id]?.keysToShare.add(grants: try replica.keyGrants(), holdings: try replica.keyHoldings())
            flushKeys(on: id)
        } catch {
            log.warning("cannot read the household keys to share them: \(error)")
        }
    }

    /// Queues what is new for every syncing device that takes part (but `except`, its source).
    private func shareKeys(grants: [KeyGrant], holdings: [KeyHolding], except: PeerNetwork.ConnectionID?) {
        guard !grants.isEmpty || !holdings.isEmpty else { return }
        for id in connections.keys.sorted() where id != except {
            guard let link = connections[id], link.isSyncing, link.agreement?.uses(.keyRotation) == true else { continue }
            connections[id]?.keysToShare.add(grants: grants, holdings: holdings)
            flushKeys(on: id)
        }
    }

    /// Sends the queued key sets once the peer holds every entry this device has. Keys are
    /// decided from the roster, and a key that arrived before the removal it answers would
    /// look wrong to its receiver, which would make another; so the log goes first.
    func flushKeys(on id: PeerNetwork.ConnectionID) {
        guard let link = connections[id], !link.keysToShare.isEmpty, let session = link.session,
              session.peerVector != nil, session.entriesToSend(store: replica) == 0,
              let householdBytes = Hex.decode(household.householdID) else { return }
        let queued = link.keysToShare
        connections[id]?.keysToShare = HouseholdKeySet()
        send([.householdKeys(HouseholdKeys(household: householdBytes, grants: queued.grants, holdings: queued.holdings))], on: id)
    }

    /// A household device sent its key sets: keep what is new, pass it on, look again.
    func receivedHouseholdKeys(_ keys: HouseholdKeys, on id: PeerNetwork.ConnectionID) {
        guard connections[id]?.agreement?.uses(.keyRotation) == true else {
            // Not agreed on this connection: nothing it says about keys is used.
            log.debug("ignoring household keys from \(connections[id]?.remote ?? "a peer") that did not advertise key rotation")
            return
        }
        do {
            let added = try replica.addKeys(grants: keys.grants, holdings: keys.holdings)
            guard !added.grants.isEmpty || !added.holdings.isEmpty else { return }
            shareKeys(grants: added.grants, holdings: added.holdings, except: id)
            reviewHouseholdKeys()
        } catch {
            log.warning("cannot store the household keys from \(connections[id]?.deviceName ?? "a peer"): \(error)")
        }
    }

    /// The key to dial a household device with: the newest one it says it holds that this
    /// device holds too; otherwise (it never said, or runs a release without rotation) one
    /// held key after another, one per attempt.
    func dialKey(for target: String) -> PreSharedKey {
        let held = household.held
        guard held.count > 1 else { return held[0].key }
        if let device = targets[target]?.device, let member = rosterDevice(device),
           let theirs = try? Set(replica.keyHoldings().filter { $0.member == member.device.publicKey }.map(\.key)),
           let shared = held.first(where: { theirs.contains($0.version) }) {
            return shared.key
        }
        return held[(targets[target]?.retries ?? 0) % held.count].key
    }

    // MARK: - Pairing

    /// Before `joinAccepted` on an invite connection that takes part: seal the current key
    /// to the new member and send the key sets, so it knows the key's epoch and the
    /// household's lasting id.
    func householdKeysForJoiner(_ publicKey: [UInt8], on id: PeerNetwork.ConnectionID) -> [Frame] {
        guard connections[id]?.agreement?.uses(.keyRotation) == true else { return [] }
        do {
            let current = household.current
            if current.version.epoch > 0 {
                try replica.addKeys(grants: grants(of: current.key, current.version, to: [publicKey]), holdings: [])
            }
            return [try householdKeysFrame()]
        } catch {
            // The joiner waits for this frame: send what needs no database (it then holds the
            // key at epoch 0 until a member seals the current one to it).
            log.warning("cannot share the household keys with the new member: \(error)")
            return [.householdKeys(HouseholdKeys(household: Hex.decode(household.householdID) ?? [], grants: [], holdings: []))]
        }
    }

    /// The inviter admitted this device: take its key (and, when it said, its epoch and the
    /// household id). Joining another household forgets the key sets of the one this device
    /// leaves; joining its own again (it was removed, then invited back) keeps them and the
    /// keys it holds (`HouseholdKey.rejoin`; docs/decisions.md, "Household key rotation").
    func joinHousehold(key: PreSharedKey, keys: HouseholdKeys?) throws {
        let epoch = keys?.grants.first { $0.key.fingerprint == key.fingerprint }?.key.epoch
            ?? keys?.holdings.first { $0.key.fingerprint == key.fingerprint }?.key.epoch ?? 0
        let householdID = keys.flatMap { $0.household.count == 16 ? Hex.encode($0.household) : nil } ?? HouseholdKey.firstKeyID(key)
        let rejoining = householdID == household.householdID
        if rejoining {
            try household.rejoin(key, epoch: epoch)
        } else {
            try replica.forgetKeys()
            try household.join(key, epoch: epoch, householdID: householdID)
        }
        if let keys {
            let added = try replica.addKeys(grants: keys.grants, holdings: keys.holdings)
            // Back in its own household, the device may still sync with members the inviter
            // has not met since it rotated: they learn of the new key from this device's
            // holding, and the grants sealed to them must come with it, or nothing brings
            // them the key (simulation seed 19883).
            if rejoining { shareKeys(grants: added.grants, holdings: added.holdings, except: nil) }
        }
        announceKeys()
    }

    // MARK: - Locked out

    /// Household devices no longer take this device: one dropped the handshake at message 1
    /// at least twice in a row, or every one refused it after the handshake (not on its
    /// roster, removed), and no household device syncs with it now. After a rotation only a
    /// removed device gets there (members are waited for), and it cannot always be told: it
    /// may join again with an invite.
    public var lockedOutOfHousehold: Bool {
        guard removedFromHousehold == nil, !connections.values.contains(where: \.isSyncing) else { return false }
        let members = roster().filter { $0.id != identity.deviceID && !$0.revoked }
        guard !members.isEmpty else { return false }
        let shorts = Set(members.map(\.id.short))
        let household = targets.values.filter { target in
            if let device = target.device { return members.contains { $0.id == device } }
            if let hinted = target.hintedShortID { return shorts.contains(hinted) }
            if case .discovered = target.origin { return false }
            return true
        }
        return household.contains { $0.handshakeRefusals >= 2 } || (!household.isEmpty && household.allSatisfy(\.blocked))
    }

    // MARK: - Status

    /// The household key as `status` shows it.
    func householdKeyState() -> HouseholdKeyState {
        let current = household.current.version
        let previous = household.held.count - 1
        func names(_ members: [KeyRotation.Member]) -> String {
            members.map(\.name).joined(separator: ", ")
        }
        let state: HouseholdKeyState.State, message: String
        switch keyRotation {
        case .settled(let key):
            state = .settled
            message = key.epoch == 0 ? "the household's first key; no device has been removed" : "rotated \(key.epoch) time(s); every member holds the current key"
        case .distributing(_, let waiting):
            state = .distributing
            message = "new key; the previous one is still accepted until \(names(waiting)) take(s) it, at their next connection"
        case .waitingForUpdate(_, let members):
            state = .waitingForUpdate
            let versions = peerVersions()
            let running = members.map { member in
                let version = DevicePublicKey(bytes: member.publicKey).flatMap { versions[$0.deviceID.description] }
                return version.map { "\(member.name) runs notesd \($0)" } ?? "\(member.name) has not connected since it was updated"
            }
            message = "\(running.joined(separator: ", ")): key rotation waits until \(members.count == 1 ? "it is" : "they are") updated "
                + "(a removed device may still hold the household key meanwhile; the roster still refuses it)"
        case .waitingForKey(let newest):
            state = .waitingForKey
            message = "a newer household key (epoch \(newest.epoch)) exists; it arrives when a device that holds it connects"
        case .notMember:
            state = .notMember
            message = "this device is not a member of a household"
        }
        if lockedOutOfHousehold {
            return HouseholdKeyState(
                epoch: current.epoch, state: .lockedOut,
                message: "household devices no longer accept this device's key: it was probably removed from the household and the key changed; \(Self.rejoinAdvice)",
                previousKeysAccepted: previous)
        }
        return HouseholdKeyState(epoch: current.epoch, state: state, message: message, previousKeysAccepted: previous)
    }

    /// The newest key epoch each member says it holds, by device id.
    func keyEpochs() -> [String: UInt64] {
        var epochs: [String: UInt64] = [:]
        for holding in (try? replica.keyHoldings()) ?? [] {
            guard let id = DevicePublicKey(bytes: holding.member)?.deviceID.description else { continue }
            epochs[id] = max(epochs[id] ?? 0, holding.key.epoch)
        }
        return epochs
    }
}

/// Grants and holdings waiting to be sent on one connection, each once, in arrival order.
struct HouseholdKeySet {
    private(set) var grants: [KeyGrant] = []
    private(set) var holdings: [KeyHolding] = []
    private var seenGrants: Set<KeyGrant> = []
    private var seenHoldings: Set<KeyHolding> = []

    var isEmpty: Bool { grants.isEmpty && holdings.isEmpty }

    mutating func add(grants newGrants: [KeyGrant], holdings newHoldings: [KeyHolding]) {
        for grant in newGrants where seenGrants.insert(grant).inserted { grants.append(grant) }
        for holding in newHoldings where seenHoldings.insert(holding).inserted { holdings.append(holding) }
    }
}
