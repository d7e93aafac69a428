import Foundation

/// The receiving end of `sd_notify`: a Unix datagram socket at `path`, what systemd's
/// `$NOTIFY_SOCKET` names. notesd sends `READY=1` there once it serves, so the time from
/// spawning it to that datagram is its start-up time as systemd sees it.
final class NotifySocket {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        unlink(path)
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw BenchError("cannot create a datagram socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw BenchError("notify socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw BenchError("cannot bind the notify socket \(path): \(reason)")
        }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }

    /// Waits for a datagram carrying `READY=1` and returns when it arrived; nil after `timeout`.
    func waitForReady(timeout: Duration) -> ContinuousClock.Instant? {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while ContinuousClock.now < deadline {
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(1, Measure.milliseconds(ContinuousClock.now.duration(to: deadline))))
            guard poll(&request, 1, remaining) > 0 else { continue }
            let arrived = ContinuousClock.now
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { continue }
            let message = String(decoding: buffer[..<count], as: UTF8.self)
            if message.split(separator: "\n").contains("READY=1") { return arrived }
        }
        return nil
    }
}
