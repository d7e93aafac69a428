import Control
import Engine
import EngineHarness
import Foundation
import Merge
@testable import Peer
import TestSupport

/// A violation of one of the simulation's properties, with everything needed to replay it.
struct SimulationFailure: Error, CustomStringConvertible {
    let seed: UInt64
    let message: String
    var description: String { "simulation seed \(seed) failed: \(message)\n  replay with: SWIFT_DETERMINISTIC_HASHING=1 NOTES_SIM_SEED=\(seed) swift test --filter SimulationTests" }
}

/// Thrown from the fault-injection hook: the replica "crashes" mid-transaction.
struct SimulatedCrash: Error {}

/// The deterministic fault simulation (docs/testing.md): 3–8 daemons' real `EngineCore`s on
/// real SQLite files, on the in-memory network of `EngineHarness.VirtualLAN`, which drops,
/// duplicates, reorders and delays frames; partitions that heal; crashes (between inputs and
/// inside transactions) and restarts from the same files; clocks skewed up to ±300 s;
/// discovery that comes and goes; pairing by invite codes, removal of devices and their
/// re-admission; backups restored in place; devices wiped and joined again. The engine's own code relays, dials, retries and pairs: the simulation only
/// plays the users and the world.
final class Simulation {
    struct Faults {
        var drop = 0.03
        var duplicate = 0.03
        var slow = 0.1
        var crashBetweenSteps = 0.01
        var crashInsideWrite = 0.002
        var partition = 0.02
        var heal = 0.05
        var relaunch = 0.2
        var removal = 0.3
        var flap = 0.3
        var restore = 0.5
        var wipe = 0.3

        static let none = Faults(
            drop: 0, duplicate: 0, slow: 0, crashBetweenSteps: 0, crashInsideWrite: 0, partition: 0, heal: 1, relaunch: 1, removal: 0, flap: 0,
            restore: 0, wipe: 0)
    }

    /// The crash hook's odds, read by every replica's hook (set to 0 when healing).
    final class CrashOdds {
        /// 0 while the nodes first start (the harness launches them before `faults` is set).
        var inside = 0.0
    }

    let seed: UInt64
    let lan: VirtualLAN
    /// The virtual time at which the run began.
    let startedAt: UInt64
    var faults = Faults() {
        didSet {
            lan.faults = VirtualLAN.Faults(drop: faults.drop, duplicate: faults.duplicate, slow: faults.slow)
            odds.inside = faults.crashInsideWrite
        }
    }
    let odds: CrashOdds
    var tokenCounter = 0
    /// Every token whose write returned successfully.
    var written: Set<String> = []
    /// Tokens a replica removed while it could see them (edited away, or its note purged),
    /// and tokens a restored backup took back that no other device had received.
    var removed: Set<String> = []
    /// The last backup taken of each node (by node index), for the restore fault.
    var backups: [Int: String] = [:]
    var backupCounter = 0
    /// Backups restored in place so far.
    var restores = 0
    /// Devices wiped and joined again so far.
    var wipes = 0

    var nodes: [VirtualLAN.Node] { lan.nodes }
    var random: SimRandom {
        get { lan.random }
        set { lan.random = newValue }
    }

    init(seed: UInt64, replicas: Int? = nil) throws {
        self.seed = seed
        var sizing = SimRandom(seed: seed ^ 0x5eed)
        let count = replicas ?? 3 + sizing.below(6)
        let odds = CrashOdds()
        self.odds = odds
        lan = try VirtualLAN(seed: seed, nodes: count, maxSkew: 300_000, discovery: true) { node, lan in
            let replica = try Replica(path: node.directory + "/notes.db", randomBytes: { [unowned lan] in lan.random.bytes($0) })
            replica.crashPoint = { [unowned lan, unowned node] point in
                if lan.random.chance(odds.inside) {
                    node.crashRequested = true
                    lan.trace.append("\(node.name) crashes inside a write at \(point)")
                    throw SimulatedCrash()
                }
            }
            return replica
        }
        startedAt = lan.now
        faults = Faults()
    }

    func failure(_ message: String) -> SimulationFailure {
        SimulationFailure(seed: seed, message: message + "\n  last steps:\n    " + lan.trace.suffix(25).joined(separator: "\n    "))
    }

