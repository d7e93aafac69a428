import Merge

/// A pairing invite as this device stored it (docs/security.md): one-time, expiring.
public struct StoredInvite: Hashable, Sendable {
    public let secretID: String
    public let secret: [UInt8]
    public let created: UInt64
    public let expires: UInt64
    /// The public key of the device that used it, once used.
    public let usedBy: [UInt8]?
}

/// Why an invite cannot be accepted.
public enum InviteRefusal: Error, Equatable, Sendable {
    case unknown, expired, used
}

extension Replica {
    // MARK: - Removal of this device

    /// When a household device refused this one as removed from the household (Unix ms), or
    /// nil. Kept across restarts so `status` still says so; cleared when a household device
    /// accepts this one again (after a new `join`).
    public var removedFromHousehold: UInt64? {
        get throws { try database.first("SELECT value FROM meta WHERE key = 'removed'") { UInt64(bitPattern: $0.int(0)) } }
    }

    public func setRemovedFromHousehold(_ removed: Bool, now: UInt64) throws {
        if removed {
            try setMeta("removed", now)
        } else {
            try database.run("DELETE FROM meta WHERE key = 'removed'")
        }
    }

    // MARK: - Invites

    public func storeInvite(secretID: String, secret: [UInt8], now: UInt64, lifetime: UInt64) throws {
        try database.run(
            "INSERT INTO invites (secret_id, secret, created, expires, used_by) VALUES (?1, ?2, ?3, ?4, NULL)",
            [.text(secretID), .blob(secret), .integer(Int64(now)), .integer(Int64(now + lifetime))])
    }

    /// Every invite still stored (used and expired ones too, so a late joiner gets a precise
    /// refusal rather than a failed handshake).
    public func invites() throws -> [StoredInvite] {
        try database.rows("SELECT secret_id, secret, created, expires, used_by FROM invites ORDER BY created") { row in
            StoredInvite(
                secretID: row.text(0), secret: row.blob(1), created: UInt64(row.int(2)), expires: UInt64(row.int(3)),
                usedBy: row.optionalBlob(4))
        }
    }

    /// Forgets invites that expired more than a day ago.
    public func pruneInvites(now: UInt64) throws {
        try database.run("DELETE FROM invites WHERE expires < ?1", [.integer(Int64(now) - 86_400_000)])
    }

    /// Admits a joining device: adds it to the roster and marks the invite used, in one
    /// transaction, so a code can never admit two devices. A device removed earlier is taken
    /// back: a household member made this invite for it on purpose.
    public func admit(publicKey: [UInt8], name: String, inviteSecretID: String, now: UInt64) throws(InviteRefusalOrError) {
        do {
            try write {
                guard let row = try database.first(
                    "SELECT expires, used_by FROM invites WHERE secret_id = ?1", [.text(inviteSecretID)], { ($0.int(0), $0.optionalBlob(1)) })
                else { throw InviteRefusalOrError.refused(.unknown) }
                if let usedBy = row.1, usedBy != publicKey { throw InviteRefusalOrError.refused(.used) }
                guard UInt64(row.0) > now else { throw InviteRefusalOrError.refused(.expired) }
                try database.run("UPDATE invites SET used_by = ?1 WHERE secret_id = ?2", [.blob(publicKey), .text(inviteSecretID)])
                try putDevice(publicKey: publicKey, name: name, readmitting: true, now: now)
            }
        } catch let error as InviteRefusalOrError {
            throw error
        } catch {
            throw .failed(error)
        }
    }

    // MARK: - Static peers

    public func addStaticPeer(_ address: String, now: UInt64) throws {
        try database.run("INSERT OR IGNORE INTO static_peers (address, added) VALUES (?1, ?2)", [.text(address), .integer(Int64(now))])
    }

    public func staticPeers() throws -> [String] {
        try database.rows("SELECT address FROM static_peers ORDER BY added, address") { $0.text(0) }
    }
}

/// `admit` either refuses the invite or fails for another reason (the database).
public enum InviteRefusalOrError: Error {
    case refused(InviteRefusal)
    case failed(any Error)
}
