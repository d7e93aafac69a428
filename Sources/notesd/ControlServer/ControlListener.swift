#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control
import Synchronization

/// The control socket could not be set up.
enum ControlSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A daemon answered on the socket path: never take a live socket over.
    case alreadyServing(path: String)
    /// Something other than a socket is at the path.
    case notASocket(path: String)
    /// The socket's directory sits in a directory anyone can write to (like `/tmp`) and is
    /// not private to this user, so another user could have prepared it.
    case unsafeDirectory(path: String, ownerUserID: UInt32, mode: UInt32)
    case directory(FileSystemError)
    case socket(SocketError)

    var description: String {
        switch self {
        case .alreadyServing(let path):
            "another notesd is already serving \(path); stop it, or give this one its own --socket and --data-dir"
        case .notASocket(let path):
            "\(path) exists and is not a socket; remove it or pass another --socket"
        case .unsafeDirectory(let path, let owner, let mode):
            "the control socket's directory \(path) is not private to this user (owner uid \(owner), mode \(String(mode, radix: 8))); remove it, or pass --socket in a directory only you can use"
        case .directory(let error):
            error.description
        case .socket(let error):
            "cannot \(error.operation) \(error.path): \(error.reason)"
        }
    }
}

/// The listening control socket: bound here (and unlinked again by `close()`), or passed in
/// by systemd (left in place). Non-blocking and close-on-exec either way. The
/// `ControlServer` owns it once started.
final class ControlListener: Sendable {
    let fileDescriptor: Int32
    /// The socket's path (for an activated socket, as the kernel reports it).
    let path: String
    /// For an activated socket whose file the administrator made group-writable: that group
    /// (see `ControlAccessPolicy`).
    let accessGroupID: UInt32?
    /// Device and inode of the socket file this process bound, so `close()` removes that file
    /// only, never one a later daemon bound at the same path. `nil` for an activated socket.
    private let boundFile: (device: UInt64, inode: UInt64)?
    private let open = Atomic<Bool>(true)

    private init(fileDescriptor: Int32, path: String, accessGroupID: UInt32?, boundFile: (device: UInt64, inode: UInt64)?) {
        self.fileDescriptor = fileDescriptor
        self.path = path
        self.accessGroupID = accessGroupID
        self.boundFile = boundFile
    }

    deinit { close() }

    /// Binds and listens at `path` (protocol spec, "Socket path"): creates a missing parent
    /// directory with mode 0700; in a world-writable directory such as `/tmp`, insists the
    /// parent is this user's and private; replaces a stale socket file no daemon answers
    /// on, and refuses a live one; leaves the socket file with mode 0600.
    static func bind(path: String) throws(ControlSocketError) -> ControlListener {
        try prepareDirectory(of: path)
        try removeStaleSocket(at: path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw .socket(SocketError(code: errno, operation: "create a socket for", path: path)) }
        do throws(SocketError) {
            let bound = try UnixSocketAddress.withAddress(path: path) { address, length in Glibc.bind(descriptor, address, length) }
            guard bound == 0 else { throw SocketError(code: errno, operation: "bind", path: path) }
        } catch {
            Glibc.close(descriptor)
            throw .socket(error)
        }
        // chmod before listen: until `listen`, connecting is refused, so nobody can get in
        // through a wider mode the umask left for a moment.
        guard chmod(path, 0o600) == 0, listen(descriptor, SOMAXCONN) == 0, let status = FileSystem.linkStatus(path) else {
            let error = SocketError(code: errno, operation: "listen on", path: path)
            unlink(path)
            Glibc.close(descriptor)
            throw .socket(error)
        }
        return ControlListener(
            fileDescriptor: descriptor, path: path, accessGroupID: nil,
            boundFile: (device: UInt64(status.st_dev), inode: UInt64(status.st_ino)))
    }

    /// Takes a listening socket systemd passed (`SocketActivation.controlSocket(among:)`).
    /// Its file's mode is the unit's `SocketMode=`; a group-writable file opens the socket to
    /// its group.
    static func adopt(_ activated: ActivatedSocket) throws(ControlSocketError) -> ControlListener {
        let descriptor = activated.fileDescriptor
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw .socket(SocketError(code: errno, operation: "use the socket systemd passed as", path: "descriptor \(descriptor) (\(activated.name))"))
        }
        let path = boundPath(of: descriptor) ?? "descriptor \(descriptor) (\(activated.name))"
        var groupID: UInt32?
        if let status = FileSystem.linkStatus(path), status.st_mode & S_IWGRP != 0 { groupID = status.st_gid }
        return ControlListener(fileDescriptor: descriptor, path: path, accessGroupID: groupID, boundFile: nil)
    }

    /// Stops listening; removes the socket file if this process bound it and it is still
    /// the same file. Safe to call more than once.
    func close() {
        guard open.exchange(false, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(fileDescriptor)
        if let boundFile, let status = FileSystem.linkStatus(path),
           (UInt64(status.st_dev), UInt64(status.st_ino)) == boundFile {
            unlink(path)
        }
    }

    // MARK: Steps of `bind`

    private static func prepareDirectory(of path: String) throws(ControlSocketError) {
        let directory = FileSystem.parent(of: path)
        if FileSystem.linkStatus(directory) == nil {
            guard errno == ENOENT else {
                throw .directory(FileSystemError(code: errno, operation: "use the control socket's directory", path: directory, hint: nil))
            }
            do {
                try FileSystem.createDirectories(directory, mode: 0o700, operation: "create the control socket's directory", hint: "create it yourself or pass --socket PATH")
            } catch {
                throw .directory(error)
            }
        }
        guard let status = FileSystem.linkStatus(directory) else {
            throw .directory(FileSystemError(code: errno, operation: "use the control socket's directory", path: directory, hint: nil))
        }
        // In a directory anyone may write to (`/tmp/notesd-$UID` in `/tmp`), the directory
        // must be this user's own and closed to others: otherwise someone else made it first.
        if let shared = FileSystem.linkStatus(FileSystem.parent(of: directory)), shared.st_mode & S_IWOTH != 0, directory != "/" {
            guard FileSystem.isDirectory(status), status.st_uid == geteuid(), status.st_mode & 0o077 == 0 else {
                throw .unsafeDirectory(path: directory, ownerUserID: status.st_uid, mode: UInt32(status.st_mode & 0o7777))
            }
        }
    }

    /// A socket file at `path` that nobody answers on is left over from a daemon that did
    /// not shut down cleanly: remove it. One that answers belongs to a running daemon.
    private static func removeStaleSocket(at path: String) throws(ControlSocketError) {
        guard let status = FileSystem.linkStatus(path) else { return }
        guard status.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw .socket(SocketError(code: errno, operation: "create a socket for", path: path)) }
        defer { Glibc.close(probe) }
        let connected = try? UnixSocketAddress.withAddress(path: path) { address, length in Glibc.connect(probe, address, length) }
        let connectError = errno
        if connected == 0 { throw .alreadyServing(path: path) }
        guard connectError == ECONNREFUSED || connectError == ENOENT else {
            throw .socket(SocketError(code: connectError, operation: "check for a running daemon at", path: path))
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw .socket(SocketError(code: errno, operation: "remove the stale socket", path: path))
        }
    }

    /// The path a listening Unix socket is bound to (`getsockname`).
    private static func boundPath(of descriptor: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
