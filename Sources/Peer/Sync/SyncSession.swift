import Merge

/// What a sync session needs from the replica. `Replica` is the real one; the session never
/// touches SQLite, sockets or clocks itself.
public protocol SyncStore: AnyObject {
    var replicaID: ReplicaID { get }
    var vector: VersionVector { get }
    func entries(missingFrom peer: VersionVector, maxCount: Int, maxBytes: Int) throws -> [EntryPayload]
    func apply(_ entries: [EntryPayload], now: UInt64) throws -> ApplyOutcome
    /// The encodings of the blocks held among `hashes`, in order, until `maxBytes` is reached.
    func availableBlocks(_ hashes: [BlockHash], maxBytes: Int, peerHolds: VersionVector) throws -> [[UInt8]]
    func storeBlocks(_ encodedBlocks: [[UInt8]]) throws
}

extension Replica: SyncStore {}

/// The sync protocol for one connection, as a sans-I/O state machine (docs/protocol.md).
///
/// Inputs are frames received, local changes and `now` (Unix ms); outputs are frames to send,
/// events for the shell, and the next deadline. The TCP shell and the simulation drive the
/// same code. Each direction is a stream of batches with a bounded window of unacknowledged
/// ones; the receiver applies a batch in one transaction and acks its new vector. Anything
/// lost, duplicated or out of order is healed by *epochs*: either side can restart the stream
/// from the receiver's vector under a new epoch, and batches of older epochs are ignored.
public struct SyncSession {
    public struct Configuration: Sendable {
        public var deviceName: String
        /// A batch is one receiving transaction (one fsync with `synchronous=FULL`): large enough
        /// that a catch-up of thousands of notes takes a handful of commits, small enough that the
        /// window (4 batches) keeps memory flat. Live changes travel in batches of one.
        public var maxBatchEntries = 2_000
        public var maxBatchBytes = 2 * 1024 * 1024
        /// A session's first batch holds at most this many entries, each next one twice as
        /// many up to `maxBatchEntries` (250, 500, 1,000, 2,000): the receiver, whose applying
        /// is a catch-up's bottleneck, starts once 250 entries are read and sent rather than
        /// 2,000, and the larger batches follow while it applies.
        public var firstBatchEntries = 250
        /// Unacknowledged batches allowed in flight.
        public var window = 4
        public var keepaliveInterval: UInt64 = 30_000
        public var silenceLimit: UInt64 = 90_000
        /// A batch unacknowledged this long is presumed lost: restart from the last ack.
        public var ackTimeout: UInt64 = 20_000
        public var helloTimeout: UInt64 = 30_000
        /// Restarts in a row that apply nothing before giving up on the peer.
        public var maxFruitlessRewinds = 8

        public init(deviceName: String) { self.deviceName = deviceName }

        /// The most entries batch `number` (the session's first is 1) may hold.
        func maxEntries(inBatch number: UInt64) -> Int {
            let doublings = Int(min(max(number, 1) - 1, 16))
            return max(1, min(maxBatchEntries, firstBatchEntries << doublings))
        }
    }

    public enum Status: String, Sendable {
        case connecting, syncing, idle, offline, blocked
    }

    public enum Event: Sendable {
        /// The peer's Hello arrived and was accepted.
        case established(Hello)
        /// Entries from the peer were applied (what changed, conflict copies made).
        case applied(ApplyOutcome)
        /// Status or progress changed (see `status`, `entriesBehind`, `entriesToSend`).
        case progress
        /// The session is over; the shell closes the connection and logs the reason.
        case closed(reason: String)
    }

    public struct Output: Sendable {
        public var frames: [Frame] = []
        public var events: [Event] = []
    }

    /// The sending half: what went to the peer and what it acknowledged.
    struct Sender {
        /// Everything up to this has been sent in the current epoch.
        var sentVector: VersionVector
        /// The peer's vector as last acknowledged or announced.
        var ackedVector: VersionVector
        var epoch: UInt32 = 0
        var nextBatch: UInt64 = 1
        var inflight: [(batch: UInt64, sentAt: UInt64)] = []
    }

