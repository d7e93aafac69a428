import Control
import Foundation
import Merge

/// Two real release notesd daemons on loopback, paired through the real invite/join flow over
/// the real secure channel: `alpha` holds the library, `bravo` starts empty. bravo knows alpha
/// only by the address of a `ByteCountingProxy` (it joined through it, which made that address
/// its static peer), so every byte between them is counted.
///
/// The library is written into alpha's database with the Replica API while alpha is stopped
/// (`LibraryPopulation`), after pairing: 10,000 control calls would measure the control socket,
/// not sync. bravo's data directory is saved right after pairing, so each initial sync starts
/// from the same empty, paired bravo.
final class Household {
    let scratch: ScratchDirectory
    let alpha: BenchDaemon
    let bravo: BenchDaemon
    let proxy: ByteCountingProxy
    private(set) var library: [LibraryNote]
    let htmlBytes: Int
    /// alpha's first start, on an empty data directory (keys generated, schema created).
    let firstStartReady: Double
    private let pristineBravo: String
    private var content = NoteContent(seed: 88)
    private var random = SplitMix64(seed: 888)

    init(notes count: Int, binary: String) throws {
        let scratch = try ScratchDirectory("notes-bench-sync")
        let alpha = try BenchDaemon(name: "alpha", in: scratch, binary: binary)
        let bravo = try BenchDaemon(name: "bravo", in: scratch, binary: binary)
        let proxy = try ByteCountingProxy(targetPort: alpha.port)
        firstStartReady = try alpha.start()
        try bravo.start()
        let invite = try alpha.client().call(ControlMethods.Invite.self)
        _ = try bravo.client().call(ControlMethods.Join.self, JoinParams(code: invite.code, address: proxy.address), timeout: .seconds(70))
        try Self.waitCaughtUp(bravo)
        bravo.stop()
        alpha.stop()

        let generated = LibraryGenerator.notes(count, seed: UInt64(count))
        htmlBytes = generated.reduce(0) { $0 + $1.html.utf8.count + $1.title.utf8.count }
        library = try LibraryPopulation.fill(databasePath: alpha.databasePath, with: generated)
        pristineBravo = scratch.path + "/bravo-paired"
        try FileManager.default.copyItem(atPath: bravo.dataDirectory, toPath: pristineBravo)
        try alpha.start()
        (self.scratch, self.alpha, self.bravo, self.proxy) = (scratch, alpha, bravo, proxy)
    }

    /// Stops both daemons and the proxy.
    func shutDown() {
        bravo.stop()
        alpha.stop()
        proxy.stop()
    }

    // MARK: - Initial sync

    struct InitialSync {
        /// From spawning bravo to bravo holding every note.
        let fromSpawn: Double
        /// From bravo's READY=1 to bravo holding every note: the sync itself.
        let fromReady: Double
        /// From READY=1 until `notes.search` finds every note (the index steps after the
        /// catch-up, docs/architecture.md): `status` no longer reports notes to index.
        let searchableFromReady: Double
        let wireBytes: Int
        /// CPU time (user + system) bravo used from spawn to done, and alpha during the sync:
        /// steadier than wall time on a shared machine.
        let bravoCPU: Double
        let alphaCPU: Double
        /// What bravo wrote from spawn to done: the database, its WAL, and the socket.
        let bravoWrites: ProcessProbe.Writes
        /// CPU and writes from spawn to all searchable: the final checkpoint (after "holds
        /// all", docs/decisions.md) and the search index included.
        let settledCPU: Double
        let settledWrites: ProcessProbe.Writes
        /// bravo's database once settled (its WAL checkpointed and truncated).
        let databaseBytes: Int
    }

    /// bravo, empty and paired, starts and pulls the whole library from alpha.
    func initialSync() throws -> InitialSync {
        bravo.stop()
        try FileManager.default.removeItem(atPath: bravo.dataDirectory)
        try FileManager.default.copyItem(atPath: pristineBravo, toPath: bravo.dataDirectory)
        proxy.resetCounts()
        let alphaBefore = ProcessProbe.cpuMilliseconds(alpha.pid)
        let spawned = ContinuousClock.now
        let ready = try bravo.start()
        // Measured as the answer saying "holds all" arrives: the catch-up's cost, not the
        // checkpoint and the indexing that follow it (measured once settled, below).
        var bravoCPU = 0.0, alphaCPU = 0.0
        var bravoWrites = ProcessProbe.Writes()
        let done = try Self.waitCaughtUp(bravo, notes: library.count) {
            bravoCPU = ProcessProbe.cpuMilliseconds(bravo.pid)
            alphaCPU = ProcessProbe.cpuMilliseconds(alpha.pid) - alphaBefore
            bravoWrites = ProcessProbe.writes(bravo.pid)
        }
        let total = Measure.milliseconds(done - spawned)
        let counts = proxy.counts
        let searchable = try Self.waitIndexed(bravo)
        let databaseBytes = (try? FileManager.default.attributesOfItem(atPath: bravo.databasePath)[.size] as? Int) ?? 0
        return InitialSync(
            fromSpawn: total, fromReady: total - ready, searchableFromReady: Measure.milliseconds(searchable - spawned) - ready,
            wireBytes: counts.toTarget + counts.fromTarget, bravoCPU: bravoCPU, alphaCPU: alphaCPU, bravoWrites: bravoWrites,
            settledCPU: ProcessProbe.cpuMilliseconds(bravo.pid), settledWrites: ProcessProbe.writes(bravo.pid), databaseBytes: databaseBytes)
    }

