import Foundation
import Synchronization

// Helpers shared by the test targets: where the built binaries are, temporary directories,
// and running blocking work without starving Swift Testing's cooperative thread pool.

/// The package checkout, found from this file's path (the nearest directory above it that
/// holds `Package.swift`).
public let packageRoot: String = {
    var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
        guard directory.path != "/" else { preconditionFailure("no Package.swift above \(#filePath): the tests run from a package checkout") }
        directory.deleteLastPathComponent()
    }
    return directory.path
}()

/// A binary `swift build` put next to this test bundle (`notesd`, `notesctl`, `notes-testkit`).
public func builtProduct(_ name: String) -> String {
    URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent(name).path
}

/// A fresh private directory (mode 0700, so control sockets may live in it), removed when the
/// value goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(_ prefix: String = "notesd-test") throws {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw SpawnFailed(command: ["mkdtemp"], code: errno) }
        path = String(cString: created)
    }

    public func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs blocking or long CPU-bound work on a thread of its own and awaits it. Swift Testing runs
/// tests as tasks on a cooperative pool as small as the machine's core count (2 here); a test
/// that blocks a pool thread (waiting for a process, polling, a long simulation) starves every
/// other test's tasks, so such tests wrap their bodies in this.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Polls `condition` (on the calling thread) until it holds or `seconds` pass; false on timeout.
public func poll(seconds: Double, every interval: useconds_t = 10_000, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(interval)
    }
    return try condition()
}

/// A port on loopback that was free a moment ago (the kernel does not hand it out again soon).
public func freePort() -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    return UInt16(bigEndian: address.sin_port)
}