    /// Starts a node; a crash inside its first write leaves it down until the next try.
    func launch(_ node: VirtualLAN.Node) throws {
        do {
            try lan.launch(node)
        } catch is SimulatedCrash {
            lan.crash(node)
        }
    }

    // MARK: - The household

    var anchor: VirtualLAN.Node { nodes[0] }

    /// Whether `node` is a member of node 0's household, as node 0 and the node itself see it.
    func isMember(_ node: VirtualLAN.Node) -> Bool {
        guard let core = node.core, let anchorCore = anchor.core else { return false }
        if node === anchor { return core.removedFromHousehold == nil }
        // The household's id, not its key: during a rotation a member may still hold the last one.
        guard core.household.householdID == anchorCore.household.householdID, core.removedFromHousehold == nil else { return false }
        // A join that crashed after storing the key but before the roster leaves a device
        // with the key and nobody on its roster: the user joins again (it is allowed then).
        guard core.deviceInfos().contains(where: { $0.id == anchor.identity.deviceID.description && !$0.revoked }) else { return false }
        return anchorCore.deviceInfos().contains { $0.id == node.identity.deviceID.description && !$0.revoked }
    }

    /// A member invites `joiner`, which joins at the inviter's address (or, sometimes, by
    /// discovery alone). With `wait`, runs until the join answers; returns whether it worked.
    @discardableResult
    func pair(_ joiner: VirtualLAN.Node, inviter: VirtualLAN.Node, wait: Bool, byDiscovery: Bool = false) throws -> Bool {
        guard inviter.isUp, joiner.isUp else { return false }
        let code: String
        do {
            code = try lan.request(inviter) { try $0.invite().code }
        } catch is SimulatedCrash {
            return false
        } catch {
            lan.trace.append("\(inviter.name) cannot invite: \(error)")
            return false
        }
        let address = byDiscovery ? nil : inviter.address.description
        lan.trace.append("\(joiner.name) joins through \(inviter.name)\(byDiscovery ? " found by discovery" : "")")
        let token = lan.park(joiner) { $0.startJoin(JoinParams(code: code, address: address), token: $1) }
        guard wait else { return true }
        guard case .join(let result) = try lan.reply(token, on: joiner, within: 120_000) else { return false }
        switch result {
        case .success: return true
        case .failure(let error):
            lan.trace.append("\(joiner.name) did not join: \(error.message)")
            if error.code == .invalidOperation { leaveOldHousehold(joiner) }
            return false
        }
    }

    /// What the join's refusal tells the person to do when the device still shares an old
    /// household (removed devices that only know each other, e.g. after a backup of one was
    /// restored): remove those devices here, then join again.
    func leaveOldHousehold(_ node: VirtualLAN.Node) {
        guard let core = node.core, let anchorCore = anchor.core,
              !anchorCore.deviceInfos().contains(where: { $0.id == node.identity.deviceID.description && !$0.revoked }) else { return }
        // Not the device it joins: that one refused it as removed, which is what allows the join.
        for device in core.deviceInfos() where !device.isSelf && !device.revoked && device.id != anchor.identity.deviceID.description {
            lan.trace.append("\(node.name) removes \(device.name) from its old household, as the refusal says")
            _ = try? lan.request(node) { try $0.devicesRemove(DeviceRemoveParams(device: device.id)) }
        }
    }

    // MARK: - Running

    /// Runs `steps` random steps under faults, then heals everything and checks the properties.
    func run(steps: Int) throws {
        do {
            try runSteps(steps)
        } catch let stuck as VirtualLAN.Stuck {
            throw failure("\(stuck)")
        }
    }

