#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control
import Foundation

/// Everything `notesd`'s command line decides (docs/systemd.md), defaults already applied.
struct DaemonConfig: Hashable, Sendable {
    /// The sync protocol's TCP port, registered nowhere: chosen to be easy to spot.
    static let defaultPort: UInt16 = 7479
    /// Device names travel in every `Hello` and `devices` answer, so they are kept short.
    static let maximumNameLength = 64

    /// Absolute path of the directory holding the database and the device key.
    var dataDirectory: String
    /// Where the sync listener binds; port 0 lets the kernel pick.
    var listen: HostPort
    /// Absolute path of the control socket (ignored when systemd passes one).
    var socketPath: String
    /// This device's name as other devices show it.
    var name: String
    /// Peers dialled without discovery (`--peer`), in command-line order, duplicates dropped.
    var staticPeers: [HostPort]
    /// `false` with `--no-mdns`: neither publish nor browse `_notesd._tcp`.
    var mdnsEnabled: Bool
    var logLevel: LogLevel
    /// The local web server; `nil` with `--no-web`.
    var web: WebConfig? = nil
}

/// Where the web server listens and what it serves (docs/web.md).
struct WebConfig: Hashable, Sendable {
    /// The web server's TCP port: the sync port's neighbour.
    static let defaultPort: UInt16 = 7480
    /// Loopback only (checked by `DaemonArguments`); port 0 lets the kernel pick.
    var listen: HostPort
    /// Absolute path of the app's files (`--web-root`).
    var root: String
}

/// How much the daemon logs, in syslog's order (RFC 5424 §6.2.1), least severe first.
enum LogLevel: String, CaseIterable, Comparable, Hashable, Sendable {
    case debug, info, notice, warning, error

    /// The syslog priority, which journald reads from a `<N>` line prefix (sd-daemon.h).
    var syslogPriority: Int {
        switch self {
        case .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        }
    }

    static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.syslogPriority > rhs.syslogPriority }
}

/// The facts about the process that the defaults depend on, gathered once by `current()` so
/// that parsing stays a pure function of its inputs.
struct ProcessEnvironment: Sendable {
    var variables: [String: String]
    var userID: UInt32
    var hostName: String
    /// The home directory from the password database, used when `$HOME` is unset.
    var passwordHome: String?
    /// For making relative `--data-dir` and `--socket` paths absolute.
    var currentDirectory: String
    /// The running binary (`/proc/self/exe`): the default web root sits beside it, in
    /// `../share/notesd/web`. `nil` when unknown.
    var executablePath: String? = nil

    static func current() -> ProcessEnvironment {
        var name = [CChar](repeating: 0, count: 256)
        let hostName = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        let passwordHome = getpwuid(getuid()).flatMap { $0.pointee.pw_dir.map { String(cString: $0) } }
        return ProcessEnvironment(
            variables: ProcessInfo.processInfo.environment, userID: getuid(), hostName: hostName,
            passwordHome: passwordHome, currentDirectory: FileManager.default.currentDirectoryPath,
            executablePath: try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    }
}
