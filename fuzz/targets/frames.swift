import Merge

/// libFuzzer target: the sync protocol's frame decoder (`FrameCodec.decode`), fed arbitrary
/// bytes. Malformed input must be a thrown `DecodeError`, never a crash or a huge allocation;
/// anything that decodes must re-encode to bytes that decode to the same frame.
struct FramesFuzzFixture {
    let seeds: [(name: String, bytes: [UInt8])]

    static let shared: FramesFuzzFixture = {
        FuzzSupport.prepare()
        return FramesFuzzFixture()
    }()

    private init() {
        let replica = ReplicaID(RecordID(high: 0x0123_4567_89AB_CDEF, low: 42))
        let vector = VersionVector([replica: 12])
        let hash = Hash256(bytes: [UInt8](repeating: 7, count: 32))!
        let revision = RevisionCodec.encode(Revision(
            record: RecordID(high: 1, low: 2), parents: [hash], author: replica, hlc: HLC(milliseconds: 1_700_000_000_000, counter: 3),
            content: .note(.live(Note(title: "Plan", body: HTMLBlocks.split("<p>one</p><ul><li>two</li></ul>"), tags: ["a"])))))
        let header = RevisionHeader(kind: .folder, record: RecordID(high: 3, low: 4), parents: [], author: replica, hlc: HLC(rawValue: 9), isTombstone: true, body: [])
        let entries = EntriesBatch(batch: 1, epoch: 0, senderVector: vector, entries: [
            EntryPayload(dot: Dot(replica: replica, seq: 1), revision: revision.id, content: .full(data: revision.bytes, blocks: revision.blocks.map { $0.encoded[...] })),
            EntryPayload(dot: Dot(replica: replica, seq: 2), revision: hash, content: .purged(header)),
        ])
        let frames: [(String, Frame)] = [
            ("hello", .hello(Hello(replica: replica, deviceName: "laptop", vector: vector))),
            ("entries", .entries(entries)),
            ("ack", .ack(batch: 1, vector: vector)),
            ("rewind", .rewind(epoch: 2, vector: vector)),
            ("need", .needBlocks([hash])),
            ("blocks", .blocks(revision.blocks.map(\.encoded))),
            ("ping", .ping(5, vector)),
            ("refuse", .refuse(Refusal(.inviteExpired, "expired"))),
            ("join", .joinAccepted(householdKey: [UInt8](repeating: 1, count: 32), roster: [RosterMember(publicKey: [UInt8](repeating: 2, count: 32), name: "a")])),
        ]
        seeds = frames.map { ($0.0, FrameCodec.encode($0.1)) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrames(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let fixture = FramesFuzzFixture.shared
    FuzzSupport.writeSeedsIfRequested(fixture.seeds)
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let frame = try? FrameCodec.decode(bytes) else { return 0 }
    let again = FrameCodec.encode(frame)
    guard let reread = try? FrameCodec.decode(again), reread == frame else {
        fatalError("a decoded frame did not survive re-encoding: \(frame)")
    }
    return 0
}