    private func runSteps(_ steps: Int) throws {
        // Everyone starts as a household of one and is invited into node 0's.
        for node in nodes.dropFirst() { try pair(node, inviter: anchor, wait: true) }
        for step in 0..<steps {
            try lan.advance(by: UInt64(random.below(1_500)))
            let roll = random.below(100)
            if roll < 55 {
                if let node = random.pick(nodes.filter(\.isUp)) { try operate(on: node, step: step) }
            } else if roll < 60 {
                if random.chance(faults.partition * 20), let pair = randomPair() {
                    lan.partitions.insert(pair)
                    lan.trace.append("partition \(pair)")
                }
            } else if roll < 65 {
                if random.chance(faults.heal * 10), let pair = random.pick(lan.partitions.sorted()) {
                    lan.partitions.remove(pair)
                    lan.trace.append("heal \(pair)")
                }
            } else if roll < 68 {
                if random.chance(faults.crashBetweenSteps * 30), let node = random.pick(nodes.filter(\.isUp)) { lan.crash(node) }
            } else if roll < 71 {
                // A device left out (never joined, or removed) is invited back.
                let members = nodes.filter(isMember)
                if let joiner = random.pick(nodes.filter { $0.isUp && !isMember($0) }), let inviter = random.pick(members) {
                    try pair(joiner, inviter: inviter, wait: false, byDiscovery: random.chance(0.3))
                }
            } else if roll < 73 {
                // A member removes another (never node 0, which anchors the household).
                if random.chance(faults.removal), let remover = random.pick(nodes.filter(isMember)),
                   let target = random.pick(nodes.dropFirst().filter { $0 !== remover && isMember($0) }) {
                    lan.trace.append("\(remover.name) removes \(target.name)")
                    _ = try? lan.request(remover) { try $0.devicesRemove(DeviceRemoveParams(device: target.identity.deviceID.description)) }
                }
            } else if roll < 77 {
                // A member backs up (as `notesctl backup` does), or a backup taken earlier is
                // restored with the device stopped (`notesd --restore-backup`).
                if random.chance(0.5), let node = random.pick(nodes.filter { $0.isUp && isMember($0) }) {
                    try backUp(node)
                } else if random.chance(faults.restore), let index = random.pick(backups.keys.sorted()) {
                    try restore(nodes[index], from: backups[index]!)
                }
            } else if roll < 78 {
                // A member's data is wiped and it joins again by a fresh invite code (never
                // node 0, which anchors the household).
                if random.chance(faults.wipe), let node = random.pick(nodes.dropFirst().filter(isMember)) {
                    try wipeAndRejoin(node)
                }
            } else if roll < 80 {
                // Discovery loses a service for a while, or finds it again.
                if random.chance(faults.flap), let node = random.pick(nodes.filter(\.isUp)), let observer = random.pick(nodes.filter { $0.isUp && $0 !== node }) {
                    if random.chance(0.5) {
                        lan.trace.append("\(observer.name) loses \(node.name) from discovery")
                        lan.disappear(node, from: observer)
                    } else {
                        lan.trace.append("\(observer.name) discovers \(node.name) again")
                        lan.appear(node, to: observer)
                    }
                }
            }
            for node in nodes where !node.isUp && random.chance(faults.relaunch) {
                lan.trace.append("\(node.name) relaunches")
                try launch(node)
            }
        }
        try healAndSettle()
        try checkProperties()
    }

    func randomPair() -> String? {
        guard nodes.count >= 2 else { return nil }
        let a = random.below(nodes.count)
        var b = random.below(nodes.count - 1)
        if b >= a { b += 1 }
        return "\(min(a, b))-\(max(a, b))"
    }

    /// Every node a member, connected to every other, caught up, holding the same vector and
    /// the same household key (docs/security.md, "Key rotation"), and accepting no older one
    /// unless a member on the roster is no running node (a wiped device's old identity left
    /// on it: the household waits for it to take the new key).
    func settled() -> Bool {
        guard nodes.allSatisfy(isMember) else { return false }
        let vectors = Set(nodes.map { $0.core!.replica.vector })
        guard vectors.count == 1 else { return false }
        let keys = Set(nodes.map { $0.core!.household.current.version })
        guard keys.count == 1 else { return false }
        let running = Set(nodes.map(\.identity.publicKey.bytes))
        let members = ((try? nodes[0].core!.replica.listDevices()) ?? []).filter { !$0.device.revoked }.map(\.device.publicKey)
        if members.allSatisfy(running.contains), !nodes.allSatisfy({ $0.core!.household.held.count == 1 }) { return false }
        for node in nodes {
            let peers = node.core!.peerStatuses()
            for other in nodes where other !== node {
                guard let status = peers.first(where: { $0.device == other.identity.deviceID.description }),
                      status.connected, status.status == .idle else { return false }
            }
        }
        return true
    }

