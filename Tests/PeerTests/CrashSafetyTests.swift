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

    /// A catch-up killed with SIGKILL between and during its batches, written with a rollback
    /// journal instead of the write-ahead log (docs/decisions.md, "A bulk write without the
    /// log"): the copy opens sound (a journal left behind is rolled back), holds every batch
    /// it acknowledged, and holds whole batches only, a prefix of the source's log.
    /// At least one of the kills must land inside a commit, leaving a journal to roll back.
    @Test func aCatchUpKilledMidBatchKeepsWhatItAcknowledged() async throws {
        try await offThePool {
            let directory = try TemporaryDirectory()
            let source = directory.file("source.db")
            do {
                let replica = try Replica(path: source, randomBytes: SeededBytes.source(seed: 21))
                try replica.inOneTransaction {
                    for index in 0..<Self.catchUpNotes {
                        _ = try replica.createNote(
                            title: "Note \(index)", body: paragraphs((0..<6).map { "paragraph \($0) of note \(index)" }),
                            now: 1_000 + UInt64(index))
                    }
                }
            }
            var journalsLeft = 0
            for seed: UInt64 in 21...26 where try Self.killCatchUp(from: source, into: directory.file("copy-\(seed).db"), seed: seed) {
                journalsLeft += 1
            }
            #expect(journalsLeft > 0, "no kill landed inside a commit")
        }
    }

    static let catchUpNotes = 4_000, catchUpBatch = 800

    /// One catch-up of `source` into a new library at `path`, killed at a moment `seed` draws:
    /// while a batch applies, or just after (the child says when each begins). Whether it left
    /// a journal behind.
    static func killCatchUp(from source: String, into path: String, seed: UInt64) throws -> Bool {
        let notes = catchUpNotes, batch = catchUpBatch
        var random = SplitMix64(seed: seed)
        let killIn = 2 + Int(random.next() % 3)
        let log = path + ".log"
        let process = try ChildProcess.background(
            [builtProduct("notes-testkit"), "catch-up-writer", source, path, "\(batch)"], logPath: log)
        func lines() -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        _ = poll(seconds: 60, every: 1_000) { lines().filter { $0.hasPrefix("applying ") }.count >= killIn || process.exitStatus != nil }
        usleep(UInt32(random.next() % 30_000))
        #expect(process.exitStatus == nil, "seed \(seed): the catch-up ended before it was killed; see \(log)")
        process.signal(SIGKILL)
        process.waitForExit(timeout: .seconds(10))

        let output = lines()
        #expect(output.first == "journal truncate", "seed \(seed): the catch-up kept the log: \(output.first ?? "nothing")")
        let acknowledged = output.compactMap { $0.hasPrefix("ok ") ? Int($0.dropFirst(3)) : nil }.last ?? 0
        #expect(acknowledged >= batch, "seed \(seed): no batch was acknowledged; see \(log)")
        let journal = (try? FileManager.default.attributesOfItem(atPath: path + "-journal")[.size] as? Int) ?? 0
        let copy = try Replica(path: path)
        #expect(try copy.integrityProblems() == [], "seed \(seed)")
        let held = Int(copy.vector.counters.values.reduce(0, +))
        #expect(held >= acknowledged, "seed \(seed): the copy holds \(held) entries, \(acknowledged) were acknowledged")
        #expect(held % batch == 0 || held == notes, "seed \(seed): \(held) entries is not a whole number of batches")
        #expect(try copy.noteCount == held, "seed \(seed): every entry held is a note")
        #expect(try copy.database.first("PRAGMA journal_mode") { $0.text(0) } == "wal", "the copy opens in the write-ahead log again")
        return journal > 0
    }
}
