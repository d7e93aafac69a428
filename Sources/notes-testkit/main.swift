// notes-testkit: helper processes for the crash tests (Tests/PeerTests/CrashSafetyTests.swift).
//
//   notes-testkit replica-writer DB SEED COUNT
//       Performs COUNT seeded mutations on the replica at DB. Before each it prints
//       `begin <note-id> <title>` and after it returns `ok <note-id> <title>` (flushed), so a
//       parent that kills it at any moment knows which writes were acknowledged.
//   notes-testkit catch-up-writer SOURCE DB BATCH
//       Applies the replica at SOURCE to the replica at DB in batches of BATCH entries, as a
//       catch-up does (a bulk write). Prints `journal <mode>` once the bulk write has begun,
//       `applying <entries>` as each batch begins, and `ok <entries held>` after it commits:
//       what a receiver acknowledges.
import Foundation
import Merge
import Peer

/// Writes one line straight to the file descriptor: no buffer to lose when killed.
func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("notes-testkit: \(message)\n".utf8))
    exit(64)
}

func openReplica(_ path: String) -> Replica {
    do {
        return try Replica(path: path)
    } catch {
        fail("\(error)")
    }
}

func writeReplica(at path: String, seed: UInt64, count: Int) throws {
    var generator = SplitMix64(seed: seed)
    let replica = openReplica(path)
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
}

func catchUp(from sourcePath: String, into path: String, batch: Int) throws {
    let source = openReplica(sourcePath), copy = openReplica(path)
    var announced = false
    while true {
        let entries = try source.entries(missingFrom: copy.vector, maxCount: batch, maxBytes: 1 << 30)
        guard !entries.isEmpty else { break }
        if !announced {
            try copy.enterBulkWrite(.catchUp)
            emit("journal \(try copy.database.first("PRAGMA journal_mode") { $0.text(0) } ?? "?")")
            announced = true
        }
        let checked = entries.map { $0.checked() }
        emit("applying \(checked.count)")
        let outcome = try copy.apply(checked, now: UInt64(Date().timeIntervalSince1970 * 1000))
        guard outcome.need == nil, outcome.rejected == nil else { fail("the copy could not apply a batch: \(outcome)") }
        emit("ok \(copy.vector.counters.values.reduce(0, +))")
    }
    try copy.releaseMemory()
    emit("done")
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "replica-writer" where arguments.count == 4:
        guard let seed = UInt64(arguments[2]), let count = Int(arguments[3]) else { fail("SEED and COUNT are numbers") }
        try writeReplica(at: arguments[1], seed: seed, count: count)
    case "catch-up-writer" where arguments.count == 4:
        guard let batch = Int(arguments[3]), batch > 0 else { fail("BATCH is a positive number") }
        try catchUp(from: arguments[1], into: arguments[2], batch: batch)
    default:
        fail("usage: notes-testkit replica-writer DB SEED COUNT | catch-up-writer SOURCE DB BATCH")
    }
} catch {
    fail("\(error)")
}
