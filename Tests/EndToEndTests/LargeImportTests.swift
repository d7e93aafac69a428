import Foundation
import Testing
import TestSupport

/// `notesctl import` sends its notes in `notes.import` batches, and `notesctl ls` reads a
/// library larger than one page (docs/control-protocol.md, `notes.createMany`, `notes.list`).
@Suite(.serialized) struct LargeImportTests {
    @Test func anImportOfSeveralBatchesArrivesWholeAndLsPagesThroughIt() async throws {
        try await offThePool { try importAndList() }
    }

    func importAndList() throws {
        let scratch = try Scratch()
        let daemon = try Daemon(name: "solo", root: scratch.path)
        try daemon.start()
        defer { daemon.stop() }
        // 2,100 notes: five batches of 500 or fewer, and more than one 2,000-note page.
        let files = scratch.path + "/files"
        for folder in ["Work", "Home"] { try FileManager.default.createDirectory(atPath: files + "/" + folder, withIntermediateDirectories: true) }
        for index in 0..<2_100 {
            let folder = index % 3 == 0 ? "Home" : "Work"
            let page = "<html><head><title>Note \(index)</title></head><body><p>body \(index)</p></body></html>"
            try page.write(toFile: files + "/\(folder)/\(String(format: "%05d", index)).html", atomically: false, encoding: .utf8)
        }
        // A file the import cannot read as text is reported and skipped, the rest still land.
        try Data([0xff, 0xfe, 0x00, 0xc3]).write(to: URL(fileURLWithPath: files + "/Work/broken.txt"))
        let result = try daemon.ctl(["import", files, "--json"])
        #expect(result.status != 0, "one file failed, so the command reports failure")
        let report = try #require(result.json as? [String: Any])
        #expect((report["imported"] as? [Any])?.count == 2_100)
        #expect((report["failed"] as? [[String: Any]])?.map { $0["file"] as? String } == ["Work/broken.txt"])

        let listed = try #require(try daemon.json(["ls"]) as? [[String: Any]])
        #expect(listed.count == 2_100)
        #expect(Set(listed.compactMap { $0["id"] as? String }).count == 2_100)
        #expect(Set(listed.compactMap { $0["title"] as? String }) == Set((0..<2_100).map { "Note \($0)" }))
        let folders = try #require(try daemon.json(["folders"]) as? [[String: Any]])
        #expect(folders.first { $0["path"] as? String == "Home" }?["noteCount"] as? Int == 700)
        #expect(folders.first { $0["path"] as? String == "Work" }?["noteCount"] as? Int == 1_400)
    }
}