    /// The receiving half.
    struct Receiver {
        /// Batches of older epochs are void.
        var epoch: UInt32 = 0
        /// The peer's vector as it last announced it.
        var peerVector: VersionVector
        var fruitlessRewinds = 0
    }

    struct Running {
        var peer: Hello
        var sender: Sender
        var receiver: Receiver
        /// Our vector as the peer last learned it (Hello, a batch, an ack or a `have`).
        var announced: VersionVector
        /// The window has room and the peer lacks more: the next batch is made at the next
        /// `tick`, due at this time (the batch before it went out first; see `pump`).
        var pumpDueAt: UInt64?
    }

    enum State {
        /// We sent our Hello at `since` and wait for the peer's.
        case awaitingHello(since: UInt64)
        /// Hellos exchanged; batches flow both ways.
        case running(Running)
        /// The session ended for `reason`; it accepts nothing more.
        case closed(reason: String)
    }

    public let configuration: Configuration
    private var state: State
    private var lastReceived: UInt64
    private var lastSent: UInt64
    private var pingNonce: UInt64 = 0

    /// Starts a session; the returned output holds our Hello.
    public static func start(configuration: Configuration, store: SyncStore, now: UInt64) -> (SyncSession, Output) {
        let session = SyncSession(configuration: configuration, state: .awaitingHello(since: now), lastReceived: now, lastSent: now)
        let hello = Hello(replica: store.replicaID, deviceName: configuration.deviceName, vector: store.vector)
        return (session, Output(frames: [.hello(hello)]))
    }

    private init(configuration: Configuration, state: State, lastReceived: UInt64, lastSent: UInt64) {
        self.configuration = configuration
        self.state = state
        self.lastReceived = lastReceived
        self.lastSent = lastSent
    }

    // MARK: - Inspection

    public var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    public var closeReason: String? {
        if case .closed(let reason) = state { return reason }
        return nil
    }

    public var peerHello: Hello? {
        if case .running(let running) = state { return running.peer }
        return nil
    }

    /// The peer's vector as far as this session knows: what it announced, raised by what it
    /// acknowledged. Kept by the daemon to tell, while the peer is away, what is waiting.
    public var peerVector: VersionVector? {
        guard case .running(let running) = state else { return nil }
        return running.receiver.peerVector.merged(with: running.sender.ackedVector)
    }

    /// How many entries the peer holds that we do not (as far as it told us).
    public func entriesBehind(store: SyncStore) -> UInt64 {
        guard case .running(let running) = state else { return 0 }
        return running.receiver.peerVector.entriesAhead(of: store.vector)
    }

    /// Entries still to exchange with the peer, both directions (saturating).
    public func entriesToExchange(store: SyncStore) -> UInt64 {
        let (sum, overflow) = entriesBehind(store: store).addingReportingOverflow(entriesToSend(store: store))
        return overflow ? .max : sum
    }

    /// How many of our entries the peer does not have: neither acknowledged nor held by it
    /// when it last told us its vector (its hello and every batch it sends carry it; the
    /// peer never acknowledges entries it sent us itself).
    public func entriesToSend(store: SyncStore) -> UInt64 {
        guard case .running(let running) = state else { return 0 }
        return store.vector.entriesAhead(of: running.sender.ackedVector.merged(with: running.receiver.peerVector))
    }

    public func status(store: SyncStore) -> Status {
        switch state {
        case .awaitingHello: return .connecting
        case .closed: return .offline
        case .running(let running):
            let busy = !running.sender.inflight.isEmpty || entriesBehind(store: store) > 0 || entriesToSend(store: store) > 0
            return busy ? .syncing : .idle
        }
    }

    /// True when neither side lacks anything the other has told it about.
    public func isCaughtUp(store: SyncStore) -> Bool { status(store: store) == .idle }

