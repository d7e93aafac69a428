import CSodium
import Foundation
import Synchronization

/// A session as the database keeps it: never the secret, only its hash.
public struct WebSessionRecord: Hashable, Sendable {
    /// BLAKE2b-256 of the secret, hex.
    public var hash: String
    /// Milliseconds since 1970.
    public var created: Int64
    public var lastUsed: Int64

    public init(hash: String, created: Int64, lastUsed: Int64) {
        self.hash = hash
        self.created = created
        self.lastUsed = lastUsed
    }
}

/// Where sessions persist (the replica's database, through the engine): survives restarts.
/// Writes may be asynchronous; `loadSessions` is called once, at start.
public protocol WebSessionStore: Sendable {
    func loadSessions() -> [WebSessionRecord]
    func saveSession(_ record: WebSessionRecord)
    func deleteSessions(hashes: [String])
}

/// Who may use the API (docs/web.md, "Sign-in"): one-time login tokens issued over the control
/// socket, exchanged once for a session secret; sessions expire after 30 days without use.
/// Only hashes of tokens and secrets are held, so equal-time comparison is not needed: a
/// lookup by hash reveals nothing about a secret.
public final class WebAuthority: Sendable {
    public static let tokenLifetimeMilliseconds: Int64 = 2 * 60 * 1000
    public static let sessionIdleLimitMilliseconds: Int64 = 30 * 24 * 60 * 60 * 1000
    /// `lastUsed` reaches the database at most this often per session: the 30-day limit does
    /// not need the exact minute, and a busy browser should not write on every request.
    public static let persistInterval: Int64 = 60 * 60 * 1000
    /// Unredeemed tokens kept at most; the oldest go first.
    public static let maximumPendingTokens = 64

    private let store: any WebSessionStore
    private let clock: @Sendable () -> Int64
    /// What a session is bound to: the port it was made on. A page on another port (another
    /// user's listener that took notesd's usual port while notesd was down, say) can read the
    /// session `localStorage` kept for that origin, but it is no session here.
    private let scope: String
    private let state: Mutex<State>

    private struct State {
        /// Token hash → expiry.
        var tokens: [String: Int64] = [:]
        var sessions: [String: WebSessionRecord] = [:]
        /// Session hash → `lastUsed` as last written.
        var persisted: [String: Int64] = [:]
    }

    /// `clock` gives milliseconds since 1970 (the tests pass their own).
    public init(store: any WebSessionStore, scope: String = "", clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.store = store
        self.scope = scope
        self.clock = clock
        let now = clock()
        var initial = State()
        var expired: [String] = []
        for record in store.loadSessions() {
            if now - record.lastUsed > Self.sessionIdleLimitMilliseconds {
                expired.append(record.hash)
            } else {
                initial.sessions[record.hash] = record
                initial.persisted[record.hash] = record.lastUsed
            }
        }
        state = Mutex(initial)
        if !expired.isEmpty { store.deleteSessions(hashes: expired) }
    }

    /// A new one-time token (256 bits, base64url) and when it expires (ms since 1970).
    public func issueLoginToken() -> (token: String, expires: Int64) {
        let token = Self.newSecret()
        let now = clock()
        let expires = now + Self.tokenLifetimeMilliseconds
        state.withLock { state in
            state.tokens = state.tokens.filter { $0.value > now }
            while state.tokens.count >= Self.maximumPendingTokens, let oldest = state.tokens.min(by: { $0.value < $1.value }) {
                state.tokens[oldest.key] = nil
            }
            state.tokens[Self.hash(token)] = expires
        }
        return (token, expires)
    }

    /// Exchanges a token for a new session secret; `nil` when the token is unknown, used or
    /// expired. A token works once, whatever the outcome.
    public func redeem(token: String) -> String? {
        let now = clock()
        let tokenHash = Self.hash(token)
        let secret = Self.newSecret()
        let record = WebSessionRecord(hash: sessionHash(secret), created: now, lastUsed: now)
        let accepted = state.withLock { state -> Bool in
            guard let expires = state.tokens.removeValue(forKey: tokenHash), expires > now else { return false }
            state.sessions[record.hash] = record
            state.persisted[record.hash] = now
            return true
        }
        guard accepted else { return nil }
        store.saveSession(record)
        return secret
    }

    /// Whether `secret` names a live session; a live one counts as used now.
    public func isSession(_ secret: String) -> Bool {
        let now = clock()
        let hash = sessionHash(secret)
        let outcome = state.withLock { state -> (live: Bool, write: WebSessionRecord?, expired: Bool) in
            guard var record = state.sessions[hash] else { return (false, nil, false) }
            guard now - record.lastUsed <= Self.sessionIdleLimitMilliseconds else {
                state.sessions[hash] = nil
                state.persisted[hash] = nil
                return (false, nil, true)
            }
            record.lastUsed = max(record.lastUsed, now)
            state.sessions[hash] = record
            guard now - (state.persisted[hash] ?? 0) >= Self.persistInterval else { return (true, nil, false) }
            state.persisted[hash] = now
            return (true, record, false)
        }
        if let write = outcome.write { store.saveSession(write) }
        if outcome.expired { store.deleteSessions(hashes: [hash]) }
        return outcome.live
    }

    /// Every live session, oldest first.
    public func sessions() -> [WebSessionRecord] {
        let now = clock()
        return state.withLock { state in
            state.sessions.values.filter { now - $0.lastUsed <= Self.sessionIdleLimitMilliseconds }
        }.sorted { ($0.created, $0.hash) < ($1.created, $1.hash) }
    }

    /// Ends every session (and forgets unredeemed tokens); returns how many sessions ended.
    @discardableResult
    public func revokeAll() -> Int {
        let hashes = state.withLock { state in
            let hashes = Array(state.sessions.keys)
            state.sessions = [:]
            state.persisted = [:]
            state.tokens = [:]
            return hashes
        }
        if !hashes.isEmpty { store.deleteSessions(hashes: hashes) }
        return hashes.count
    }

    /// `sodium_init()` must run before libsodium's other calls; a `static let` runs it once.
    private static let sodiumReady: Bool = sodium_init() >= 0

    /// 32 random bytes from libsodium, base64url without padding (43 characters).
    static func newSecret() -> String {
        precondition(sodiumReady, "libsodium could not initialise")
        var bytes = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// What is stored for a session secret: its hash together with the scope (the port).
    public func sessionHash(_ secret: String) -> String { Self.hash(scope + "\n" + secret) }

    /// BLAKE2b-256 of `secret`'s UTF-8, hex.
    public static func hash(_ secret: String) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        let input = Array(secret.utf8)
        _ = crypto_generichash(&digest, digest.count, input, UInt64(input.count), nil, 0)
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}
