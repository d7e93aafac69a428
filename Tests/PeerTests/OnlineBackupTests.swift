import Foundation
import Merge
import Synchronization
import Testing
@testable import Peer
import TestSupport

/// `OnlineBackup`: a copy taken while another connection keeps committing is one consistent
/// moment of the database (docs/architecture.md, "Backups").
@Suite struct OnlineBackupTests {
    @Test func aCopyTakenDuringAWriteStormIsConsistent() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        do {
            let seed = try Replica(path: path, randomBytes: SeededBytes.source(seed: 5))
            for index in 0..<200 { _ = try seed.createNote(title: "seed \(index)", body: paragraphs(["body \(index)", "more"]), now: 1_000) }
        }
        let commits = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let failure = Mutex<String?>(nil)
        let writer = Thread {
            do {
                let replica = try Replica(path: path, randomBytes: SeededBytes.source(seed: 6))
                var index = 0
                while !stop.load(ordering: .acquiring) {
                    index += 1
                    // Spaced beyond the coalescing window: every write is a new entry.
                    _ = try replica.createNote(title: "storm \(index)", body: paragraphs(["storm \(index)"]), now: 1_000 + UInt64(index) * 600_000)
                    commits.add(1, ordering: .releasing)
                }
            } catch {
                failure.withLock { $0 = "\(error)" }
                commits.add(1_000_000, ordering: .releasing)
            }
        }
        writer.start()
        defer {
            stop.store(true, ordering: .releasing)
            while !writer.isFinished { usleep(1_000) }
        }
        let copyPath = directory.file("copy.db")
        var overlapped = 0
        let copy = try OnlineBackup.copy(from: path, to: copyPath, pagesPerStep: 4) { _, _ in
            // For the first steps, wait until the writer commits again: the copy provably spans writes.
            guard overlapped < 5 else { return }
            let seen = commits.load(ordering: .acquiring)
            while commits.load(ordering: .acquiring) == seen { usleep(500) }
            overlapped += 1
        }
        stop.store(true, ordering: .releasing)
        while !writer.isFinished { usleep(1_000) }
        #expect(failure.withLock { $0 } == nil)
        #expect(overlapped == 5)
        #expect(copy.steps > 5)
        var status = stat()
        #expect(stat(copyPath, &status) == 0 && status.st_mode & 0o777 == 0o600)
        #expect(!FileManager.default.fileExists(atPath: copyPath + "-wal"))

        let restored = try Replica(path: copyPath)
        #expect(try restored.integrityProblems() == [])
        let notes = try restored.noteCount
        #expect(notes >= 200 && notes < 200 + commits.load(ordering: .acquiring))
        #expect(notes == Int(restored.vector.counters.values.reduce(0, +)), "one entry per note, none torn")
    }

    @Test func aCopyNeverOverwritesAFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        _ = try Replica(path: path)
        let existing = directory.file("exists.db")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing))
        #expect(throws: OnlineBackup.Failure.destinationExists(existing)) { try OnlineBackup.copy(from: path, to: existing) }
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me")
    }
}
