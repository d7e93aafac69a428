import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Two sessions wired in memory ("the dance"): every frame goes through the codec, and the
/// test decides which frames arrive.
struct Dance {
    let a: Replica, b: Replica
    var sessionA: SyncSession, sessionB: SyncSession
    var toA: [Frame] = [], toB: [Frame] = []
    var eventsA: [SyncSession.Event] = [], eventsB: [SyncSession.Event] = []
    var now: UInt64 = 10_000

    init(_ a: Replica, _ b: Replica, maxBatchBytes: Int? = nil, batchEntries: (first: Int, max: Int)? = nil) {
        self.a = a
        self.b = b
        var configurationA = SyncSession.Configuration(deviceName: "A"), configurationB = SyncSession.Configuration(deviceName: "B")
        if let maxBatchBytes { (configurationA.maxBatchBytes, configurationB.maxBatchBytes) = (maxBatchBytes, maxBatchBytes) }
        if let batchEntries {
            (configurationA.firstBatchEntries, configurationA.maxBatchEntries) = batchEntries
            (configurationB.firstBatchEntries, configurationB.maxBatchEntries) = batchEntries
        }
        let (sessionA, helloA) = SyncSession.start(configuration: configurationA, store: a, now: 10_000)
        let (sessionB, helloB) = SyncSession.start(configuration: configurationB, store: b, now: 10_000)
        self.sessionA = sessionA
        self.sessionB = sessionB
        toB = helloA.frames
        toA = helloB.frames
    }

    static func roundTrip(_ frame: Frame) throws -> Frame { try FrameCodec.decode(FrameCodec.encode(frame)) }

    /// Delivers one frame to B (or drops it when `deliver` is false); returns it.
    @discardableResult
    mutating func stepToB(deliver: Bool = true) throws -> Frame {
        let frame = toB.removeFirst()
        if deliver {
            let output = sessionB.receive(try Self.roundTrip(frame), store: b, now: now)
            toA += output.frames
            eventsB += output.events
        }
        return frame
    }

    @discardableResult
    mutating func stepToA(deliver: Bool = true) throws -> Frame {
        let frame = toA.removeFirst()
        if deliver {
            let output = sessionA.receive(try Self.roundTrip(frame), store: a, now: now)
            toB += output.frames
            eventsA += output.events
        }
        return frame
    }

    /// Delivers everything in both directions until nothing is in flight.
    mutating func settle() throws {
        for _ in 0..<10_000 {
            if toA.isEmpty && toB.isEmpty { return }
            if !toB.isEmpty { try stepToB() }
            if !toA.isEmpty { try stepToA() }
        }
        Issue.record("the dance did not settle")
    }

    mutating func localChangeOnA() {
        let output = sessionA.localChange(store: a, now: now)
        toB += output.frames
    }

    mutating func localChangeOnB() {
        let output = sessionB.localChange(store: b, now: now)
        toA += output.frames
    }

    mutating func tick(by milliseconds: UInt64) {
        now += milliseconds
        let outputA = sessionA.tick(store: a, now: now)
        toB += outputA.frames
        eventsA += outputA.events
        let outputB = sessionB.tick(store: b, now: now)
        toA += outputB.frames
        eventsB += outputB.events
    }
}

