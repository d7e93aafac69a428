import Foundation
import Merge
import Peer
import Synchronization

/// The household secret (docs/security.md): a random 32-byte key, the PSK of every household
/// connection. Kept in `household.key` (mode 0600) next to the device key, never in the
/// database (which is replicated). Readable from any thread: the network asks for it at each
/// accept, the engine replaces it after `join`.
public final class HouseholdKey: Sendable {
    public static let fileName = "household.key"

    private let current: Mutex<PreSharedKey>
    public let path: String

    /// Loads the key, or mints one: a new device is a household of one.
    public init(directory: String) throws {
        path = directory + "/" + Self.fileName
        if FileManager.default.fileExists(atPath: path) {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let permissions = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0
            guard permissions & 0o077 == 0 else {
                throw EngineError.setup("\(path) is readable by other users; run `chmod 600 \(path)` (and check who could have read it)")
            }
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            guard let key = PreSharedKey(bytes: bytes) else {
                throw EngineError.setup("\(path) is not a 32-byte household key; move it aside to start a new household, or restore it from a backup")
            }
            current = Mutex(key)
        } else {
            let key = PreSharedKey.generate()
            try Self.write(key, to: path)
            current = Mutex(key)
        }
    }

    public var key: PreSharedKey { current.withLock { $0 } }

    /// The household's public name: a hash of the key, so devices can tell households apart
    /// without revealing the key.
    public var householdID: String {
        Hex.encode(Sodium.hash256(Array("notesd household id v1".utf8) + key.bytes).bytes.prefix(16))
    }

    /// Replaces the key (after joining another household), on disk first.
    public func replace(with key: PreSharedKey) throws {
        try Self.write(key, to: path)
        current.withLock { $0 = key }
    }

    private static func write(_ key: PreSharedKey, to path: String) throws {
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(key.bytes), attributes: [.posixPermissions: 0o600]),
              rename(temporary, path) == 0 else {
            throw EngineError.setup("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// Failures while setting the engine up, said so a person can fix them.
public enum EngineError: Error, CustomStringConvertible {
    case setup(String)

    public var description: String {
        switch self {
        case .setup(let message): message
        }
    }
}
