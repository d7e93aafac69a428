#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control
import Foundation

/// The web server's listening socket, bound before the engine starts (like the control
/// socket) so that the port is known to `status` and `web.loginToken` from the start.
struct WebListener: Sendable {
    let fileDescriptor: Int32
    /// Where it is bound (the real port, after a fallback or port 0).
    let address: HostPort
    /// The requested port was in use, so the kernel chose one.
    let fellBack: Bool

    enum BindError: Error, CustomStringConvertible {
        case failed(address: HostPort, operation: String, code: Int32)

        var description: String {
            switch self {
            case .failed(let address, let operation, let code):
                "cannot \(operation) the web server's socket on \(address): \(String(cString: strerror(code))); pass --web-listen HOST:PORT or --no-web"
            }
        }
    }

    /// Binds `requested`; when its port is taken (another notesd of another user, say),
    /// binds a free port on the same address instead, as the sync listener does.
    static func bind(_ requested: HostPort, log: Log) throws(BindError) -> WebListener {
        do {
            return try bindOnce(requested, fellBack: false)
        } catch .failed(_, "bind", EADDRINUSE) where requested.port != 0 {
            log.warning("the web port \(requested) is in use (another notesd?); serving the web app on a free port instead, see notesctl status")
            return try bindOnce(HostPort(host: requested.host, port: 0), fellBack: true)
        }
    }

    private static func bindOnce(_ address: HostPort, fellBack: Bool) throws(BindError) -> WebListener {
        let isIPv6 = address.host.contains(":")
        let descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw .failed(address: address, operation: "create", code: errno) }
        var yes: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var status: Int32
        if isIPv6 {
            _ = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &yes, socklen_t(MemoryLayout<Int32>.size))
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = address.port.bigEndian
            _ = inet_pton(AF_INET6, address.host, &socketAddress.sin6_addr)
            status = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = address.port.bigEndian
            _ = inet_pton(AF_INET, address.host, &socketAddress.sin_addr)
            status = withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard status == 0 else {
            let code = errno
            close(descriptor)
            throw .failed(address: address, operation: "bind", code: code)
        }
        guard listen(descriptor, 512) == 0 else {
            let code = errno
            close(descriptor)
            throw .failed(address: address, operation: "listen on", code: code)
        }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        let port = withUnsafePointer(to: &bound) { pointer -> UInt16 in
            isIPv6
                ? pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
                : pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return WebListener(fileDescriptor: descriptor, address: HostPort(host: address.host, port: port), fellBack: fellBack)
    }
}
