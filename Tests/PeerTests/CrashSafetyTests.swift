import Foundation
import Merge
import Testing
@testable import Peer

/// The path of an executable product built next to the tests.
func builtProduct(_ name: String) -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/\(name)").path
}

/// DESIGN §4: one transaction per action, `synchronous=FULL`. A writer killed with SIGKILL at
/// arbitrary moments loses nothing it acknowledged and leaves no half-written revision.
@Suite struct CrashSafetyTests {
    @Test(arguments: [11, 12, 13, 14, 15, 16])
    func acknowledgedWritesSurviveSigkill(seed: UInt64) throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        var acknowledged: [String: String] = [:]  // note id → last acknowledged title
        var inFlight: (note: String, title: String)?
        var random = SplitMix64(seed: seed)
        for round in 0..<4 {
            let killAfter = 1 + Int(random.next() % 40)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: builtProduct("notes-testkit"))
            process.arguments = ["replica-writer", path, "\(seed * 100 + UInt64(round))", "100000"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var buffer = ""
            var seen = 0
            func consume(_ line: [String]) {
                if line.first == "begin", line.count == 3 {
                    inFlight = line[1] == "new" ? nil : (line[1], line[2])
                } else if line.first == "ok", line.count == 3 {
                    acknowledged[line[1]] = line[2]
                    inFlight = nil
                    seen += 1
                }
            }
            func consumeBuffered() {
                while let newline = buffer.firstIndex(of: "\n") {
                    consume(buffer[..<newline].split(separator: " ").map(String.init))
                    buffer.removeSubrange(...newline)
                }
            }
            while seen < killAfter {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }  // the writer exited on its own
                buffer += String(decoding: chunk, as: UTF8.self)
                consumeBuffered()
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            // Whatever it printed before dying counts too: an "ok" is an acknowledged write.
            buffer += String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            consumeBuffered()

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
