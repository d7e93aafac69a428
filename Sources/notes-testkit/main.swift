// Test-support tools that the test suites run as child processes. Not installed.
//
//   notes-testkit replica-writer DB SEED COUNT
//       Performs COUNT seeded mutations on the replica at DB. Before each it prints
//       `begin <note-id> <title>` and after it returns `ok <note-id> <title>` (flushed), so a
//       parent that kills it at any moment knows which writes were acknowledged.
import Foundation
import Merge
import Peer

/// Writes one line straight to the file descriptor: no buffer to lose when killed.
func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("notes-testkit: \(message)\n".utf8))
    exit(64)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.first == "replica-writer", arguments.count == 4, let seed = UInt64(arguments[2]), let count = Int(arguments[3]) else {
    fail("usage: notes-testkit replica-writer DB SEED COUNT")
}

var generator = SplitMix64(seed: seed)
let replica: Replica
do {
    replica = try Replica(path: arguments[1])
} catch {
    fail("\(error)")
}
var notes: [NoteID] = try replica.listNotes().map(\.id)
var now = UInt64(Date().timeIntervalSince1970 * 1000)
for step in 0..<count {
    now += 1
    let title = "t\(seed)-\(step)"
    let words = (0..<(1 + generator.next() % 20)).map { "w\(step)x\($0)" }
    let body = HTMLBlocks.split(words.map { "<p>\($0)</p>" }.joined())
    do {
        if notes.isEmpty || generator.next() % 3 == 0 {
            emit("begin new \(title)")
            let id = try replica.createNote(title: title, body: body, now: now)
            notes.append(id)
            emit("ok \(id) \(title)")
        } else {
            let id = notes[Int(generator.next() % UInt64(notes.count))]
            emit("begin \(id) \(title)")
            try replica.editNote(id, NoteEdit(title: title, body: body), now: now)
            if generator.next() % 5 == 0 { try replica.markOffered() }
            emit("ok \(id) \(title)")
        }
    } catch {
        fail("step \(step): \(error)")
    }
}

