#if canImport(Glibc)
import Glibc
#endif

/// A peer's host (name, IPv4, or IPv6 without brackets, zone allowed) and port. Text is parsed
/// by the caller (`Control.HostPort`); resolving is `resolve()`.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Resolves to socket addresses (blocking: call it off any event loop). A numeric address
    /// is taken as it is; a name gets only the address families this machine has configured
    /// (`AI_ADDRCONFIG`). Not for numbers: with only loopback up (a laptop started before its
    /// network), `AI_ADDRCONFIG` refuses even `0.0.0.0`, and the daemon could not listen.
    public func resolve() throws(NetworkError) -> [ResolvedAddress] {
        var list: UnsafeMutablePointer<addrinfo>?
        var code = Self.getaddrinfo(host, port, flags: AI_NUMERICHOST, into: &list)
        if code == EAI_NONAME { code = Self.getaddrinfo(host, port, flags: AI_ADDRCONFIG, into: &list) }
        guard code == 0, let list else {
            throw NetworkError("cannot resolve \(host): \(String(cString: gai_strerror(code)))")
        }
        defer { freeaddrinfo(list) }
        var results: [ResolvedAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                results.append(ResolvedAddress(raw: address, length: entry.pointee.ai_addrlen))
            }
            cursor = entry.pointee.ai_next
        }
        return results
    }

    private static func getaddrinfo(_ host: String, _ port: UInt16, flags: Int32, into list: inout UnsafeMutablePointer<addrinfo>?) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = flags
        return Glibc.getaddrinfo(host, String(port), &hints, &list)
    }
}

/// A resolved socket address (IPv4 or IPv6), held by value.
public struct ResolvedAddress: Hashable, Sendable, CustomStringConvertible {
    let storage: [UInt8]

    init(raw: UnsafePointer<sockaddr>, length: socklen_t) {
        storage = Array(UnsafeRawBufferPointer(start: raw, count: Int(length)))
    }

    var family: Int32 { storage.withUnsafeBytes { Int32($0.load(as: sockaddr.self).sa_family) } }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        storage.withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }
    }

    /// `address:port` with IPv6 in brackets.
    public var description: String {
        withSockaddr { pointer, _ in Self.peerAddress(pointer)?.description ?? "?" }
    }

    /// The numeric host and port of a socket address.
    static func peerAddress(_ pointer: UnsafePointer<sockaddr>) -> PeerAddress? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let length = socklen_t(pointer.pointee.sa_family == sa_family_t(AF_INET6) ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        guard getnameinfo(pointer, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV) == 0 else {
            return nil
        }
        let hostText = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let portText = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return UInt16(portText).map { PeerAddress(host: hostText, port: $0) }
    }
}

/// A network failure in words for the log and `notesctl status`.
public struct NetworkError: Error, CustomStringConvertible, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    static func system(_ operation: String, _ code: Int32 = errno) -> NetworkError {
        NetworkError("\(operation): \(String(cString: strerror(code)))")
    }
}