    /// When `tick` must next be called (keepalive, silence, ack and Hello timeouts, the next
    /// batch of a catch-up).
    public var nextDeadline: UInt64? {
        switch state {
        case .closed: return nil
        case .awaitingHello(let since): return since + configuration.helloTimeout
        case .running(let running):
            var deadline = min(lastSent + configuration.keepaliveInterval, lastReceived + configuration.silenceLimit)
            if let oldest = running.sender.inflight.first { deadline = min(deadline, oldest.sentAt + configuration.ackTimeout) }
            if let pumpDueAt = running.pumpDueAt { deadline = min(deadline, pumpDueAt) }
            return deadline
        }
    }

    // MARK: - Inputs

    /// A frame arrived from the peer.
    public mutating func receive(_ frame: Frame, store: SyncStore, now: UInt64) -> Output {
        var output = Output()
        lastReceived = now
        do {
            try handle(frame, store: store, now: now, output: &output)
        } catch {
            close("local database error: \(error)", output: &output)
        }
        return finish(output, now: now)
    }

    /// Something was committed locally (an edit, or entries from another peer): push it.
    public mutating func localChange(store: SyncStore, now: UInt64) -> Output {
        var output = Output()
        guard case .running(var running) = state else { return output }
        do {
            try pump(&running, store: store, now: now, output: &output)
        } catch {
            close("local database error: \(error)", output: &output)
            return finish(output, now: now)
        }
        if output.frames.isEmpty, running.announced != store.vector {
            running.announced = store.vector
            output.frames.append(.have(store.vector))
        }
        state = .running(running)
        output.events.append(.progress)
        return finish(output, now: now)
    }

    /// Time passed: keepalive, silence, ack and Hello timeouts, the next batch of a catch-up.
    public mutating func tick(store: SyncStore, now: UInt64) -> Output {
        var output = Output()
        switch state {
        case .closed:
            return output
        case .awaitingHello(let since):
            if now >= since + configuration.helloTimeout {
                close("the peer sent no Hello within \(configuration.helloTimeout / 1000) s", output: &output)
            }
        case .running(var running):
            if now >= lastReceived + configuration.silenceLimit {
                close("the peer was silent for \(configuration.silenceLimit / 1000) s", output: &output)
                break
            }
            if let due = running.pumpDueAt, now >= due {
                do {
                    try pump(&running, store: store, now: now, output: &output)
                } catch {
                    close("local database error: \(error)", output: &output)
                    break
                }
            }
            if let oldest = running.sender.inflight.first, now >= oldest.sentAt + configuration.ackTimeout {
                // A batch or its ack was lost: restart the stream from what the peer acknowledged.
                running.sender.epoch &+= 1
                running.sender.sentVector = running.sender.ackedVector
                running.sender.inflight = []
                do {
                    try pump(&running, store: store, now: now, output: &output)
                } catch {
                    close("local database error: \(error)", output: &output)
                    break
                }
            }
            state = .running(running)
            if output.frames.isEmpty, now >= lastSent + configuration.keepaliveInterval {
                pingNonce &+= 1
                output.frames.append(.ping(pingNonce, store.vector))
                if case .running(var running) = state {
                    running.announced = store.vector
                    state = .running(running)
                }
            }
        }
        return finish(output, now: now)
    }

    /// Ends the session from our side (shutdown, peer revoked, …).
    public mutating func shutdown(reason: String) -> Output {
        var output = Output()
        close(reason, output: &output)
        return output
    }

    // MARK: - Handling frames

