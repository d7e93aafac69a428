#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The key file: the thin I/O shell around `DeviceIdentity`.
///
/// Format (53 bytes): the line `notesd-device-key-v1\n`, then the 32-byte X25519 private key.
/// The file must be a regular file with no group or other permissions (mode 0600 or stricter);
/// anything else is refused with an error naming the file and the fix.
extension DeviceIdentity {
    public static let keyFileName = "device.key"
    static let keyFileMagic = Array("notesd-device-key-v1\n".utf8)

    /// Loads `directory/device.key`, or creates it (mode 0600) with a new identity if absent.
    public static func loadOrCreate(inDirectory directory: String) throws(IdentityFileError) -> DeviceIdentity {
        let path = directory.hasSuffix("/") ? directory + keyFileName : directory + "/" + keyFileName
        do {
            return try load(from: path)
        } catch let error where error.problem == .missing {
            let identity = DeviceIdentity.generate()
            do {
                try identity.save(to: path)
                return identity
            } catch let error where error.problem == .alreadyExists {
                // Another process created it first: use theirs, so there is one identity.
                return try load(from: path)
            }
        }
    }

    /// Loads an existing key file, checking its type, permissions and contents.
    public static func load(from path: String) throws(IdentityFileError) -> DeviceIdentity {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            let code = errno
            throw IdentityFileError(path: path, problem: code == ENOENT ? .missing : code == ELOOP ? .notARegularFile : .system(operation: "open", errno: code))
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw IdentityFileError(path: path, problem: .system(operation: "stat", errno: errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw IdentityFileError(path: path, problem: .notARegularFile) }
        let permissions = info.st_mode & 0o777
        guard permissions & 0o077 == 0 else { throw IdentityFileError(path: path, problem: .readableByOthers(mode: permissions)) }
        guard info.st_uid == getuid() || getuid() == 0 else {
            throw IdentityFileError(path: path, problem: .ownedByAnotherUser(uid: info.st_uid))
        }

        let expectedLength = keyFileMagic.count + 32
        var contents = [UInt8](repeating: 0, count: expectedLength + 1)
        var filled = 0
        while filled < contents.count {
            let count = contents.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + filled, $0.count - filled) }
            if count < 0 {
                if errno == EINTR { continue }
                throw IdentityFileError(path: path, problem: .system(operation: "read", errno: errno))
            }
            if count == 0 { break }
            filled += count
        }
        guard filled == expectedLength else {
            throw IdentityFileError(path: path, problem: .malformed("\(filled) bytes long, expected \(expectedLength)"))
        }
        guard Array(contents.prefix(keyFileMagic.count)) == keyFileMagic else {
            throw IdentityFileError(path: path, problem: .malformed("it does not start with the notesd-device-key-v1 header"))
        }
        // Checked above: exactly 32 key bytes follow the header.
        return DeviceIdentity(keyPair: X25519KeyPair(privateKey: Array(contents[keyFileMagic.count..<expectedLength])))
    }

    /// Writes a new key file at `path` (mode 0600), never replacing an existing one.
    ///
    /// The key is written to a temporary file, flushed, then hard-linked into place: the name
    /// appears only with complete contents, and `link` fails if the name already exists.
    public func save(to path: String) throws(IdentityFileError) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            throw IdentityFileError(path: path, problem: code == ENOENT ? .missingDirectory : .system(operation: "create", errno: code))
        }
        defer { unlink(temporary) }
        let contents = Self.keyFileMagic + keyPair.privateKey
        var written = 0
        while written < contents.count {
            let count = contents.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(descriptor)
                throw IdentityFileError(path: path, problem: .system(operation: "write", errno: code))
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let code = errno
            close(descriptor)
            throw IdentityFileError(path: path, problem: .system(operation: "fsync", errno: code))
        }
        close(descriptor)
        guard link(temporary, path) == 0 else {
            let code = errno
            throw IdentityFileError(path: path, problem: code == EEXIST ? .alreadyExists : .system(operation: "link", errno: code))
        }
        syncDirectory(containing: path)
    }

    /// Makes the new directory entry durable; failure only risks losing a just-created key.
    private func syncDirectory(containing path: String) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let descriptor = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}

/// Why the device key file could not be used; the message names the file and what to do.
public struct IdentityFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Problem: Equatable, Sendable {
        /// No file at the path (`loadOrCreate` then creates one).
        case missing
        /// The directory that should hold the key does not exist.
        case missingDirectory
        /// `save` found a file already there and left it alone.
        case alreadyExists
        /// A symlink, directory or device instead of a regular file.
        case notARegularFile
        /// Group or others have some permission on the file; `mode` is its permission bits.
        case readableByOthers(mode: mode_t)
        /// The file belongs to another user.
        case ownedByAnotherUser(uid: uid_t)
        /// Wrong size or header.
        case malformed(String)
        /// A system call failed.
        case system(operation: String, errno: Int32)
    }

    public let path: String
    public let problem: Problem

    public var description: String {
        let replace = "restore it from a backup, or move it away so notesd creates a new identity (this device must then be added to the household again)"
        return switch problem {
        case .missing: "device key \(path) does not exist"
        case .missingDirectory: "cannot create device key \(path): its directory does not exist; create the data directory first"
        case .alreadyExists: "device key \(path) already exists; refusing to overwrite it"
        case .notARegularFile: "device key \(path) is not a regular file (a symlink, directory or device); \(replace)"
        case .readableByOthers(let mode):
            "device key \(path) is accessible to group or others (mode \(String(mode, radix: 8))); refusing to use it. Run: chmod 600 \(path) — and if others may have read it, move it away so notesd creates a new identity"
        case .ownedByAnotherUser(let uid):
            "device key \(path) belongs to another user (uid \(uid)); run notesd as that user, or \(replace)"
        case .malformed(let detail): "device key \(path) is malformed (\(detail)); \(replace)"
        case .system(let operation, let code):
            "cannot \(operation) device key \(path): \(String(cString: strerror(code)))"
        }
    }
}