    /// No more faults: everyone up, partitions healed, every left-out device invited back,
    /// then time runs until the household settles.
    func healAndSettle() throws {
        faults = .none
        lan.partitions.removeAll()
        lan.trace.append("heal everything")
        for node in nodes where !node.isUp { try launch(node) }
        // Discovery sees everyone again.
        for node in nodes { for other in nodes where other !== node { lan.appear(other, to: node) } }
        for _ in 0..<20 {
            // Checked every few seconds of virtual time: reading every peer's status after
            // every event would cost more than the run itself.
            for _ in 0..<60 {
                if settled() { return }
                try lan.advance(by: 5_000)
            }
            // A device locked out of the household (it says so in `status`: the key changed
            // while it was away from the roster) is invited again, as its status advises.
            for node in nodes where !isMember(node) || node.core?.lockedOutOfHousehold == true {
                // A removed device that has not yet heard so refuses to join another household.
                // The anchor itself locked out (it restored a backup from before it rotated
                // the key alone, seed 16952) is invited by another device of its household, as
                // a person would; not by a device that never joined it (seed 2725: the anchor's
                // only other member was a wiped device's old identity, and a fresh device at
                // the same address dropped its handshake), which the anchor invites instead.
                let inviter = node !== anchor ? anchor
                    : nodes.first { $0 !== anchor && $0.isUp && isMember($0) && $0.core?.lockedOutOfHousehold == false }
                if let inviter { _ = try pair(node, inviter: inviter, wait: true) }
            }
        }
        let lines = nodes.map { node in
            let peers = node.core!.peerStatuses().map { "\($0.name ?? $0.address ?? "?"): \($0.status)\($0.connected ? "" : " (away)")\($0.lastError.map { " – \($0)" } ?? "")" }
            let keys = node.core!.household.held.map(\.version.description).joined(separator: ", ")
            return "\(node.name): member \(isMember(node)), vector \(node.core!.replica.vector), keys \(keys); " + peers.joined(separator: "; ")
        }
        throw failure("the household did not settle after healing\n  " + lines.joined(separator: "\n  "))
    }

    // MARK: - Checks

    /// Each device's key state, roster and key sets, by short device id: what a failure about
    /// household keys is read from.
    func keyReport() -> [String] {
        func short(_ publicKey: [UInt8]) -> String { DevicePublicKey(bytes: publicKey)?.deviceID.short ?? "?" }
        return lan.nodes.map { node in
            guard let core = node.core else { return "\(node.name): down" }
            let roster = ((try? core.replica.listDevices()) ?? []).map { "\($0.device.name) \(short($0.device.publicKey))\($0.device.revoked ? " (removed)" : "")" }
            let grants = ((try? core.replica.keyGrants()) ?? []).map { "\($0.key) to \(short($0.member))" }
            let holdings = ((try? core.replica.keyHoldings()) ?? []).map { "\($0.key) at \(short($0.member))" }
            return "\(node.name): \(core.householdInfo().key?.message ?? "no household"); roster \(roster.joined(separator: ", ")); "
                + "grants \(grants.joined(separator: ", ")); holdings \(holdings.joined(separator: ", "))"
        }
    }

    /// The most dials a device may average per virtual minute over a run. The engine backs
    /// off from about a second per target: the busiest device of seeds 1–30 averaged 54 a
    /// minute. A device that redials at once after every failure is far above it: a removed
    /// device once did, and seeds 2, 4 and 6 each had one averaging 4,000–6,700 a minute.
    static let dialsPerMinuteLimit = 600.0

    /// The most dials any device averaged per virtual minute in this run.
    var busiestDialRate: Double {
        let minutes = max(1, Double(lan.now - startedAt) / 60_000)
        return Double(lan.nodes.map(\.dials).max() ?? 0) / minutes
    }

