#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A failed socket call: the errno, the call and the path, for messages that say what to do.
public struct SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Int32
    public let operation: String
    public let path: String

    public init(code: Int32, operation: String, path: String) {
        self.code = code
        self.operation = operation
        self.path = path
    }

    public var reason: String { String(cString: strerror(code)) }

    public var description: String { "\(operation) \(path): \(reason)" }
}

/// A connected Unix stream socket; the one owner of its file descriptor, closed in `deinit`.
/// Used from one thread at a time.
public final class UnixStreamSocket {
    public let fileDescriptor: Int32
    public let path: String
    private var isOpen = true
    /// Reused by every `receive`, so reading a large answer does not allocate per chunk.
    private var readBuffer = [UInt8](repeating: 0, count: 65536)

    /// Takes ownership of a connected descriptor (e.g. one a server accepted).
    public init(adopting fileDescriptor: Int32, path: String) {
        self.fileDescriptor = fileDescriptor
        self.path = path
    }

    deinit { close() }

    /// Connects to the socket at `path`.
    public static func connect(path: String) throws(SocketError) -> UnixStreamSocket {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError(code: errno, operation: "socket for", path: path) }
        let connection = UnixStreamSocket(adopting: descriptor, path: path)
        let result = try UnixSocketAddress.withAddress(path: path) { address, length in
            Glibc.connect(descriptor, address, length)
        }
        guard result == 0 else { throw SocketError(code: errno, operation: "connect to", path: path) }
        return connection
    }

    /// Writes all of `data`. `MSG_NOSIGNAL`: a closed peer is an `EPIPE` error, not a signal.
    public func send(_ data: Data) throws(SocketError) {
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { buffer in
                Glibc.send(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw SocketError(code: errno, operation: "write to", path: path)
            }
            offset += written
        }
    }

    /// Reads what is available, up to `maximumLength` bytes, waiting at most `timeout`
    /// (forever when `nil`). `[]` means end of stream; `nil` means the timeout passed.
    public func receive(maximumLength: Int = 65536, timeout: Duration? = nil) throws(SocketError) -> [UInt8]? {
        if let timeout {
            var request = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
            let deadline = ContinuousClock.now + timeout
            while true {
                let remaining = ContinuousClock.now.duration(to: deadline)
                let milliseconds = max(0, Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000))
                let ready = poll(&request, 1, milliseconds)
                if ready > 0 { break }
                if ready == 0 { return nil }
                if errno != EINTR { throw SocketError(code: errno, operation: "wait for", path: path) }
            }
        }
        if readBuffer.count < maximumLength { readBuffer = [UInt8](repeating: 0, count: maximumLength) }
        while true {
            let count = readBuffer.withUnsafeMutableBytes { recv(fileDescriptor, $0.baseAddress, maximumLength, 0) }
            if count >= 0 { return Array(readBuffer[..<count]) }
            if errno != EINTR { throw SocketError(code: errno, operation: "read from", path: path) }
        }
    }

    public func close() {
        guard isOpen else { return }
        isOpen = false
        _ = Glibc.close(fileDescriptor)
    }
}

/// `sockaddr_un` for a path, for `connect` here and `bind` in the daemon.
public enum UnixSocketAddress {
    /// `sun_path` holds 108 bytes on Linux, the terminating NUL included.
    public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Calls `body` with the address of `path`; `ENAMETOOLONG` when it does not fit.
    public static func withAddress<R>(
        path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SocketError) -> R
    ) throws(SocketError) -> R {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, !bytes.contains(0) else {
            throw SocketError(code: EINVAL, operation: "use socket path", path: path)
        }
        guard bytes.count <= maximumPathLength else {
            throw SocketError(code: ENAMETOOLONG, operation: "use socket path", path: path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1)
        return try withUnsafePointer(to: &address) { pointer throws(SocketError) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SocketError) -> R in
                try body(address, length)
            }
        }
    }
}
