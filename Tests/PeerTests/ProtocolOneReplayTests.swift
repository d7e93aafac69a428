import Foundation
import Merge
import Testing
import TestSupport
@testable import Peer

/// The golden transcripts of sync protocol 1 (`Tests/Fixtures/protocol-1`, recorded from
/// release 0.1.0, commit 30d5e97, by its `record.sh`) replayed against this code: one side of
/// each recorded session is played by today's `SyncSession` and `Replica`, opened on that
/// side's database as it was when the session began, and fed the other side's recorded frames
/// in order. What today's side answers must be what 0.1 answered (byte for byte, except the
/// revision ids of entries it creates itself, which are random), every answer must decode as
/// a protocol-1 frame, and what it holds afterwards must be what 0.1 held.
@Suite("Protocol 1: golden transcripts of release 0.1 replayed")
struct ProtocolOneReplayTests {
    static let fixtures = packageRoot + "/Tests/Fixtures/protocol-1"

    struct RecordedFrame {
        let at: UInt64
        let sender: String
        let bytes: [UInt8]
    }

    static func transcript(_ session: String) throws -> [RecordedFrame] {
        let text = try String(contentsOfFile: fixtures + "/\(session).transcript", encoding: .utf8)
        return try text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map { line in
            let parts = line.split(separator: " ")
            guard parts.count == 3, let at = UInt64(parts[0]), let bytes = hexBytes(parts[2]) else {
                throw ReplayError.badLine(session: session, line: String(line))
            }
            return RecordedFrame(at: at, sender: String(parts[1]), bytes: bytes)
        }
    }

    enum ReplayError: Error { case badLine(session: String, line: String) }

    static func hexBytes(_ text: Substring) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// The frame kinds of protocol 1 (docs/protocol.md): the tag byte every frame starts with.
    static let protocolOneTags: ClosedRange<UInt8> = 1...12

    struct Case: CustomStringConvertible, Sendable {
        let session: String
        /// The side today's code plays; the other side's recorded frames are its input.
        let played: String
        var other: String { played == "alpha" ? "bravo" : "alpha" }
        /// The played side writes revisions of its own in this session (conflict copies).
        let authors: Bool
        var description: String { "\(session) as \(played)" }
    }

    static let cases: [Case] = [
        Case(session: "initial-sync", played: "bravo", authors: false),
        Case(session: "initial-sync", played: "alpha", authors: false),
        Case(session: "live-edits", played: "bravo", authors: false),
        Case(session: "conflict", played: "bravo", authors: true),
        Case(session: "conflict", played: "alpha", authors: true),
        Case(session: "removal", played: "bravo", authors: false),
    ]

    @Test("today's code answers the recorded 0.1 peer as 0.1 did and ends with what 0.1 held", arguments: cases)
    func replay(_ replayCase: Case) throws {
        let frames = try Self.transcript(replayCase.session)
        let input = frames.filter { $0.sender == replayCase.other }
        let recordedAnswers = frames.filter { $0.sender == replayCase.played }
        #expect(!input.isEmpty && !recordedAnswers.isEmpty)

        let directory = try TemporaryDirectory()
        let path = directory.path + "/notes.db"
        try FileManager.default.copyItem(atPath: Self.fixtures + "/\(replayCase.session).\(replayCase.played).db", toPath: path)
        let replica = try Replica(path: path)

        var (session, output) = SyncSession.start(
            configuration: .init(deviceName: replayCase.played), store: replica, now: input[0].at - 1)
        var answers = output.frames
        for recorded in input {
            let frame = try FrameCodec.decode(recorded.bytes)
            #expect(FrameCodec.encode(frame) == recorded.bytes, "today's encoder writes 0.1's frame back unchanged")
            output = session.receive(frame, store: replica, now: recorded.at)
            answers += output.frames
            for case .closed(let reason) in output.events { Issue.record("the session closed: \(reason)") }
        }

        #expect(answers.count == recordedAnswers.count, "\(replayCase): as many frames as 0.1 sent")
        for (answer, recorded) in zip(answers, recordedAnswers) {
            let bytes = FrameCodec.encode(answer)
            // Protocol-1 rules: a known frame kind, a hello of version 1, nothing after the
            // last field (the decoder refuses trailing bytes), and it decodes to itself.
            #expect(Self.protocolOneTags.contains(bytes[0]))
            if case .hello(let hello) = answer { #expect(hello.protocolVersion == 1) }
            #expect(try FrameCodec.decode(bytes) == answer)
            #expect(bytes[0] == recorded.bytes[0], "\(replayCase): the same kind of frame as 0.1 sent")
            if replayCase.authors, case .entries(let batch) = answer, case .entries(let old) = try FrameCodec.decode(recorded.bytes) {
                // Entries this side created (conflict copies) carry random revision ids.
                #expect(batch.batch == old.batch && batch.epoch == old.epoch && batch.senderVector == old.senderVector)
                #expect(batch.entries.map(\.dot) == old.entries.map(\.dot))
            } else {
                #expect(bytes == recorded.bytes, "\(replayCase): byte for byte what 0.1 sent")
            }
        }

        let expected = try String(contentsOfFile: Self.fixtures + "/\(replayCase.session).\(replayCase.played).state", encoding: .utf8)
        #expect(try Self.state(of: replica) == expected)
    }

    @Test func theTranscriptsCoverAllOfProtocol1ThatTwoMembersUse() throws {
        var tags = Set<UInt8>()
        for session in ["initial-sync", "live-edits", "conflict", "removal"] {
            for frame in try Self.transcript(session) {
                tags.insert(frame.bytes[0])
                _ = try FrameCodec.decode(frame.bytes)
            }
        }
        // hello, entries, ack; block frames ride along with large bodies only, pings with idle
        // minutes, refusals and pairing with other tests.
        #expect(tags.isSuperset(of: [1, 3, 4]))
    }

    /// What a replica holds, free of ids and times: the same rendering as the recorder's.
    static func state(of replica: Replica) throws -> String {
        var lines: [String] = []
        let folders = try replica.listFolders()
        for folder in folders.sorted(by: { $0.path.joined(separator: "/") < $1.path.joined(separator: "/") }) {
            lines.append("folder \(folder.path.joined(separator: "/"))")
        }
        let path = { (id: FolderID?) -> String in
            guard let id, let folder = folders.first(where: { $0.id == id }) else { return "-" }
            return folder.path.joined(separator: "/")
        }
        var notes: [String] = []
        for trashed in [false, true] {
            for summary in try replica.listNotes(NoteFilter(trashed: trashed)) {
                guard let note = try replica.note(summary.id) else { continue }
                notes.append([
                    "note", summary.title.debugDescription, "folder=\(path(summary.folder))", "trashed=\(summary.trashed)",
                    "pinned=\(summary.pinned)", "color=\(summary.color ?? "-")", "tags=\(summary.tags.sorted().joined(separator: ","))",
                    "conflictCopy=\(summary.conflictOf != nil)", "body=\(HTMLBlocks.join(note.body).debugDescription)",
                ].joined(separator: " "))
            }
        }
        lines += notes.sorted()
        for entry in try replica.listDevices().sorted(by: { $0.device.name < $1.device.name }) {
            lines.append("device \(entry.device.name) revoked=\(entry.device.revoked)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