    private mutating func handle(_ frame: Frame, store: SyncStore, now: UInt64, output: inout Output) throws {
        switch state {
        case .closed:
            return
        case .awaitingHello:
            switch frame {
            case .hello(let hello):
                try accept(hello, store: store, now: now, output: &output)
            case .refuse(let refusal):
                close("the peer refused the session: \(refusal.message)", output: &output)
            case .ping(let nonce, _):
                output.frames.append(.pong(nonce, store.vector))
            case .pong:
                break
            case .entries, .ack, .rewind, .needBlocks, .blocks, .have, .joinRequest, .joinAccepted, .householdKeys:
                close("protocol error: the peer sent data before its Hello", output: &output)
            }
        case .running(var running):
            switch frame {
            case .hello:
                close("protocol error: the peer sent a second Hello", output: &output)
                return
            case .refuse(let refusal):
                close("the peer ended the session: \(refusal.message)", output: &output)
                return
            case .joinRequest, .joinAccepted:
                close("protocol error: pairing messages on a sync session", output: &output)
                return
            case .householdKeys:
                // The engine reads these (EngineCore+KeyRotation); they do not touch the log.
                return
            case .entries(let batch):
                try receiveBatch(batch, running: &running, store: store, now: now, output: &output)
            case .ack(let batch, let vector):
                learn(vector, into: &running)
                running.sender.inflight.removeAll { $0.batch <= batch }
                try pump(&running, store: store, now: now, output: &output)
                output.events.append(.progress)
            case .rewind(let epoch, let vector):
                if epoch > running.sender.epoch {
                    running.sender.epoch = epoch
                    running.sender.sentVector = vector
                    running.sender.ackedVector = running.sender.ackedVector.merged(with: vector)
                    running.sender.inflight = []
                    try pump(&running, store: store, now: now, output: &output)
                }
            case .have(let vector), .pong(_, let vector):
                learn(vector, into: &running)
                output.events.append(.progress)
            case .needBlocks(let hashes):
                // Each block once, and at most a window of batches' worth of bytes per request:
                // a peer still missing some after applying what came asks again.
                var seen = Set<BlockHash>()
                let distinct = hashes.filter { seen.insert($0).inserted }
                let blocks = try store.availableBlocks(
                    distinct, maxBytes: configuration.maxBatchBytes * configuration.window, peerHolds: running.sender.ackedVector)
                for chunk in chunks(blocks) { output.frames.append(.blocks(chunk)) }
            case .blocks(let blocks):
                try store.storeBlocks(blocks)
            case .ping(let nonce, let vector):
                learn(vector, into: &running)
                output.frames.append(.pong(nonce, store.vector))
                running.announced = store.vector
                output.events.append(.progress)
            }
            if case .running = state { state = .running(running) }
        }
    }

    /// The peer told us what it holds: it has everything up to there, and can send it to us.
    private func learn(_ vector: VersionVector, into running: inout Running) {
        running.sender.ackedVector = running.sender.ackedVector.merged(with: vector)
        running.receiver.peerVector = running.receiver.peerVector.merged(with: vector)
    }

    private mutating func accept(_ hello: Hello, store: SyncStore, now: UInt64, output: inout Output) throws {
        guard hello.protocolVersion == Hello.currentVersion else {
            let reason = "protocol version \(hello.protocolVersion) is not supported (this device speaks \(Hello.currentVersion)); update notesd on both devices"
            output.frames.append(.refuse(Refusal(.protocolVersion, reason)))
            close(reason, output: &output)
            return
        }
        guard hello.replica != store.replicaID else {
            close("connected to itself (same replica id)", output: &output)
            return
        }
        var running = Running(
            peer: hello, sender: Sender(sentVector: hello.vector, ackedVector: hello.vector),
            receiver: Receiver(peerVector: hello.vector), announced: store.vector)
        output.events.append(.established(hello))
        try pump(&running, store: store, now: now, output: &output)
        state = .running(running)
        output.events.append(.progress)
    }

