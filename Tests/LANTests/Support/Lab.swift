import Foundation
import TestSupport
import Synchronization

/// A per-test directory (mode 0700: control sockets and data directories live in it).
struct ScratchDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/notesd-lan-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw LANTestFailure("mkdtemp failed: \(String(cString: strerror(errno)))") }
        path = String(cString: created)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

struct LANTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every 50 ms until it holds; throws saying `what` did not happen (and the
/// last thing `seen` reports) after `timeout`. Never a blind sleep.
func waitUntil(_ what: String, timeout: Duration = .seconds(60), seen: () async -> String = { "" },
               _ condition: () async throws -> Bool) async throws {
    let start = ContinuousClock.now
    while try await !condition() {
        guard ContinuousClock.now - start < timeout else {
            let detail = await seen()
            throw LANTestFailure("timed out after \(timeout) waiting until \(what)\(detail.isEmpty ? "" : "; saw:\n\(detail)")")
        }
        try await Task.sleep(for: .milliseconds(50))
    }
}

extension Duration {
    /// Whole milliseconds, for printed figures.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
