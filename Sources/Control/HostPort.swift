#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A `host:port` pair as people write it (command line, `notesctl connect`, `join --address`): a host name, an IPv4 address, or an
/// IPv6 address in brackets (`[::]:7479`, `[fe80::1%eth0]:7479`).
public struct HostPort: Hashable, Sendable, CustomStringConvertible {
    /// The host without brackets (`::1`, `fe80::1%eth0`, `192.168.1.5`, `laptop.local`).
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `text`; the error says what is wrong with it. Port 0 only when `allowsPortZero`
    /// (a listen address may ask the kernel for a port; a peer address may not).
    public static func parse(_ text: String, allowsPortZero: Bool) -> Result<HostPort, HostPortError> {
        Result { () throws(HostPortError) -> HostPort in try parseOrThrow(text, allowsPortZero: allowsPortZero) }
    }

    private static func parseOrThrow(_ text: String, allowsPortZero: Bool) throws(HostPortError) -> HostPort {
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
        return HostPort(host: host, port: port)
    }

    /// An IPv6 literal, optionally with a `%zone` (an interface name or index).
    private static func isIPv6Address(_ text: String) -> Bool {
        let parts = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2, parts[1].isEmpty || parts[1].contains(where: { $0.isWhitespace || $0 == "/" }) { return false }
        var address = in6_addr()
        return inet_pton(AF_INET6, String(parts[0]), &address) == 1
    }

    /// `host:port`, IPv6 in brackets: the form `parse` reads back.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

public struct HostPortError: Error, Hashable, Sendable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "\"\(text)\" is not HOST:PORT: \(problem)" }
}

