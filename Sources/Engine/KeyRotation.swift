import Peer

/// Household key rotation (docs/security.md, "Key rotation") as a pure decision, like the
/// sync session: from the roster, the two key sets and the keys this device holds, what to do
/// next and what to tell a person. The engine performs the steps and asks again.
///
/// The rule, the same on every device so that they agree without talking about it: the
/// household's key is the newest one any device knows of. It is unsafe when a removed device
/// may hold it (the first key once anyone is removed; a rotated key sealed to, or held by, a
/// removed device). An unsafe key, or one that is newer than this device's unsafe key but not
/// sealed to it, is replaced by a new one sealed to every remaining member;
/// two devices doing so at once make two keys of the same epoch, and the order of
/// `KeyVersion` picks the same winner everywhere.
enum KeyRotation {
    struct Member: Equatable {
        let publicKey: [UInt8]
        let name: String
        let revoked: Bool
    }

    struct Situation {
        /// This device's public key.
        let me: [UInt8]
        let members: [Member]
        let grants: [KeyGrant]
        let holdings: [KeyHolding]
        /// The keys this device holds, its current one first.
        let held: [KeyVersion]
    }

    enum Step: Equatable {
        /// Make a new key at `epoch` and seal it to these members (this device included).
        case mint(epoch: UInt64, members: [[UInt8]])
        /// Seal the current key to members that have no grant for it (joined meanwhile).
        case extend(KeyVersion, members: [[UInt8]])
        /// Tell the household this device holds its current key.
        case hold(KeyVersion)
        /// Every member holds the current key: stop accepting older ones.
        case dropPrevious
    }

    enum Status: Equatable {
        /// Nothing pending: every member holds `key`, or no older key is accepted anyway.
        case settled(KeyVersion)
        /// This device holds the new key `key` and still accepts older ones until these
        /// members say they hold it (they get it when they next connect).
        case distributing(KeyVersion, waitingFor: [Member])
        /// A removed device may hold the key, but these members run a notesd that cannot take
        /// a new one: rotation waits until they are updated.
        case waitingForUpdate(KeyVersion, members: [Member])
        /// A newer key exists (`key`) and has not reached this device yet.
        case waitingForKey(KeyVersion)
        /// This device is not a member (it was removed); it rotates nothing.
        case notMember
    }

    struct Plan: Equatable {
        var steps: [Step] = []
        var status: Status
    }

    static func plan(_ situation: Situation) -> Plan {
        let live = situation.members.filter { !$0.revoked }
        let removed = Set(situation.members.filter(\.revoked).map(\.publicKey))
        guard let current = situation.held.first, live.contains(where: { $0.publicKey == situation.me }) else {
            return Plan(status: .notMember)
        }
        var plan = Plan(status: .settled(current))
        if !situation.holdings.contains(KeyHolding(member: situation.me, key: current)) {
            plan.steps.append(.hold(current))
        }
        let newest = ([current] + situation.grants.map(\.key) + situation.holdings.map(\.key)).max()!
        func mayBeHeldByARemovedDevice(_ key: KeyVersion) -> Bool {
            key.epoch == 0
                ? !removed.isEmpty
                : situation.grants.contains { $0.key == key && removed.contains($0.member) }
                    || situation.holdings.contains { $0.key == key && removed.contains($0.member) }
        }
        // A newer key that nothing here brings to this device (no grant is sealed to it: its
        // holders may be gone for good, as a wiped device is; simulation seed 19883) cannot
        // stand in for an unsafe key this device holds: waiting for it would keep the unsafe
        // key in use for as long as they stay away.
        let stranded = newest != current && mayBeHeldByARemovedDevice(current)
            && !situation.grants.contains { $0.key == newest && $0.member == situation.me }
        if mayBeHeldByARemovedDevice(newest) || stranded {
            // Devices that never said what they hold run a release without rotation.
            let taking = Set(situation.holdings.map(\.member)).union([situation.me])
            let behind = live.filter { !taking.contains($0.publicKey) }
            if behind.isEmpty {
                plan.steps.append(.mint(epoch: newest.epoch + 1, members: live.map(\.publicKey)))
            } else {
                plan.status = .waitingForUpdate(newest, members: behind)
            }
            return plan
        }
        guard newest == current else {
            plan.status = .waitingForKey(newest)
            return plan
        }
        if current.epoch > 0 {
            let granted = Set(situation.grants.filter { $0.key == current }.map(\.member))
            let missing = live.map(\.publicKey).filter { !granted.contains($0) }
            if !missing.isEmpty { plan.steps.append(.extend(current, members: missing)) }
        }
        let holders = Set(situation.holdings.filter { $0.key == current }.map(\.member)).union([situation.me])
        let lacking = live.filter { !holders.contains($0.publicKey) }
        if situation.held.count > 1 {
            if lacking.isEmpty {
                plan.steps.append(.dropPrevious)
            } else {
                plan.status = .distributing(current, waitingFor: lacking)
            }
        }
        return plan
    }
}
