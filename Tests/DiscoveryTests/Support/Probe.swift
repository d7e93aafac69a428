import Foundation
import Synchronization

/// The `discovery-probe` binary, built next to the test bundle by `swift build --build-tests`.
let probeExecutable: URL = {
    let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return testBinary.deletingLastPathComponent().appendingPathComponent("discovery-probe")
}()

/// One JSON line printed by `discovery-probe` (see Sources/discovery-probe/main.swift).
struct ProbeLine: Decodable, Equatable, CustomStringConvertible {
    var event: String
    var ms: Int
    var state: String?
    var name: String?
    var reason: String?
    var id: String?
    var v: Int?
    var host: String?
    var port: UInt16?
    var addresses: [String]?

    var description: String {
        [event, state, name, id, port.map(String.init), addresses?.joined(separator: ","), reason, "@\(ms)ms"]
            .compactMap { $0 }.joined(separator: " ")
    }
}

/// Accumulates the lines a process writes, for polling from the test.
final class LineCollector: Sendable {
    private let state = Mutex<(pending: [UInt8], lines: [String], closed: Bool)>(([], [], false))

    func append(_ data: Data) {
        state.withLock { state in
            state.pending.append(contentsOf: data)
            while let newline = state.pending.firstIndex(of: UInt8(ascii: "\n")) {
                state.lines.append(String(decoding: state.pending[..<newline], as: UTF8.self))
                state.pending.removeSubrange(...newline)
            }
        }
    }

    /// End of file: keeps a last line that had no newline.
    func close() {
        state.withLock { state in
            if !state.pending.isEmpty { state.lines.append(String(decoding: state.pending, as: UTF8.self)) }
            state.pending = []
            state.closed = true
        }
    }

    var lines: [String] { state.withLock { $0.lines } }
    var isClosed: Bool { state.withLock { $0.closed } }
}

/// A running `discovery-probe` (directly, or through `scripts/netlab exec`).
final class ProbeProcess: Sendable {
    let label: String
    private let process: Subprocess

    init(label: String, command: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.label = label
        process = try Subprocess(command, environment: environment)
    }

    deinit { stop() }

    /// The JSON lines so far (other output shows up in `transcript`).
    var lines: [ProbeLine] {
        process.output.lines.compactMap { try? JSONDecoder().decode(ProbeLine.self, from: Data($0.utf8)) }
    }

    var errorOutput: [String] { process.errors.lines }
    var exitStatus: Int32? { process.exitStatus }

    /// The peers currently known: every `found` applied, every `lost` removed, in order.
    func peers(after start: Int = 0) -> [String: ProbeLine] {
        var peers: [String: ProbeLine] = [:]
        for line in lines.dropFirst(start) {
            switch line.event {
            case "found": peers[line.name ?? ""] = line
            case "lost": peers[line.name ?? ""] = nil
            default: break
            }
        }
        return peers
    }

    /// Waits (bounded polling) until `condition` holds for the lines printed so far.
    func wait(until what: String, timeout: Duration = .seconds(20),
              _ condition: @escaping ([ProbeLine]) -> Bool) async throws {
        try await waitUntil("\(label): \(what)", timeout: timeout, seen: { transcript }) { condition(lines) }
    }

    var transcript: String {
        (process.output.lines.map { "  \(label) | \($0)" } + process.errors.lines.map { "  \(label) ! \($0)" })
            .joined(separator: "\n")
    }

    /// Closes stdin (the probe stops cleanly on end of file).
    func closeInput() { process.closeInput() }

    /// Sends SIGTERM (the probe stops cleanly).
    func terminate() { process.send(SIGTERM) }

    func waitForExit() async throws {
        try await waitUntil("\(label) exits", timeout: .seconds(10), seen: { transcript }) { exitStatus != nil }
    }

    /// Stops the probe and reaps it (SIGKILL if it does not exit within a few seconds).
    func stop() { process.stop() }
}