    /// Asks `daemon` to sync and waits until it has a session and is caught up with it (and,
    /// when `notes` is given, holds that many). Returns when the answer saying so arrived.
    @discardableResult
    /// `atAnswer` runs as each answer saying "caught up" arrives, before anything else is asked.
    static func waitCaughtUp(
        _ daemon: BenchDaemon, notes: Int? = nil, timeout: Duration = .seconds(300), atAnswer: () -> Void = {}
    ) throws -> ContinuousClock.Instant {
        let client = try daemon.client()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let result = try client.call(ControlMethods.Sync.self, SyncParams(wait: true, timeoutMs: 240_000), timeout: .seconds(250))
            let answered = ContinuousClock.now
            if result.caughtUp, result.peers.contains(where: \.connected) {
                atAnswer()
                guard let notes else { return answered }
                if try client.call(ControlMethods.Status.self).noteCount >= notes { return answered }
            }
            // Not connected yet: the static peer's dial is still being set up.
            usleep(1_000)
        }
        throw BenchError("\(daemon.name) did not catch up within \(timeout)")
    }

    /// Polls `status` until no notes wait for the search index; returns when it said so.
    static func waitIndexed(_ daemon: BenchDaemon, timeout: Duration = .seconds(300)) throws -> ContinuousClock.Instant {
        let client = try daemon.client()
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try client.call(ControlMethods.Status.self).notesToIndex == nil { return ContinuousClock.now }
            usleep(2_000)
        }
        throw BenchError("\(daemon.name) did not index its notes for search within \(timeout)")
    }

    // MARK: - Live edits

    struct EditLatency {
        /// From sending `notes.update` to alpha until bravo's `noteChanged` event arrived.
        let visible: [Double]
        /// alpha's answer to `notes.update` (committed with synchronous=FULL, pushed).
        let committed: [Double]
    }

    /// Edits one paragraph of a random note on alpha, `samples` times (after 10 not counted),
    /// each time waiting until bravo reports the change.
    func editLatency(samples: Int) throws -> EditLatency {
        let watcher = try ArrivalWatcher(socketPath: bravo.socketPath)
        defer { watcher.stop() }
        let client = try alpha.client()
        var visible: [Double] = []
        var committed: [Double] = []
        let warmUp = 10
        for sample in 0..<(warmUp + samples) {
            let index = random.below(library.count)
            let (body, _) = LibraryGenerator.replacingParagraph(in: library[index].body, choosing: sample, with: content.paragraph())
            library[index].body = body
            let html = HTMLBlocks.join(body)
            watcher.expect(note: library[index].id)
            let sent = ContinuousClock.now
            _ = try client.call(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: library[index].id, html: html))
            let answered = ContinuousClock.now
            guard let arrival = try watcher.waitForArrival(timeout: .seconds(10)) else {
                throw BenchError("edit \(sample) of note \(library[index].id) did not reach bravo within 10 s")
            }
            guard sample >= warmUp else { continue }
            visible.append(Measure.milliseconds(arrival - sent))
            committed.append(Measure.milliseconds(answered - sent))
        }
        return EditLatency(visible: visible, committed: committed)
    }

    // MARK: - Resync after a partition

    struct Resync {
        let editedNotes: Int
        /// Both directions, from bravo's connection until it is caught up (and 300 ms more).
        let wireBytes: Int
        /// A reconnection with nothing to exchange: handshake, hellos, keepalive-free idle.
        let reconnectBytes: Int
        /// The encoded blocks that changed (one paragraph per edited note).
        let changedBlockBytes: Int
        /// From bravo's READY=1 to caught up.
        let fromReady: Double

        var ratio: Double { Double(wireBytes) / Double(changedBlockBytes) }
        var marginalRatio: Double { Double(wireBytes - reconnectBytes) / Double(changedBlockBytes) }
    }

    /// bravo goes away; alpha edits one paragraph in each of `editedNotes` notes; bravo comes
    /// back. Counts the bytes of that reunion, and of one with nothing to exchange.
    func resync(editedNotes: Int) throws -> Resync {
        bravo.stop()
        proxy.resetCounts()
        try bravo.start()
        try Self.waitCaughtUp(bravo)
        usleep(300_000)
        let reconnect = proxy.counts
        bravo.stop()

        let client = try alpha.client()
        var chosen = Set<Int>()
        while chosen.count < editedNotes { chosen.insert(random.below(library.count)) }
        var changedBytes = 0
        for (turn, index) in chosen.sorted().enumerated() {
            let (body, changed) = LibraryGenerator.replacingParagraph(in: library[index].body, choosing: turn, with: content.paragraph())
            library[index].body = body
            changedBytes += changed.encoded().count
            _ = try client.call(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: library[index].id, html: HTMLBlocks.join(body)))
        }

        proxy.resetCounts()
        try bravo.start()
        let readyAt = ContinuousClock.now
        let done = try Self.waitCaughtUp(bravo)
        usleep(300_000)
        let counts = proxy.counts

        let reader = try bravo.client()
        for index in chosen {
            let document = try reader.call(ControlMethods.NotesGet.self, NoteGetParams(id: library[index].id))
            guard document.body == HTMLBlocks.join(library[index].body) else {
                throw BenchError("after the resync, bravo's copy of note \(library[index].id) is not alpha's edited version")
            }
        }
        return Resync(
            editedNotes: editedNotes, wireBytes: counts.toTarget + counts.fromTarget,
            reconnectBytes: reconnect.toTarget + reconnect.fromTarget, changedBlockBytes: changedBytes,
            fromReady: Measure.milliseconds(done - readyAt))
    }
}