    func checkProperties() throws {
        // No dial storms: every device backs off.
        if busiestDialRate > Self.dialsPerMinuteLimit, let busiest = lan.nodes.max(by: { $0.dials < $1.dials }) {
            throw failure("\(busiest.name) dialled \(busiest.dials) times in \((lan.now - startedAt) / 1_000) s of virtual time (over \(Int(Self.dialsPerMinuteLimit)) a minute): something redials without backing off")
        }
        let replicas = lan.nodes.map { $0.core!.replica }
        let hashes = try replicas.map { try $0.stateHash() }
        guard Set(hashes).count == 1 else {
            var summary = try replicas.enumerated().map { index, replica in
                "replica \(index): \(try replica.listNotes().count) notes, vector \(replica.vector)"
            }
            summary += try differences(replicas)
            throw failure("no convergence: state hashes differ\n  " + summary.joined(separator: "\n  "))
        }
        for receiver in replicas {
            for sender in replicas where sender !== receiver {
                guard try sender.entries(missingFrom: receiver.vector, maxCount: 1, maxBytes: 1).isEmpty else {
                    throw failure("after settling, a replica still has entries another lacks")
                }
            }
            let problems = try receiver.integrityProblems()
            guard problems.isEmpty else { throw failure("integrity: \(problems.joined(separator: "; "))") }
        }
        // One household key, sealed to no device that was ever removed without coming back.
        let key = lan.nodes[0].core!.household.current.version
        let roster = try replicas[0].listDevices()
        let revoked = Set(roster.filter(\.device.revoked).map(\.device.publicKey))
        let sealedTo = try replicas[0].keyGrants().filter { $0.key == key }.map(\.member)
        guard key.epoch > 0 || revoked.isEmpty, !sealedTo.contains(where: revoked.contains) else {
            throw failure("the household key \(key) may be held by a removed device\n  " + keyReport().joined(separator: "\n  "))
        }
        // No lost text.
        let library = replicas[0]
        let present = try Self.tokens(in: library)
        let lost = written.subtracting(removed).subtracting(present)
        guard lost.isEmpty else {
            throw failure("lost text: \(lost.sorted().prefix(10).joined(separator: ", ")) (\(lost.count) tokens)")
        }
        // No duplicate conflict copies: one copy per losing version. A copy is judged by the
        // version it was derived with (its root revision: same title and the same blocks,
        // checklist state included), not by what it became: users edit copies like any note,
        // and two copies of different versions may be edited into the same text.
        var seen = Set<String>()
        for trashed in [false, true] {
            for copy in try library.listNotes(NoteFilter(trashed: trashed, conflictCopies: true)) {
                guard let derived = try library.history(of: copy.id).last(where: { $0.parents.isEmpty })?.note else { continue }
                let key = "\(copy.conflictOf!)|\(derived.title)|\(derived.body.map { Hex.encode($0.encoded()) }.joined(separator: "|"))"
                guard seen.insert(key).inserted else { throw failure("duplicate conflict copy of \(copy.conflictOf!): \(derived.title)") }
            }
        }
    }

    /// What differs between the first replica and the others, record by record.
    func differences(_ replicas: [Replica]) throws -> [String] {
        var lines: [String] = []
        let first = replicas[0]
        for (index, other) in replicas.enumerated().dropFirst() {
            for kind in [RecordKind.note, .folder, .device] {
                let ids = Set(try first.recordIDs(kind: kind)).union(try other.recordIDs(kind: kind))
                for id in ids.sorted() {
                    let mine: String, theirs: String
                    switch kind {
                    case .note: (mine, theirs) = ("\(String(describing: try first.note(id)))", "\(String(describing: try other.note(id)))")
                    case .folder: (mine, theirs) = ("\(String(describing: try first.folder(id)))", "\(String(describing: try other.folder(id)))")
                    case .device: (mine, theirs) = ("\(String(describing: try first.device(id)))", "\(String(describing: try other.device(id)))")
                    }
                    if mine != theirs {
                        lines.append("\(kind) \(id) differs on replica \(index): heads \(try first.heads(of: id).map(\.short)) vs \(try other.heads(of: id).map(\.short))\n    0: \(mine.prefix(400))\n    \(index): \(theirs.prefix(400))")
                    }
                }
            }
        }
        return lines
    }

    static func tokens(in note: Note) -> Set<String> {
        let text = ([note.title] + note.body.map(\.text)).joined(separator: " ")
        return Set(text.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init).filter { $0.hasPrefix("tk") })
    }
}
