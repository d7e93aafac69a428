import Foundation
import Testing
import TestSupport

/// Libraries written by release 0.1.0 (protocol 1; `Tests/Fixtures/release-0.1.0`, recorded by
/// its `record.sh`) open in this version with every note, revision, folder and device intact:
/// today's notesd, started on a copy of each data directory, answers what that release
/// answered. Newer answers may carry more keys; every key the release gave must be equal.
@Suite(.serialized) struct ReleaseFixtureTests {
    static let fixtures = packageRoot + "/Tests/Fixtures/release-0.1.0"

    /// Where `actual` differs from `expected`, as paths; keys only `actual` has are fine.
    static func differences(_ expected: Any, _ actual: Any?, at path: String, ignoring: Set<String>) -> [String] {
        switch expected {
        case let object as [String: Any]:
            guard let other = actual as? [String: Any] else { return ["\(path): expected an object, got \(String(describing: actual))"] }
            return object.keys.sorted().filter { !ignoring.contains($0) }.flatMap {
                differences(object[$0]!, other[$0], at: "\(path).\($0)", ignoring: ignoring)
            }
        case let array as [Any]:
            guard let other = actual as? [Any] else { return ["\(path): expected an array, got \(String(describing: actual))"] }
            guard array.count == other.count else { return ["\(path): \(array.count) items expected, \(other.count) found"] }
            return zip(array, other).enumerated().flatMap { differences($1.0, $1.1, at: "\(path)[\($0)]", ignoring: ignoring) }
        default:
            guard let value = expected as? NSObject, let other = actual as? NSObject, value.isEqual(other) else {
                return ["\(path): expected \(expected), got \(String(describing: actual))"]
            }
            return []
        }
    }

    static func json(_ path: String) throws -> Any {
        try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test(arguments: ["alpha", "bravo"]) func theReleasesLibraryOpensIntact(device: String) async throws {
        try await offThePool { try Self.check(device) }
    }

    static func check(_ device: String) throws {
        let scratch = try Scratch()
        let daemon = try Daemon(name: device, root: scratch.path)
        let source = fixtures + "/" + device
        for file in ["notes.db", "device.key", "household.key"] {
            try FileManager.default.copyItem(atPath: "\(source)/data/\(file)", toPath: "\(daemon.directory)/\(file)")
            chmod("\(daemon.directory)/\(file)", 0o600)
        }
        try daemon.start()
        defer { daemon.stop() }

        // `connected` says what was up while the release answered, not what the library holds.
        let volatile: Set<String> = ["connected"]
        var answers: [(String, [String])] = [
            ("ls.json", ["ls"]), ("ls-trash.json", ["ls", "--trash"]), ("folders.json", ["folders"]), ("devices.json", ["devices"]),
        ]
        let listed = try (json("\(source)/answers/ls.json") as! [[String: Any]]) + (json("\(source)/answers/ls-trash.json") as! [[String: Any]])
        #expect(listed.count == 5, "the fixture holds five notes, one of them a conflict copy and one in the Trash")
        for note in listed {
            let id = note["id"] as! String
            answers += [("show-\(id).json", ["show", id, "--html"]), ("log-\(id).json", ["log", id])]
        }
        for (file, arguments) in answers {
            let expected = try json("\(source)/answers/\(file)")
            let actual = try daemon.json(arguments)
            let found = differences(expected, actual, at: file, ignoring: volatile)
            #expect(found.isEmpty, "notesctl \(arguments.joined(separator: " ")) answers differently from release 0.1.0:\n\(found.prefix(10).joined(separator: "\n"))")
        }
    }
}
