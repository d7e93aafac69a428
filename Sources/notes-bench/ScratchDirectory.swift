import Foundation

/// A private temporary directory (mode 0700: control sockets live there), removed at the end
/// unless `NOTES_BENCH_KEEP` is set (to profile or inspect the databases afterwards).
final class ScratchDirectory {
    let path: String

    init(_ prefix: String) throws {
        var base = NSTemporaryDirectory()
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw BenchError("cannot create a temporary directory under \(NSTemporaryDirectory())") }
        path = String(cString: created)
    }

    /// A subdirectory, created with mode 0700.
    func directory(_ name: String) throws -> String {
        let sub = path + "/" + name
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return sub
    }

    deinit {
        if ProcessInfo.processInfo.environment["NOTES_BENCH_KEEP"] != nil {
            print("   (kept \(path))")
        } else {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}

/// The size of a file in bytes, 0 when it does not exist.
func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}

/// Unix milliseconds, what the replica takes as `now`.
func unixMilliseconds() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1_000) }
