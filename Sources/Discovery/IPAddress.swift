import Glibc

/// One numeric IP address of a peer. IPv6 link-local addresses (fe80::/10) carry the index of
/// the interface they were seen on, because they mean nothing without it.
public struct IPAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    public enum Family: Int, Sendable, Hashable, Comparable {
        case ipv4 = 4
        case ipv6 = 6

        public static func < (lhs: Family, rhs: Family) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public let family: Family
    /// The address in its canonical numeric form (`10.0.0.2`, `fe80::1`), without a scope.
    public let ip: String
    /// The interface index for an IPv6 link-local address; `nil` for every other address.
    public let interfaceIndex: Int32?

    /// Parses a numeric address; `nil` for anything else (a name, garbage, a scoped string).
    /// - Parameter interfaceIndex: the interface the address was seen on; kept only when the
    ///   address is IPv6 link-local.
    public init?(numeric text: String, interfaceIndex: Int32? = nil) {
        guard text.utf8.count <= Int(INET6_ADDRSTRLEN) else { return nil }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            family = .ipv4
            ip = Self.format(AF_INET, &v4)
            self.interfaceIndex = nil
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            family = .ipv6
            ip = Self.format(AF_INET6, &v6)
            let isLinkLocal = v6.__in6_u.__u6_addr8.0 == 0xFE && v6.__in6_u.__u6_addr8.1 & 0xC0 == 0x80
            self.interfaceIndex = isLinkLocal ? interfaceIndex : nil
        } else {
            return nil
        }
    }

    /// Reads an IPv4 or IPv6 socket address (as `getaddrinfo` returns); `nil` for other families.
    init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in.self)
            self.init(numeric: withUnsafePointer(to: v4.sin_addr) { Self.format(AF_INET, $0) })
        case AF_INET6:
            let v6 = UnsafeRawPointer(socketAddress).loadUnaligned(as: sockaddr_in6.self)
            self.init(numeric: withUnsafePointer(to: v6.sin6_addr) { Self.format(AF_INET6, $0) },
                      interfaceIndex: Int32(bitPattern: v6.sin6_scope_id))
        default:
            return nil
        }
    }

    /// The address as `getaddrinfo` and `connect` want it: `fe80::1%3` for link-local.
    public var description: String {
        if let interfaceIndex { "\(ip)%\(interfaceIndex)" } else { ip }
    }

    public static func < (lhs: IPAddress, rhs: IPAddress) -> Bool {
        (lhs.family, lhs.ip, lhs.interfaceIndex ?? -1) < (rhs.family, rhs.ip, rhs.interfaceIndex ?? -1)
    }

    private static func format(_ family: Int32, _ address: UnsafeRawPointer) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(family, address, &buffer, socklen_t(buffer.count)) != nil else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