    private mutating func receiveBatch(
        _ batch: EntriesBatch, running: inout Running, store: SyncStore, now: UInt64, output: inout Output
    ) throws {
        guard batch.epoch >= running.receiver.epoch else {
            // Void: sent before a restart we asked for. If we still lack what it carries, our
            // request may have been lost: ask again.
            if !store.vector.dominates(batch.senderVector) {
                output.frames.append(.rewind(epoch: running.receiver.epoch, vector: store.vector))
            }
            return
        }
        running.receiver.epoch = batch.epoch
        running.receiver.peerVector = running.receiver.peerVector.merged(with: batch.senderVector)
        let outcome = try store.apply(batch.entries, now: now)
        if outcome.applied > 0 {
            running.receiver.fruitlessRewinds = 0
            output.events.append(.applied(outcome))
        }
        if let rejected = outcome.rejected {
            close("the peer sent a malformed entry (\(rejected))", output: &output)
            return
        }
        output.frames.append(.ack(batch: batch.batch, vector: store.vector))
        running.announced = store.vector
        if let need = outcome.need {
            running.receiver.fruitlessRewinds += outcome.applied == 0 ? 1 : 0
            guard running.receiver.fruitlessRewinds <= configuration.maxFruitlessRewinds else {
                close("the peer keeps sending entries this device cannot apply (\(need))", output: &output)
                return
            }
            if case .blocks(let hashes) = need { output.frames.append(.needBlocks(hashes)) }
            running.receiver.epoch &+= 1
            output.frames.append(.rewind(epoch: running.receiver.epoch, vector: store.vector))
        }
        // Entries we applied may be news to the peer's other half of the conversation: nothing to
        // do here; the shell tells every other session through `localChange`.
        output.events.append(.progress)
    }

    /// Sends batches while the window allows and there is something the peer lacks, one per
    /// call: with more to send, the next is due at once (`pumpDueAt`), so the shell sends
    /// this one while the next is read. Making the window's four batches in one turn held
    /// the first back ~100 ms of a 10,000-note catch-up, with the receiver idle.
    private func pump(_ running: inout Running, store: SyncStore, now: UInt64, output: inout Output) throws {
        running.pumpDueAt = nil
        // Every batch is acknowledged, yet the peer lacks something we sent: it refused part of
        // a batch and its request to restart was lost. Restart from what it has, in a new epoch.
        if running.sender.inflight.isEmpty && !running.sender.ackedVector.dominates(running.sender.sentVector) {
            running.sender.epoch &+= 1
            running.sender.sentVector = running.sender.ackedVector
        }
        while running.sender.inflight.count < configuration.window {
            let entries = try store.entries(
                missingFrom: running.sender.sentVector, maxCount: configuration.maxEntries(inBatch: running.sender.nextBatch),
                maxBytes: configuration.maxBatchBytes)
            guard !entries.isEmpty else { return }
            var slim: [EntryPayload] = []
            slim.reserveCapacity(entries.count)
            for entry in entries {
                // A large body travels ahead in block frames, so no frame outgrows the cap.
                if case .full(let data, let blocks) = entry.content, entry.approximateSize > configuration.maxBatchBytes {
                    for chunk in chunks(blocks) { output.frames.append(.blocks(chunk)) }
                    slim.append(EntryPayload(dot: entry.dot, revision: entry.revision, content: .full(data: data, blocks: [])))
                } else {
                    slim.append(entry)
                }
                running.sender.sentVector[entry.dot.replica] = max(running.sender.sentVector[entry.dot.replica], entry.dot.seq)
            }
            let number = running.sender.nextBatch
            running.sender.nextBatch += 1
            running.sender.inflight.append((number, now))
            running.announced = store.vector
            output.frames.append(.entries(EntriesBatch(batch: number, epoch: running.sender.epoch, senderVector: store.vector, entries: slim)))
            if running.sender.inflight.count < configuration.window, store.vector.entriesAhead(of: running.sender.sentVector) > 0 {
                running.pumpDueAt = now
                return
            }
        }
    }

    /// Splits blocks into groups of about one batch's worth of bytes.
    private func chunks(_ blocks: [some Collection<UInt8>]) -> [[[UInt8]]] {
        var result: [[[UInt8]]] = []
        var current: [[UInt8]] = []
        var size = 0
        for block in blocks {
            if !current.isEmpty, size + block.count > configuration.maxBatchBytes || current.count == FrameCodec.Limits.blocksPerFrame {
                result.append(current)
                current = []
                size = 0
            }
            current.append(Array(block))
            size += block.count
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    private mutating func close(_ reason: String, output: inout Output) {
        if case .closed = state { return }
        state = .closed(reason: reason)
        output.events.append(.closed(reason: reason))
    }

    private mutating func finish(_ output: Output, now: UInt64) -> Output {
        if !output.frames.isEmpty { lastSent = now }
        return output
    }
}
