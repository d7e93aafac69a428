import Foundation
import Merge
@testable import Peer
import TestSupport

/// One seeded stream drives everything in a simulation run.
struct SimRandom {
    private var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }
    mutating func chance(_ probability: Double) -> Bool { Double(next() % 1_000_000) < probability * 1_000_000 }
    mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[below(items.count)] }
    mutating func range(_ low: Int64, _ high: Int64) -> Int64 { low + Int64(next() % UInt64(high - low + 1)) }

    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// A violation of one of the simulation's properties, with everything needed to replay it.
struct SimulationFailure: Error, CustomStringConvertible {
    let seed: UInt64
    let message: String
    var description: String { "simulation seed \(seed) failed: \(message)\n  replay with: NOTES_SIM_SEED=\(seed) swift test --filter SimulationTests" }
}

/// Thrown from the fault-injection hook: the replica "crashes" mid-transaction.
struct SimulatedCrash: Error {}

/// The deterministic fault simulation (docs/testing.md): 3–8 replicas on real SQLite files, a
/// network that drops, duplicates, reorders and delays frames, partitions that heal, crashes
/// (between writes and inside transactions), relaunches, and clocks skewed up to ±300 s.
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

        static let none = Faults(drop: 0, duplicate: 0, slow: 0, crashBetweenSteps: 0, crashInsideWrite: 0, partition: 0, heal: 1, relaunch: 1)
    }

    final class Node {
        let index: Int
        let path: String
        let skew: Int64
        var replica: Replica?
        var crashRequested = false

        init(index: Int, path: String, skew: Int64) {
            self.index = index
            self.path = path
            self.skew = skew
        }
    }

    struct Message {
        let deliverAt: UInt64
        let order: UInt64
        let bytes: [UInt8]
    }

    /// One connection: a session at each end and the frames in flight each way.
    final class Link {
        let a: Int, b: Int
        var sessionA: SyncSession, sessionB: SyncSession
        var toA: [Message] = [], toB: [Message] = []

        init(a: Int, b: Int, sessionA: SyncSession, sessionB: SyncSession) {
            self.a = a
            self.b = b
            self.sessionA = sessionA
            self.sessionB = sessionB
        }
    }

    let seed: UInt64
    var random: SimRandom
    var faults = Faults()
    let directory: String
    var now: UInt64 = 1_700_000_000_000
    var nodes: [Node] = []
    var links: [String: Link] = [:]
    var partitioned: Set<String> = []
    var messageOrder: UInt64 = 0
    var tokenCounter = 0
    /// Every token whose write returned successfully.
    var written: Set<String> = []
    /// Tokens a replica removed while it could see them (edited away, or its note purged).
    var removed: Set<String> = []
    var trace: [String] = []

    init(seed: UInt64, replicas: Int? = nil) throws {
        self.seed = seed
        random = SimRandom(seed: seed)
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        directory = base + "/notesd-sim-\(seed)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let count = replicas ?? 3 + random.below(6)
        for index in 0..<count {
            let node = Node(index: index, path: directory + "/replica\(index).db", skew: random.range(-300_000, 300_000))
            nodes.append(node)
            try launch(node)
        }
    }

    deinit {
        links.removeAll()
        for node in nodes { node.replica = nil }
        try? FileManager.default.removeItem(atPath: directory)
    }

    func localTime(_ node: Node) -> UInt64 { UInt64(Int64(now) + node.skew) }

    func failure(_ message: String) -> SimulationFailure {
        SimulationFailure(seed: seed, message: message + "\n  last steps:\n    " + trace.suffix(25).joined(separator: "\n    "))
    }

    // MARK: - Life cycle of replicas

    func launch(_ node: Node) throws {
        let replica = try Replica(path: node.path, randomBytes: { [unowned self] count in self.random.bytes(count) })
        replica.crashPoint = { [unowned self, unowned node] point in
            if self.random.chance(self.faults.crashInsideWrite) {
                node.crashRequested = true
                self.trace.append("replica \(node.index) crashes inside a write at \(point)")
                throw SimulatedCrash()
            }
        }
        node.replica = replica
        node.crashRequested = false
    }

    func crash(_ node: Node) {
        guard node.replica != nil else { return }
        trace.append("replica \(node.index) crashes")
        for (key, link) in links where link.a == node.index || link.b == node.index { links[key] = nil }
        node.replica = nil
        node.crashRequested = false
    }

    func handleCrashRequests() {
        for node in nodes where node.crashRequested { crash(node) }
    }

    // MARK: - The network

    static func key(_ a: Int, _ b: Int) -> String { "\(min(a, b))-\(max(a, b))" }

    /// The links in a fixed order. Dictionary order changes from one process to the next
    /// (Swift seeds its hashing per process), so iterating `links` directly would make a seed
    /// replay differently.
    var orderedLinks: [(key: String, value: Link)] { links.sorted { $0.key < $1.key } }

    func connectMissingLinks() {
        for a in nodes.indices {
            for b in nodes.indices where a < b {
                let key = Self.key(a, b)
                guard links[key] == nil, !partitioned.contains(key),
                      let storeA = nodes[a].replica, let storeB = nodes[b].replica else { continue }
                let (sessionA, outputA) = SyncSession.start(
                    configuration: .init(deviceName: "node\(a)"), store: storeA, now: localTime(nodes[a]))
                let (sessionB, outputB) = SyncSession.start(
                    configuration: .init(deviceName: "node\(b)"), store: storeB, now: localTime(nodes[b]))
                let link = Link(a: a, b: b, sessionA: sessionA, sessionB: sessionB)
                links[key] = link
                enqueue(outputA.frames, on: link, toward: b)
                enqueue(outputB.frames, on: link, toward: a)
            }
        }
    }

    func enqueue(_ frames: [Frame], on link: Link, toward destination: Int) {
        for frame in frames {
            if random.chance(faults.drop) { continue }
            let copies = random.chance(faults.duplicate) ? 2 : 1
            for _ in 0..<copies {
                var latency = UInt64(1 + random.below(40))
                if random.chance(faults.slow) { latency += UInt64(random.below(3_000)) }
                messageOrder += 1
                let message = Message(deliverAt: now + latency, order: messageOrder, bytes: FrameCodec.encode(frame))
                if destination == link.a { link.toA.append(message) } else { link.toB.append(message) }
            }
        }
    }

    /// Applies a session's output: frames onto the wire, events to the node.
    func handle(_ output: SyncSession.Output, link: Link, at node: Int) {
        let peer = node == link.a ? link.b : link.a
        enqueue(output.frames, on: link, toward: peer)
        for event in output.events {
            switch event {
            case .applied:
                notifyLocalChange(nodes[node], except: Self.key(link.a, link.b))
            case .closed(let reason):
                trace.append("link \(link.a)-\(link.b) closed at \(node): \(reason)")
                links[Self.key(link.a, link.b)] = nil
            case .established, .progress:
                break
            }
        }
    }

    /// A replica committed something: every other session it has pushes it at once.
    func notifyLocalChange(_ node: Node, except: String? = nil) {
        guard let store = node.replica else { return }
        for (key, link) in orderedLinks where key != except && (link.a == node.index || link.b == node.index) {
            if link.a == node.index {
                let output = link.sessionA.localChange(store: store, now: localTime(node))
                handle(output, link: link, at: link.a)
            } else {
                let output = link.sessionB.localChange(store: store, now: localTime(node))
                handle(output, link: link, at: link.b)
            }
        }
    }

    /// Delivers every frame due by `now`, oldest first, then fires due deadlines.
    func deliverDue() throws {
        for delivered in 0... {
            // Frames due now can only cause frames due later (latency ≥ 1), so this ends; the
            // bound turns a regression into a failure instead of a hang.
            guard delivered < 1_000_000 else { throw failure("over a million frames delivered at one instant") }
            var best: (link: Link, toA: Bool, index: Int, message: Message)?
            for (_, link) in orderedLinks {
                for (index, message) in link.toA.enumerated() where message.deliverAt <= now {
                    if best == nil || (message.deliverAt, message.order) < (best!.message.deliverAt, best!.message.order) {
                        best = (link, true, index, message)
                    }
                }
                for (index, message) in link.toB.enumerated() where message.deliverAt <= now {
                    if best == nil || (message.deliverAt, message.order) < (best!.message.deliverAt, best!.message.order) {
                        best = (link, false, index, message)
                    }
                }
            }
            guard let next = best else { break }
            if next.toA { next.link.toA.remove(at: next.index) } else { next.link.toB.remove(at: next.index) }
            guard links[Self.key(next.link.a, next.link.b)] === next.link else { continue }
            let frame: Frame
            do {
                frame = try FrameCodec.decode(next.message.bytes)
            } catch {
                throw failure("a frame we encoded did not decode: \(error)")
            }
            let nodeIndex = next.toA ? next.link.a : next.link.b
            guard let store = nodes[nodeIndex].replica else { continue }
            let output: SyncSession.Output
            if next.toA {
                output = next.link.sessionA.receive(frame, store: store, now: localTime(nodes[nodeIndex]))
            } else {
                output = next.link.sessionB.receive(frame, store: store, now: localTime(nodes[nodeIndex]))
            }
            handle(output, link: next.link, at: nodeIndex)
            handleCrashRequests()
        }
        for (_, link) in orderedLinks {
            for side in [link.a, link.b] {
                guard links[Self.key(link.a, link.b)] === link, let store = nodes[side].replica else { continue }
                let time = localTime(nodes[side])
                if side == link.a, let deadline = link.sessionA.nextDeadline, deadline <= time {
                    handle(link.sessionA.tick(store: store, now: time), link: link, at: side)
                } else if side == link.b, let deadline = link.sessionB.nextDeadline, deadline <= time {
                    handle(link.sessionB.tick(store: store, now: time), link: link, at: side)
                }
            }
        }
        handleCrashRequests()
    }

    // MARK: - Running

    /// Runs `steps` random steps under faults, then heals everything and checks the properties.
    func run(steps: Int) throws {
        for step in 0..<steps {
            now += UInt64(random.below(1_500))
            let roll = random.below(100)
            if roll < 55 {
                if let node = random.pick(nodes.filter { $0.replica != nil }) { try operate(on: node, step: step) }
            } else if roll < 60 {
                if random.chance(faults.partition * 20), let pair = randomPair() {
                    partitioned.insert(pair)
                    links[pair] = nil
                    trace.append("partition \(pair)")
                }
            } else if roll < 65 {
                if random.chance(faults.heal * 10), let pair = random.pick(Array(partitioned).sorted()) {
                    partitioned.remove(pair)
                    trace.append("heal \(pair)")
                }
            } else if roll < 68 {
                if random.chance(faults.crashBetweenSteps * 30), let node = random.pick(nodes.filter { $0.replica != nil }) {
                    crash(node)
                }
            }
            for node in nodes where node.replica == nil && random.chance(faults.relaunch) {
                trace.append("replica \(node.index) relaunches")
                try launch(node)
            }
            connectMissingLinks()
            try deliverDue()
        }
        try healAndSettle()
        try checkProperties()
    }

    func randomPair() -> String? {
        guard nodes.count >= 2 else { return nil }
        let a = random.below(nodes.count)
        var b = random.below(nodes.count - 1)
        if b >= a { b += 1 }
        return Self.key(a, b)
    }

    /// No more faults: everyone up, every link open, frames delivered until nothing moves.
    func healAndSettle() throws {
        faults = .none
        partitioned.removeAll()
        for node in nodes where node.replica == nil { try launch(node) }
        for node in nodes { node.replica?.crashPoint = nil }
        connectMissingLinks()
        for _ in 0..<200_000 {
            connectMissingLinks()
            let pending = links.values.flatMap { $0.toA + $0.toB }
            if pending.isEmpty {
                let vectors = Set(nodes.map { $0.replica!.vector })
                let settled = links.count == nodes.count * (nodes.count - 1) / 2
                    && links.values.allSatisfy { link in
                        link.sessionA.isCaughtUp(store: nodes[link.a].replica!) && link.sessionB.isCaughtUp(store: nodes[link.b].replica!)
                    }
                if vectors.count == 1 && settled { return }
                // Nothing in flight: let the next deadline fire (keepalive, ack timeout).
                let deadlines = links.values.flatMap { link in
                    [link.sessionA.nextDeadline.map { $0 &- UInt64(bitPattern: nodes[link.a].skew) }, link.sessionB.nextDeadline.map { $0 &- UInt64(bitPattern: nodes[link.b].skew) }]
                }.compactMap { $0 }
                now = max(now + 1, deadlines.min() ?? now + 1_000)
            } else {
                now = max(now, pending.map(\.deliverAt).min()!)
            }
            try deliverDue()
        }
        let vectors = nodes.map { "replica \($0.index): \($0.replica!.vector)" }
        let sessions = links.values.map { link in
            let a = nodes[link.a].replica!, b = nodes[link.b].replica!
            return "link \(link.a)-\(link.b): \(link.sessionA.status(store: a)) behind \(link.sessionA.entriesBehind(store: a)) toSend \(link.sessionA.entriesToSend(store: a)) | \(link.sessionB.status(store: b)) behind \(link.sessionB.entriesBehind(store: b)) toSend \(link.sessionB.entriesToSend(store: b))"
        }
        throw failure("the replicas did not settle after healing\n  " + (vectors + sessions).joined(separator: "\n  "))
    }

    // MARK: - Checks

    func checkProperties() throws {
        let replicas = nodes.map { $0.replica! }
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
        // No lost text.
        let library = replicas[0]
        var present = Set<String>()
        for trashed in [false, true] {
            for summary in try library.listNotes(NoteFilter(trashed: trashed)) {
                let note = try library.note(summary.id)!
                present.formUnion(Self.tokens(in: note))
            }
        }
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