@Suite struct SyncSessionTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 21))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 22))
    }

    @Test func helloThenCatchUpBothWays() throws {
        let fromA = try a.createNote(title: "from A", body: paragraphs(["a1"]), now: 1_000)
        let fromB = try b.createNote(title: "from B", body: paragraphs(["b1"]), now: 1_000)
        var dance = Dance(a, b)
        try dance.settle()
        #expect(try b.note(fromA)?.title == "from A")
        #expect(try a.note(fromB)?.title == "from B")
        #expect(dance.sessionA.isCaughtUp(store: a) && dance.sessionB.isCaughtUp(store: b))
        #expect(dance.sessionA.peerHello?.deviceName == "B")
    }

    @Test func liveChangesArePushedAtOnce() throws {
        var dance = Dance(a, b)
        try dance.settle()
        let id = try a.createNote(title: "live", body: [], now: 2_000)
        dance.localChangeOnA()
        #expect(dance.toB.count == 1)
        try dance.settle()
        #expect(try b.note(id)?.title == "live")
    }

    /// What the peer itself sent counts as what it has: after a live change from B, A has
    /// nothing left to exchange (it used to count B's own entry as still to send, so a
    /// connected, idle device showed "syncing 1 entry" until B next acknowledged something).
    @Test func aLiveChangeFromThePeerLeavesNothingToExchange() throws {
        var dance = Dance(a, b)
        try dance.settle()
        _ = try b.createNote(title: "live from B", body: [], now: 2_000)
        dance.localChangeOnB()
        try dance.settle()
        #expect(dance.sessionA.entriesToExchange(store: a) == 0)
        #expect(dance.sessionB.entriesToExchange(store: b) == 0)
        #expect(dance.sessionA.isCaughtUp(store: a) && dance.sessionB.isCaughtUp(store: b))
    }

    /// The scripted two-device story of the issue: A creates offline; B pulls it; both edit
    /// offline; A's batch is applied but the ack is lost; A resends; B sends its competing
    /// edit; both converge.
    @Test func lostAckIsHealedByResendAndBothConverge() throws {
        let id = try a.createNote(title: "Shopping", body: paragraphs(["milk", "bread"]), now: 1_000)
        var first = Dance(a, b)
        try first.settle()
        #expect(try b.note(id) != nil)

        // Both edit while apart.
        try a.editNote(id, NoteEdit(body: paragraphs(["milk", "bread", "eggs from A"])), now: 5_000)
        try b.editNote(id, NoteEdit(body: paragraphs(["oat milk from B", "milk", "bread"])), now: 5_100)

        var dance = Dance(a, b)
        try dance.stepToB()  // A's Hello reaches B; B answers with its batch
        try dance.stepToA()  // B's Hello reaches A; A sends its batch
        // A's batch reaches B and is applied, but B's ack back to A is lost.
        while !dance.toB.isEmpty {
            if case .entries = try dance.stepToB() { break }
        }
        #expect(try b.note(id)?.body.map(\.text).joined().contains("eggs from A") == true)
        dance.toA.removeAll { if case .ack = $0 { return true } else { return false } }
        try dance.settle()
        #expect(!dance.sessionA.isCaughtUp(store: a))  // A still waits for its ack
        dance.tick(by: dance.sessionA.configuration.ackTimeout)  // A resends after the ack timeout
        try dance.settle()
        #expect(dance.sessionA.isCaughtUp(store: a) && dance.sessionB.isCaughtUp(store: b))
        #expect(try a.stateHash() == b.stateHash())
        #expect(try a.integrityProblems() == [] && b.integrityProblems() == [])
    }

    @Test func aProtocolVersionMismatchIsRefusedClearlyOnBothSides() throws {
        var session = SyncSession.start(configuration: .init(deviceName: "A"), store: a, now: 0).0
        let future = Hello(protocolVersion: 99, replica: b.replicaID, deviceName: "B", vector: VersionVector())
        let output = session.receive(.hello(future), store: a, now: 1)
        guard case .refuse(let refusal) = output.frames.first else {
            Issue.record("expected a refusal, got \(output.frames)")
            return
        }
        #expect(refusal.code == .protocolVersion)
        #expect(refusal.message.contains("protocol version 99 is not supported"))
        #expect(session.isClosed)
        var other = SyncSession.start(configuration: .init(deviceName: "B"), store: b, now: 0).0
        _ = other.receive(.refuse(refusal), store: b, now: 1)
        #expect(other.closeReason?.contains("refused") == true)
    }

    @Test func silenceClosesTheSessionAndIdleSendsKeepalives() throws {
        var dance = Dance(a, b)
        try dance.settle()
        dance.tick(by: 30_000)
        #expect(dance.toB.contains { if case .ping = $0 { return true } else { return false } })
        dance.toA.removeAll()
        dance.toB.removeAll()
        // Nothing more arrives from B for 90 s.
        dance.now += 90_000
        let output = dance.sessionA.tick(store: a, now: dance.now)
        #expect(dance.sessionA.isClosed)
        #expect(output.events.contains { if case .closed = $0 { return true } else { return false } })
    }

    @Test func malformedEntriesCloseTheSession() throws {
        _ = try a.createNote(title: "x", body: paragraphs(["y"]), now: 1_000)
        var dance = Dance(a, b)
        try dance.stepToB()
        try dance.stepToA()
        guard case .entries(var batch) = dance.toB.first(where: { if case .entries = $0 { true } else { false } }) else {
            Issue.record("expected a batch")
            return
        }
        guard case .full(var data, let blocks) = batch.entries[0].content else {
            Issue.record("expected a new note's entry to travel whole")
            return
        }
        data[data.count - 1] ^= 1
        batch.entries[0] = EntryPayload(dot: batch.entries[0].dot, revision: batch.entries[0].revision, content: .full(data: data, blocks: blocks))
        _ = dance.sessionB.receive(.entries(batch), store: b, now: 20_000)
        #expect(dance.sessionB.closeReason?.contains("malformed entry") == true)
    }

    @Test func aRequestNamingOneBlockManyTimesIsAnsweredWithItOnce() throws {
        _ = try a.createNote(title: "x", body: paragraphs(["the only block"]), now: 1_000)
        var dance = Dance(a, b)
        try dance.settle()
        let hash = RevisionCodec.blockHash(paragraphs(["the only block"])[0].encoded())
        let output = dance.sessionA.receive(.needBlocks(Array(repeating: hash, count: 10_000)), store: a, now: 2_000)
        let sent = output.frames.flatMap { frame -> [[UInt8]] in
            if case .blocks(let blocks) = frame { return blocks }
            return []
        }
        #expect(sent.count == 1, "copies of one block: \(sent.count)")
    }

    @Test func aLargeNoteTravelsInBoundedFrames() throws {
        let big = (0..<2_000).map { "paragraph \($0) " + String(repeating: "words ", count: 40) }
        let id = try a.createNote(title: "big", body: paragraphs(big), now: 1_000)
        // A small batch bound, so this note is far larger than a batch.
        var dance = Dance(a, b, maxBatchBytes: 64 * 1024)
        var largest = 0
        for _ in 0..<1_000 {
            if dance.toA.isEmpty && dance.toB.isEmpty { break }
            if let frame = dance.toB.first { largest = max(largest, FrameCodec.encode(frame).count) }
            if !dance.toB.isEmpty { try dance.stepToB() }
            if !dance.toA.isEmpty { try dance.stepToA() }
        }
        #expect(try b.note(id)?.body.count == 2_000)
        #expect(largest <= 2 * dance.sessionA.configuration.maxBatchBytes)
    }

    /// The sender makes one batch per turn and the next is due at once, so the shell sends
    /// the first before the rest are read (docs/decisions.md, "The catch-up's first batch
    /// sooner"); the window still bounds what is in flight.
    @Test func aCatchUpSendsOneBatchPerTurnUpToTheWindow() throws {
        let text = String(repeating: "words ", count: 200)
        let ids = try (0..<40).map { try a.createNote(title: "note \($0)", body: paragraphs([text]), now: 1_000 + UInt64($0)) }
        var dance = Dance(a, b, maxBatchBytes: 4 * 1024)
        try dance.stepToA()  // B's hello: A starts streaming
        let batches = { (frames: [Frame]) in frames.filter { if case .entries = $0 { true } else { false } }.count }
        #expect(batches(dance.toB) == 1)
        #expect(try #require(dance.sessionA.nextDeadline) <= dance.now, "the next batch is due at once")
        let window = dance.sessionA.configuration.window
        for inFlight in 2...window {
            dance.tick(by: 0)
            #expect(batches(dance.toB) == inFlight)
        }
        #expect(try #require(dance.sessionA.nextDeadline) > dance.now, "a full window waits for acks")
        dance.tick(by: 0)
        #expect(batches(dance.toB) == window)
        for _ in 0..<1_000 {
            if dance.toA.isEmpty && dance.toB.isEmpty && !(dance.sessionA.nextDeadline.map { $0 <= dance.now } ?? false) { break }
            if !dance.toB.isEmpty { try dance.stepToB() }
            if !dance.toA.isEmpty { try dance.stepToA() }
            dance.tick(by: 0)
        }
        #expect(try ids.allSatisfy { try b.note($0) != nil })
        #expect(dance.sessionA.isCaughtUp(store: a) && dance.sessionB.isCaughtUp(store: b))
    }

    /// A session's first batches are small and double up to the largest, so the receiver
    /// starts applying before the sender has read a full batch.
    @Test func aCatchUpsFirstBatchesDoubleUpToTheLargest() throws {
        let ids = try (0..<40).map { try a.createNote(title: "note \($0)", body: paragraphs(["text \($0)"]), now: 1_000 + UInt64($0)) }
        var dance = Dance(a, b, batchEntries: (first: 2, max: 8))
        var sizes: [Int] = []
        for _ in 0..<1_000 {
            if dance.toA.isEmpty && dance.toB.isEmpty && !(dance.sessionA.nextDeadline.map { $0 <= dance.now } ?? false) { break }
            for case .entries(let batch) in dance.toB { sizes.append(batch.entries.count) }
            while !dance.toB.isEmpty { try dance.stepToB() }
            while !dance.toA.isEmpty { try dance.stepToA() }
            dance.tick(by: 0)
        }
        // 40 entries: 2, 4, 8, then 8 each, the rest last.
        #expect(sizes == [2, 4, 8, 8, 8, 8, 2])
        #expect(try ids.allSatisfy { try b.note($0) != nil })
        #expect(dance.sessionA.isCaughtUp(store: a) && dance.sessionB.isCaughtUp(store: b))
    }
}

