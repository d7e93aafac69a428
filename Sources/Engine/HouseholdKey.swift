import Foundation
import Merge
import Peer
import Synchronization

/// The household secret (docs/security.md): a random 32-byte key, the PSK of every household
/// connection. Kept in `household.key` (mode 0600) next to the device key, never in the
/// database (which is replicated). Readable from any thread: the network asks for it at each
/// accept, the engine replaces it after `join` and at each key rotation.
///
/// After a rotation the device holds the new key (`current`) and, until every member holds
/// it, the keys before it (`previous`), which it still accepts from peers that have not
/// caught up. The household's id stays the one of the key the household started with.
public final class HouseholdKey: Sendable {
    public static let fileName = "household.key"

    /// A key this device holds, with its place in the household's sequence of keys.
    public struct Held: Sendable {
        public let key: PreSharedKey
        public let version: KeyVersion

        init(_ key: PreSharedKey, epoch: UInt64) {
            self.key = key
            version = KeyVersion(epoch: epoch, fingerprint: key.fingerprint)
        }
    }

    struct State: Sendable {
        var householdID: String
        var current: Held
        var previous: [Held]

        /// The form release 0.1 wrote and reads: the bare 32 bytes of a never-rotated key.
        var isFirstKey: Bool { current.version.epoch == 0 && previous.isEmpty && householdID == HouseholdKey.firstKeyID(current.key) }
    }

    private let state: Mutex<State>
    public let path: String

    /// Loads the keys, or mints one: a new device is a household of one.
    public init(directory: String) throws {
        path = directory + "/" + Self.fileName
        if FileManager.default.fileExists(atPath: path) {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            let permissions = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0
            guard permissions & 0o077 == 0 else {
                throw EngineError.setup("\(path) is readable by other users; run `chmod 600 \(path)` (and check who could have read it)")
            }
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            guard let loaded = Self.parse(bytes) else {
                throw EngineError.setup("\(path) is not a notesd household key file; move it aside to start a new household, or restore it from a backup")
            }
            state = Mutex(loaded)
        } else {
            let key = PreSharedKey.generate()
            let fresh = State(householdID: Self.firstKeyID(key), current: Held(key, epoch: 0), previous: [])
            try Self.write(fresh, to: path)
            state = Mutex(fresh)
        }
    }

    /// The key this device dials with and offers first.
    public var key: PreSharedKey { state.withLock { $0.current.key } }
    public var current: Held { state.withLock { $0.current } }
    /// Every key held, newest first: what an inbound handshake may prove.
    public var held: [Held] { state.withLock { [$0.current] + $0.previous } }

    /// The household's lasting public name: a hash of the key it started with, so devices can
    /// tell households apart without revealing any key. Rotation does not change it.
    public var householdID: String { state.withLock { $0.householdID } }

    static func firstKeyID(_ key: PreSharedKey) -> String {
        Hex.encode(Sodium.hash256(Array("notesd household id v1".utf8) + key.bytes).bytes.prefix(16))
    }

    /// Joins another household: its current key at `epoch`, and its id when the inviter said
    /// it (a household that never rotated is named after its key).
    public func join(_ key: PreSharedKey, epoch: UInt64 = 0, householdID: String? = nil) throws {
        try update { $0 = State(householdID: householdID ?? Self.firstKeyID(key), current: Held(key, epoch: epoch), previous: []) }
    }

    /// Admitted again to the household it was removed from: the inviter's key joins the keys
    /// held that are at least as new, instead of replacing them. A newer key this device made
    /// meanwhile stays current: the household may already know (from this device's own
    /// holdings) that it holds that key, and drop every other key on the strength of it. Older
    /// keys go, as with `join`: the household may have dropped them because a removed device
    /// holds them.
    public func rejoin(_ key: PreSharedKey, epoch: UInt64) throws {
        let offered = Held(key, epoch: epoch)
        let now = state.withLock { [$0.current] + $0.previous }
        var kept = now.filter { $0.version >= offered.version }
        // The same key held under another epoch (an inviter that could not say its epoch):
        // the newer label stands.
        if !kept.contains(where: { $0.version.fingerprint == offered.version.fingerprint }) { kept.append(offered) }
        kept.sort { $0.version > $1.version }
        guard kept.map(\.version) != now.map(\.version) else { return }
        try update { state in
            state.current = kept[0]
            state.previous = Array(kept.dropFirst())
        }
    }

    /// Takes a newer household key; the one held until now is still accepted until
    /// `dropPrevious`.
    public func install(_ key: PreSharedKey, epoch: UInt64) throws {
        try update { state in
            let new = Held(key, epoch: epoch)
            guard state.current.version < new.version else { return }
            state.previous = ([state.current] + state.previous).filter { $0.version != new.version }
            state.current = new
        }
    }

    /// Stops accepting the keys before the current one (every member holds it).
    public func dropPrevious() throws {
        try update { $0.previous = [] }
    }

    /// Changes the state on disk first, then in memory.
    private func update(_ change: (inout State) -> Void) throws {
        var next = state.withLock { $0 }
        change(&next)
        try Self.write(next, to: path)
        state.withLock { $0 = next }
    }

    // MARK: - The file

    private static let header = "notesd household keys v1"

    /// The bare 32 bytes (a key never rotated, as release 0.1 wrote it), or the text form:
    /// a header line, `household HEX`, `current EPOCH HEX`, then `previous EPOCH HEX` lines.
    static func parse(_ bytes: [UInt8]) -> State? {
        if bytes.count == PreSharedKey.byteCount, let key = PreSharedKey(bytes: bytes) {
            return State(householdID: firstKeyID(key), current: Held(key, epoch: 0), previous: [])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        var raw = text.split(separator: "\n")
        guard raw.first == Substring(header), raw.count >= 3 else { return nil }
        raw.removeFirst()
        let lines = raw.map { $0.split(separator: " ").map(String.init) }
        func held(_ fields: [String]) -> Held? {
            guard fields.count == 3, let epoch = UInt64(fields[1]), let bytes = Hex.decode(fields[2]), let key = PreSharedKey(bytes: bytes) else { return nil }
            return Held(key, epoch: epoch)
        }
        guard lines[0].count == 2, lines[0][0] == "household", lines[0][1].count == 32, Hex.decode(lines[0][1]) != nil,
              lines[1].first == "current", let current = held(lines[1]) else { return nil }
        var previous: [Held] = []
        for fields in lines.dropFirst(2) {
            guard fields.first == "previous", let key = held(fields) else { return nil }
            previous.append(key)
        }
        return State(householdID: lines[0][1], current: current, previous: previous)
    }

    static func encode(_ state: State) -> [UInt8] {
        if state.isFirstKey { return state.current.key.bytes }
        var lines = [header, "household \(state.householdID)", "current \(state.current.version.epoch) \(Hex.encode(state.current.key.bytes))"]
        lines += state.previous.map { "previous \($0.version.epoch) \(Hex.encode($0.key.bytes))" }
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    private static func write(_ state: State, to path: String) throws {
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(encode(state)), attributes: [.posixPermissions: 0o600]),
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
