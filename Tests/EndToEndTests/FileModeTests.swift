import Foundation
import Testing
import TestSupport

/// Everything notesd creates is private to its user whatever umask it was started with: the
/// data directory 0700, the database, its WAL and shared memory and the keys 0600.
@Suite(.serialized) struct FileModeTests {
    func mode(_ path: String) -> mode_t? {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o777 : nil
    }

    @Test func aFreshDataDirectoryUnderUmask022IsPrivate() async throws {
        try await offThePool {
            let scratch = try Scratch()
            let data = scratch.path + "/home/.local/share/notesd"
            let socket = scratch.path + "/control.sock"
            let command = ["/bin/sh", "-c", "umask 022; exec \"$0\" \"$@\"", builtProduct("notesd"),
                           "--data-dir", data, "--socket", socket, "--listen", "127.0.0.1:0", "--no-mdns", "--web-listen", "127.0.0.1:0"]
            let daemon = try ChildProcess.background(command, logPath: scratch.path + "/notesd.log")
            defer { daemon.stop() }
            func ctl(_ arguments: [String], input: String? = nil) throws -> CommandResult {
                try ChildProcess.runBlocking([builtProduct("notesctl"), "--socket", socket] + arguments, input: input, timeout: .seconds(60))
            }
            try waitUntil("notesd answers status") { (try? ctl(["status"]))?.status == 0 }
            // A write, so the WAL and shared-memory files exist.
            #expect(try ctl(["new", "--title", "Private"], input: "<p>only mine</p>").status == 0)
            for directory in [data, scratch.path + "/home/.local/share", scratch.path + "/home"] {
                #expect(mode(directory) == 0o700, "\(directory) is \(String(mode(directory) ?? 0, radix: 8))")
            }
            for file in ["notes.db", "notes.db-wal", "notes.db-shm", "device.key", "household.key"] {
                let path = data + "/" + file
                #expect(mode(path) == 0o600, "\(file) is \(mode(path).map { String($0, radix: 8) } ?? "missing")")
            }
        }
    }

    @Test func aDataDirectoryOthersCanEnterIsReportedWithTheChmod() async throws {
        try await offThePool {
            let scratch = try Scratch()
            let daemon = try Daemon(name: "open", root: scratch.path)
            chmod(daemon.directory, 0o755)
            try daemon.start()
            defer { daemon.stop() }
            #expect(daemon.log.contains("chmod 700 \(daemon.directory)"), "\(daemon.log)")
        }
    }
}
