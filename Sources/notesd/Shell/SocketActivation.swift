#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One socket systemd passed in, already listening (a `.socket` unit with `Accept=no`).
struct ActivatedSocket: Hashable, Sendable {
    let fileDescriptor: Int32
    /// `FileDescriptorName=` of the socket unit; systemd's default is the unit's name.
    let name: String
}

/// `$LISTEN_FDS` was set but is not usable.
struct SocketActivationError: Error, Hashable, Sendable, CustomStringConvertible {
    var description: String
}

/// Socket activation as sd_listen_fds_with_names(3) does it: systemd passes `$LISTEN_FDS`
/// descriptors starting at 3, `$LISTEN_PID` names the process they are for, and
/// `$LISTEN_FDNAMES` names them, separated by `:`.
/// See https://www.freedesktop.org/software/systemd/man/sd_listen_fds.html
enum SocketActivation {
    /// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
    static let firstDescriptor: Int32 = 3
    /// The name the daemon's socket unit gives the control socket (`FileDescriptorName=control`).
    static let controlSocketName = "control"
    static let variables = ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"]

    /// The sockets passed to `processID`; `[]` when none were, or they were meant for
    /// another process (a parent that did not clear the variables).
    static func parse(environment: [String: String], processID: Int32) throws(SocketActivationError) -> [ActivatedSocket] {
        guard let pidText = environment["LISTEN_PID"], let countText = environment["LISTEN_FDS"] else { return [] }
        guard let pid = Int32(pidText), pid > 0 else { throw SocketActivationError(description: "$LISTEN_PID is \"\(pidText)\", not a process id") }
        guard pid == processID else { return [] }
        guard let count = Int32(countText), count >= 0, count <= Int32.max - firstDescriptor else {
            throw SocketActivationError(description: "$LISTEN_FDS is \"\(countText)\", not a number of descriptors")
        }
        var names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        if names.count != Int(count) {
            // Like sd_listen_fds_with_names: names that do not match the count are not used.
            names = Array(repeating: "unknown", count: Int(count))
        }
        return (0..<count).map { ActivatedSocket(fileDescriptor: firstDescriptor + $0, name: names[Int($0)]) }
    }

    /// Reads this process's activation variables, marks every passed descriptor close-on-exec
    /// (systemd passes them inheritable) and removes the variables from the environment, so
    /// that nothing started later takes them for its own.
    static func takeFromEnvironment(_ environment: [String: String]) throws(SocketActivationError) -> [ActivatedSocket] {
        defer { for name in variables { unsetenv(name) } }
        let sockets = try parse(environment: environment, processID: getpid())
        try markCloseOnExec(sockets)
        return sockets
    }

    static func markCloseOnExec(_ sockets: [ActivatedSocket]) throws(SocketActivationError) {
        for socket in sockets {
            let flags = fcntl(socket.fileDescriptor, F_GETFD)
            guard flags >= 0, fcntl(socket.fileDescriptor, F_SETFD, flags | FD_CLOEXEC) == 0 else {
                throw SocketActivationError(description: "systemd passed descriptor \(socket.fileDescriptor) (\(socket.name)) but it is not open: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The control socket among `sockets`: the one named `control`, else the first listening
    /// Unix stream socket (a unit that did not name its sockets).
    static func controlSocket(among sockets: [ActivatedSocket]) -> ActivatedSocket? {
        let candidates = sockets.filter { isListeningUnixStream($0.fileDescriptor) }
        return candidates.first { $0.name == controlSocketName } ?? candidates.first
    }

    /// Whether `descriptor` is an `AF_UNIX`, `SOCK_STREAM` socket in the listening state.
    static func isListeningUnixStream(_ descriptor: Int32) -> Bool {
        func option(_ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(descriptor, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        return option(SO_DOMAIN) == AF_UNIX && option(SO_TYPE) == Int32(SOCK_STREAM.rawValue) && option(SO_ACCEPTCONN) == 1
    }
}
