import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// docs/architecture.md: one transaction per action, `synchronous=FULL`. A writer killed with SIGKILL at
/// arbitrary moments loses nothing it acknowledged and leaves no half-written revision.
@Suite struct CrashSafetyTests {
    @Test(arguments: [11, 12, 13, 14, 15, 16])
    func acknowledgedWritesSurviveSigkill(seed: UInt64) async throws {
        try await offThePool { try Self.killRepeatedly(seed: seed) }
    }

    static func killRepeatedly(seed: UInt64) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        var acknowledged: [String: String] = [:]  // note id → last acknowledged title
        var inFlight: (note: String, title: String)?
        var random = SplitMix64(seed: seed)
        for round in 0..<4 {
            let killAfter = 1 + Int(random.next() % 40)
            let log = directory.file("writer-\(round).log")
            let process = try ChildProcess.background(
                [builtProduct("notes-testkit"), "replica-writer", path, "\(seed * 100 + UInt64(round))", "100000"], logPath: log)
            var seen = 0
            var consumed = 0
            /// Reads the writer's new complete lines: `begin` marks the write in flight, `ok` an
            /// acknowledged one.
            func consumeLog() {
                let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                // The last piece is empty or a line still being written.
                while consumed < lines.count - 1 {
                    let line = lines[consumed].split(separator: " ").map(String.init)
                    consumed += 1
                    if line.first == "begin", line.count == 3 {
                        inFlight = line[1] == "new" ? nil : (line[1], line[2])
                    } else if line.first == "ok", line.count == 3 {
                        acknowledged[line[1]] = line[2]
                        inFlight = nil
                        seen += 1
                    }
                }
            }
            _ = poll(seconds: 60, every: 1_000) {
                consumeLog()
                return seen >= killAfter || process.exitStatus != nil
            }
            // The writer must still be writing when it is killed, having acknowledged writes.
            #expect(process.exitStatus == nil, "seed \(seed) round \(round): the writer exited by itself; see \(log)")
            #expect(seen > 0, "seed \(seed) round \(round): the writer acknowledged no write; see \(log)")
            process.signal(SIGKILL)
            process.waitForExit(timeout: .seconds(10))
            // Whatever it wrote before dying counts too: an "ok" is an acknowledged write.
            consumeLog()

            let replica = try Replica(path: path)
            #expect(try replica.integrityProblems() == [], "seed \(seed) round \(round)")
            for (id, title) in acknowledged {
                let noteID = try #require(RecordID(id))
                let note = try #require(try replica.note(noteID), "seed \(seed): acknowledged note \(id) is missing")
                // The write in flight when the writer died may or may not have committed.
                let allowed = [title] + (inFlight?.note == id ? [inFlight!.title] : [])
                #expect(allowed.contains(note.title), "seed \(seed) round \(round): note \(id) has \(note.title), acknowledged \(title)")
                acknowledged[id] = note.title
            }
            inFlight = nil
        }
    }
}