@Suite struct FrameCodecTests {
    @Test func everyFrameRoundTrips() throws {
        let replica = ReplicaID(RecordID(high: 1, low: 2))
        let vector = VersionVector([replica: 7])
        let hash = try #require(Hash256(bytes: [UInt8](repeating: 3, count: 32)))
        let header = RevisionHeader(kind: .note, record: RecordID(high: 5, low: 6), parents: [hash], author: replica, hlc: HLC(rawValue: 9), isTombstone: true, body: [])
        let frames: [Frame] = [
            .hello(Hello(replica: replica, deviceName: "laptop", vector: vector)),
            .refuse(Refusal(.inviteExpired, "no")), .joinRequest(deviceName: "new laptop"),
            .joinAccepted(householdKey: [UInt8](repeating: 9, count: 32), roster: [RosterMember(publicKey: [UInt8](repeating: 1, count: 32), name: "a")]),
            .entries(EntriesBatch(batch: 1, epoch: 2, senderVector: vector, entries: [
                EntryPayload(dot: Dot(replica: replica, seq: 1), revision: hash, content: .full(data: [1, 2, 3], blocks: [[4], [5, 6]])),
                EntryPayload(dot: Dot(replica: replica, seq: 2), revision: hash, content: .purged(header)),
            ])),
            .ack(batch: 3, vector: vector), .rewind(epoch: 4, vector: vector), .needBlocks([hash]), .blocks([[1], []]),
            .have(vector), .ping(5, vector), .pong(6, VersionVector()),
        ]
        for frame in frames { #expect(try FrameCodec.decode(FrameCodec.encode(frame)) == frame) }
    }

    /// A received entry's blocks are read where they arrived: slices of the frame's bytes, not
    /// copies (docs/decisions.md, "A received block stays in its frame").
    @Test func aReceivedEntrysBlocksStayInTheirFrame() throws {
        let replica = ReplicaID(RecordID(high: 1, low: 2))
        let hash = try #require(Hash256(bytes: [UInt8](repeating: 3, count: 32)))
        let sent: [EntryPayload.EncodedBlock] = [[4, 4, 4], [5, 6]]
        let encoded = FrameCodec.encode(.entries(EntriesBatch(batch: 1, epoch: 2, senderVector: VersionVector([replica: 1]), entries: [
            EntryPayload(dot: Dot(replica: replica, seq: 1), revision: hash, content: .full(data: [1, 2, 3], blocks: sent)),
        ])))
        guard case .entries(let batch) = try FrameCodec.decode(encoded), case .full(_, let blocks) = batch.entries.first?.content else {
            Issue.record("the entry did not come back whole")
            return
        }
        #expect(blocks == sent)
        let frameStart = encoded.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        for block in blocks {
            let blockStart = block.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
            #expect((frameStart..<frameStart + UInt(encoded.count)).contains(blockStart), "a block copied out of its frame")
        }
    }

    @Test func numbersTooLargeForTheDatabaseAreRefused() throws {
        let replica = ReplicaID(RecordID(high: 1, low: 2))
        let tooLarge = ByteReader.storableMaximum + 1
        func hello(seq: UInt64) -> [UInt8] { FrameCodec.encode(.hello(Hello(replica: replica, deviceName: "x", vector: VersionVector([replica: seq])))) }
        guard case .hello(let largest) = try FrameCodec.decode(hello(seq: ByteReader.storableMaximum)) else {
            Issue.record("a hello did not decode as a hello")
            return
        }
        #expect(largest.vector[replica] == ByteReader.storableMaximum)
        #expect(throws: DecodeError.self) { try FrameCodec.decode(hello(seq: tooLarge)) }

        func revision(created: UInt64) -> [UInt8] {
            let note = Note(title: "t", created: created, modified: 1)
            return RevisionCodec.encode(Revision(record: RecordID(high: 3, low: 4), parents: [], author: replica, hlc: HLC(milliseconds: 1, counter: 0), content: .note(.live(note)))).bytes
        }
        #expect(throws: Never.self) { try RevisionCodec.decodeStored(revision(created: ByteReader.storableMaximum)) }
        #expect(throws: DecodeError.self) { try RevisionCodec.decodeStored(revision(created: tooLarge)) }
    }

    @Test func malformedFramesAreErrorsNotCrashes() throws {
        let good = FrameCodec.encode(.hello(Hello(replica: ReplicaID(RecordID(high: 1, low: 2)), deviceName: "x", vector: VersionVector())))
        // Every truncation, and a random bit flip at each position, is an error or a valid frame.
        for length in 0..<good.count { #expect(throws: DecodeError.self) { try FrameCodec.decode(Array(good.prefix(length))) } }
        #expect(throws: DecodeError.self) { try FrameCodec.decode(good + [0]) }
        #expect(throws: DecodeError.self) { try FrameCodec.decode([99]) }
        // A count claiming a billion entries is refused before allocating.
        var writer = ByteWriter()
        writer.u8(3); writer.u64(1); writer.u32(0); writer.varint(0); writer.varint(1_000_000_000)
        #expect(throws: DecodeError.self) { try FrameCodec.decode(writer.bytes) }
        var random = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            var bytes = good
            bytes[Int(random.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            _ = try? FrameCodec.decode(bytes)
        }
    }
}
