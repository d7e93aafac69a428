#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control
import Foundation

/// Everything `notesd`'s command line decides (DESIGN §9), defaults already applied.
struct DaemonConfig: Hashable, Sendable {
    /// The sync protocol's TCP port, registered nowhere: chosen to be easy to spot.
    static let defaultPort: UInt16 = 7479
    /// Device names travel in every `Hello` and `devices` answer, so they are kept short.
    static let maximumNameLength = 64

    /// Absolute path of the directory holding the database and the device key.
    var dataDirectory: String
    /// Where the sync listener binds; port 0 lets the kernel pick.
    var listen: HostAndPort
    /// Absolute path of the control socket (ignored when systemd passes one).
    var socketPath: String
    /// This device's name as other devices show it.
    var name: String
    /// Peers dialled without discovery (`--peer`), in command-line order, duplicates dropped.
    var staticPeers: [HostAndPort]
    /// `false` with `--no-mdns`: neither publish nor browse `_notesd._tcp`.
    var mdnsEnabled: Bool
    var logLevel: LogLevel
}

/// A `host:port` pair as written on the command line: a host name, an IPv4 address, or an
/// IPv6 address in brackets (`[::]:7479`, `[fe80::1%eth0]:7479`).
struct HostAndPort: Hashable, Sendable, CustomStringConvertible {
    /// The host without brackets (`::1`, `fe80::1%eth0`, `192.168.1.5`, `laptop.local`).
    var host: String
    var port: UInt16

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `text`; the error says what is wrong with it. Port 0 only when `allowsPortZero`
    /// (a listen address may ask the kernel for a port; a peer address may not).
    static func parse(_ text: String, allowsPortZero: Bool) -> Result<HostAndPort, HostAndPortError> {
        Result { () throws(HostAndPortError) -> HostAndPort in try parseOrThrow(text, allowsPortZero: allowsPortZero) }
    }

    private static func parseOrThrow(_ text: String, allowsPortZero: Bool) throws(HostAndPortError) -> HostAndPort {
        guard let colon = text.lastIndex(of: ":") else { throw .init(text: text, problem: "it has no :PORT") }
        let hostPart = text[..<colon], portPart = text[text.index(after: colon)...]
        guard !portPart.isEmpty, portPart.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portPart) else {
            throw .init(text: text, problem: "the port must be a number from \(allowsPortZero ? 0 : 1) to 65535")
        }
        guard port != 0 || allowsPortZero else { throw .init(text: text, problem: "the port must be a number from 1 to 65535") }
        let host: String
        if hostPart.hasPrefix("[") {
            guard hostPart.hasSuffix("]"), hostPart.count > 2 else { throw .init(text: text, problem: "the IPv6 address has no closing ]") }
            host = String(hostPart.dropFirst().dropLast())
            guard isIPv6Address(host) else { throw .init(text: text, problem: "\"\(host)\" is not an IPv6 address") }
        } else {
            host = String(hostPart)
            guard !host.isEmpty else { throw .init(text: text, problem: "the host is empty") }
            guard !host.contains(":") else { throw .init(text: text, problem: "write an IPv6 address in brackets, e.g. [::1]:\(port)") }
            guard host.utf8.count <= 253, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }) else {
                throw .init(text: text, problem: "\"\(host)\" is not a host name or IPv4 address")
            }
        }
        return HostAndPort(host: host, port: port)
    }

    /// An IPv6 literal, optionally with a `%zone` (an interface name or index).
    private static func isIPv6Address(_ text: String) -> Bool {
        let parts = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2, parts[1].isEmpty || parts[1].contains(where: { $0.isWhitespace || $0 == "/" }) { return false }
        var address = in6_addr()
        return inet_pton(AF_INET6, String(parts[0]), &address) == 1
    }

    /// `host:port`, IPv6 in brackets: the form `parse` reads back.
    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

struct HostAndPortError: Error, Hashable, Sendable, CustomStringConvertible {
    var text: String
    var problem: String

    var description: String { "\"\(text)\" is not HOST:PORT: \(problem)" }
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

    static func current() -> ProcessEnvironment {
        var name = [CChar](repeating: 0, count: 256)
        let hostName = gethostname(&name, name.count) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        let passwordHome = getpwuid(getuid()).flatMap { $0.pointee.pw_dir.map { String(cString: $0) } }
        return ProcessEnvironment(
            variables: ProcessInfo.processInfo.environment, userID: getuid(), hostName: hostName,
            passwordHome: passwordHome, currentDirectory: FileManager.default.currentDirectoryPath)
    }
}
