#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Handing an open file descriptor to the process at the other end of a Unix socket
/// (`SCM_RIGHTS`, unix(7)): `notesctl backup FILE` opens FILE itself and gives the daemon the
/// descriptor, so the daemon writes where only the user may (docs/control-protocol.md, `backup`).
///
/// The `CMSG_*` macros do not reach Swift; these are their definitions for Linux.
public enum DescriptorPassing {
    /// The most descriptors one read accepts; more are closed and the read reports truncation.
    public static let maximumDescriptors = 4

    private static func align(_ length: Int) -> Int {
        let word = MemoryLayout<Int>.size
        return (length + word - 1) & ~(word - 1)
    }

    private static var headerLength: Int { align(MemoryLayout<cmsghdr>.size) }
    private static func space(_ length: Int) -> Int { headerLength + align(length) }
    private static func length(_ length: Int) -> Int { headerLength + length }

    /// Sends `bytes` (at least one) with `descriptor` attached to the first of them. Returns
    /// how many bytes went, or -1 with `errno` set.
    public static func send(socket: Int32, bytes: UnsafeRawBufferPointer, descriptor: Int32) -> Int {
        let controlLength = space(MemoryLayout<Int32>.size)
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlLength, alignment: MemoryLayout<Int>.alignment)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: controlLength)
        let header = control.assumingMemoryBound(to: cmsghdr.self)
        header.pointee.cmsg_len = length(MemoryLayout<Int32>.size)
        header.pointee.cmsg_level = SOL_SOCKET
        header.pointee.cmsg_type = Int32(SCM_RIGHTS)
        (control + headerLength).storeBytes(of: descriptor, as: Int32.self)
        var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: bytes.baseAddress), iov_len: bytes.count)
        return withUnsafeMutablePointer(to: &vector) { vectorPointer in
            var message = msghdr()
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = control
            message.msg_controllen = controlLength
            return sendmsg(socket, &message, Int32(MSG_NOSIGNAL))
        }
    }

    /// What one `recvmsg` read.
    public struct Received {
        /// Bytes read; 0 is end of stream, -1 an error (`errno` set).
        public var count: Int
        /// Descriptors that came with them (close-on-exec), now the caller's to close.
        public var descriptors: [Int32]
        /// More descriptors were sent than fit; those were closed by the kernel or here.
        public var truncated: Bool
    }

    /// `recv` that also takes descriptors sent with the bytes.
    public static func receive(socket: Int32, into buffer: UnsafeMutableRawBufferPointer, flags: Int32) -> Received {
        let controlLength = space(MemoryLayout<Int32>.size * maximumDescriptors)
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlLength, alignment: MemoryLayout<Int>.alignment)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: controlLength)
        var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        var message = msghdr()
        let count = withUnsafeMutablePointer(to: &vector) { vectorPointer in
            message.msg_iov = vectorPointer
            message.msg_iovlen = 1
            message.msg_control = control
            message.msg_controllen = controlLength
            return recvmsg(socket, &message, flags | Int32(MSG_CMSG_CLOEXEC))
        }
        guard count >= 0 else { return Received(count: count, descriptors: [], truncated: false) }
        var descriptors: [Int32] = []
        var offset = 0
        while offset + headerLength <= message.msg_controllen {
            let header = (control + offset).assumingMemoryBound(to: cmsghdr.self).pointee
            guard header.cmsg_len >= headerLength, offset + header.cmsg_len <= message.msg_controllen else { break }
            if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                let number = (header.cmsg_len - headerLength) / MemoryLayout<Int32>.size
                for index in 0..<number {
                    descriptors.append((control + offset + headerLength + index * MemoryLayout<Int32>.size).loadUnaligned(as: Int32.self))
                }
            }
            offset += align(header.cmsg_len)
        }
        return Received(count: count, descriptors: descriptors, truncated: message.msg_flags & Int32(MSG_CTRUNC) != 0)
    }
}

extension UnixStreamSocket {
    /// Writes all of `data` with `descriptor` attached to its first byte (the daemon takes it
    /// with the request line it starts).
    public func send(_ data: Data, passing descriptor: Int32) throws(SocketError) {
        precondition(!data.isEmpty, "a descriptor travels with at least one byte")
        var sent = -1
        while sent < 0 {
            sent = data.withUnsafeBytes { DescriptorPassing.send(socket: fileDescriptor, bytes: $0, descriptor: descriptor) }
            if sent < 0, errno != EINTR { throw SocketError(code: errno, operation: "write to", path: path) }
        }
        if sent < data.count { try send(data.subdata(in: sent..<data.count)) }
    }
}
