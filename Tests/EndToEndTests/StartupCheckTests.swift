import Foundation
import Testing
import TestSupport

/// The whole-file check at start (docs/architecture.md, "The start-up check"): after a crash
/// notesd checks the database before it answers; after a clean stop it answers at once and
/// checks beside the engine, and damage found then stops it as a failed start would.
@Suite(.serialized) struct StartupCheckTests {
    /// A library big enough that the middle of the file is b-tree pages, then a clean stop.
    private func stoppedLibrary(_ daemon: Daemon, in scratch: Scratch) throws {
        let files = scratch.path + "/import"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        for index in 0..<300 {
            try "# Note \(index)\n\nSome text for note \(index), long enough to fill pages.\n"
                .write(toFile: files + "/note-\(index).md", atomically: true, encoding: .utf8)
        }
        try daemon.start()
        #expect(try daemon.ctl(["import", files]).status == 0)
    }

    private func scribble(over path: String) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 2)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 16_384))
        try handle.close()
    }

    @Test func afterACleanStopTheCheckRunsBesideTheEngineAndAfterACrashBeforeIt() async throws {
        try await offThePool {
            let scratch = try Scratch()
            let daemon = try Daemon(name: "checked", root: scratch.path)
            try stoppedLibrary(daemon, in: scratch)
            daemon.stop()
            try daemon.start()
            try waitUntil("the check beside the engine reports") { daemon.log.contains("quick_check of \(daemon.directory)/notes.db: ok") }
            daemon.kill9()
            let before = daemon.log.components(separatedBy: "quick_check of").count
            try daemon.start()
            #expect(try daemon.ctl(["ls"]).status == 0)
            daemon.stop()
            // After the kill the file was checked before the engine started, not beside it.
            #expect(daemon.log.components(separatedBy: "quick_check of").count == before)
        }
    }

    @Test func damageFoundAfterACleanStartStopsTheDaemonAndTheNextStartRefusesIt() async throws {
        try await offThePool {
            let scratch = try Scratch()
            let daemon = try Daemon(name: "damaged", root: scratch.path)
            try stoppedLibrary(daemon, in: scratch)
            daemon.stop()
            try scribble(over: daemon.directory + "/notes.db")
            let arguments = ["--data-dir", daemon.directory, "--socket", daemon.socket, "--listen", "127.0.0.1:0", "--no-mdns", "--web-listen", "127.0.0.1:0"]
            let first = try ChildProcess.background([builtProduct("notesd")] + arguments, logPath: scratch.path + "/first.log")
            #expect(first.waitForExit(timeout: .seconds(60)) == 1)
            let firstLog = try String(contentsOfFile: scratch.path + "/first.log", encoding: .utf8)
            #expect(firstLog.contains("is damaged") && firstLog.contains("Move it aside"), "\(firstLog)")
            let second = try ChildProcess.background([builtProduct("notesd")] + arguments, logPath: scratch.path + "/second.log")
            #expect(second.waitForExit(timeout: .seconds(60)) == 1)
            let secondLog = try String(contentsOfFile: scratch.path + "/second.log", encoding: .utf8)
            #expect(secondLog.contains("notesd will not start on it"), "\(secondLog)")
        }
    }
}
