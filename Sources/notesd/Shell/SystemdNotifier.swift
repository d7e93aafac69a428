#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control

/// `sd_notify(3)` by hand, for `Type=notify` units: each state is one datagram of
/// `KEY=VALUE` lines sent to the `AF_UNIX` socket named by `$NOTIFY_SOCKET` (a path, or an
/// abstract socket when it starts with `@`). Without `$NOTIFY_SOCKET` (not under systemd)
/// every call does nothing. See https://www.freedesktop.org/software/systemd/man/sd_notify.html
final class SystemdNotifier: Sendable {
    /// The socket address as given (`/run/systemd/notify`, `@/org/freedesktop/...`); `nil`
    /// when not under systemd.
    let socketAddress: String?
    /// `WatchdogSec=` of the unit, when systemd expects `WATCHDOG=1` pings from this process.
    let watchdogTimeout: Duration?
    /// One datagram socket for the life of the process (systemd's own code makes one per
    /// call; keeping it saves a system call per ping). `-1` when not under systemd.
    private let descriptor: Int32

    /// Reads `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID` from `environment`;
    /// `processID` is compared with `$WATCHDOG_PID` (the watchdog is meant for that process).
    init(environment: [String: String], processID: Int32 = getpid()) {
        let address = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketAddress = address
        descriptor = address == nil ? -1 : socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        watchdogTimeout = Self.watchdogTimeout(environment: environment, processID: processID)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Whether systemd listens (`$NOTIFY_SOCKET` was set).
    var isActive: Bool { socketAddress != nil }

    /// How often to send `WATCHDOG=1`: half the timeout, as sd_watchdog_enabled(3) advises.
    var watchdogPingInterval: Duration? { watchdogTimeout.map { $0 / 2 } }

    /// `READY=1`: start-up finished; systemd now considers the unit started.
    func ready(status: String? = nil) throws(SocketError) {
        try send(["READY=1"] + (status.map { ["STATUS=\(Self.oneLine($0))"] } ?? []))
    }

    /// `STOPPING=1`: clean shutdown has begun.
    func stopping() throws(SocketError) { try send(["STOPPING=1"]) }

    /// `STATUS=…`: a one-line state shown by `systemctl status`.
    func status(_ text: String) throws(SocketError) { try send(["STATUS=\(Self.oneLine(text))"]) }

    /// `WATCHDOG=1`: the process is alive; needed at least every `watchdogTimeout`. Never
    /// waits: a ping the socket cannot take now is an error (`EAGAIN`) and the next ping
    /// follows, so shutdown, which waits for a ping in progress, never waits on systemd.
    func watchdog() throws(SocketError) { try send(["WATCHDOG=1"], waiting: false) }

    /// Sends the assignments as one datagram; nothing when not under systemd. With `waiting`,
    /// waits for room when systemd's queue is full.
    func send(_ assignments: [String], waiting: Bool = true) throws(SocketError) {
        guard let socketAddress else { return }
        guard descriptor >= 0 else { throw SocketError(code: EMFILE, operation: "open a socket for", path: socketAddress) }
        let message = Array(assignments.joined(separator: "\n").utf8)
        let sent = try Self.withAddress(socketAddress) { address, length in
            message.withUnsafeBytes {
                sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | (waiting ? 0 : Int32(MSG_DONTWAIT)), address, length)
            }
        }
        guard sent == message.count else { throw SocketError(code: sent < 0 ? errno : EMSGSIZE, operation: "notify systemd at", path: socketAddress) }
    }

    /// `$WATCHDOG_USEC` as a duration, unless `$WATCHDOG_PID` names another process.
    static func watchdogTimeout(environment: [String: String], processID: Int32) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != processID { return nil }
        return .microseconds(microseconds)
    }

    /// A newline would start a new assignment, so status texts are kept to one line.
    private static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }

    /// `sockaddr_un` for a notify address: a path, or (leading `@`) an abstract name, whose
    /// first byte is NUL and whose length counts no terminator.
    static func withAddress<R>(
        _ address: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) throws(SocketError) -> R {
        guard address.hasPrefix("@") else {
            return try UnixSocketAddress.withAddress(path: address) { pointer, length in body(pointer, length) }
        }
        let name = Array(address.utf8.dropFirst())
        guard name.count <= UnixSocketAddress.maximumPathLength else {
            throw SocketError(code: ENAMETOOLONG, operation: "use notify socket", path: address)
        }
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { buffer in
            buffer[0] = 0
            buffer.baseAddress!.advanced(by: 1).copyMemory(from: name, byteCount: name.count)
        }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + 1 + name.count)
        return withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
