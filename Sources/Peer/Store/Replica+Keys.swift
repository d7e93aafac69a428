import Merge

/// The household key sets (docs/security.md, "Key rotation"): grants and holdings, each a
/// grow-only set stored as it arrived. They are local tables, not log entries, so they never
/// reach a device that does not take part in rotation.
extension Replica {
    public func keyGrants() throws -> [KeyGrant] {
        try database.rows("SELECT fingerprint, epoch, member, sealed FROM key_grants ORDER BY epoch, fingerprint, member") { row in
            KeyGrant(key: KeyVersion(epoch: UInt64(row.int(1)), fingerprint: row.blob(0)), member: row.blob(2), sealed: row.blob(3))
        }
    }

    public func keyHoldings() throws -> [KeyHolding] {
        try database.rows("SELECT member, fingerprint, epoch FROM key_holdings ORDER BY member, epoch, fingerprint") { row in
            KeyHolding(member: row.blob(0), key: KeyVersion(epoch: UInt64(row.int(2)), fingerprint: row.blob(1)))
        }
    }

    /// Adds what is not stored yet (a grant for a key and member already stored keeps the
    /// first box: both open to the same key). Returns what was new.
    @discardableResult
    public func addKeys(grants: [KeyGrant], holdings: [KeyHolding]) throws -> (grants: [KeyGrant], holdings: [KeyHolding]) {
        try database.transaction {
            var newGrants: [KeyGrant] = []
            for grant in grants {
                try database.run(
                    "INSERT OR IGNORE INTO key_grants (fingerprint, epoch, member, sealed) VALUES (?1, ?2, ?3, ?4)",
                    [.blob(grant.key.fingerprint), .integer(Int64(clamping: grant.key.epoch)), .blob(grant.member), .blob(grant.sealed)])
                if database.changes > 0 { newGrants.append(grant) }
            }
            var newHoldings: [KeyHolding] = []
            for holding in holdings {
                try database.run(
                    "INSERT OR IGNORE INTO key_holdings (member, fingerprint, epoch) VALUES (?1, ?2, ?3)",
                    [.blob(holding.member), .blob(holding.key.fingerprint), .integer(Int64(clamping: holding.key.epoch))])
                if database.changes > 0 { newHoldings.append(holding) }
            }
            return (newGrants, newHoldings)
        }
    }
}

extension Replica {
    /// Forgets both key sets: this device joins another household, whose keys they are not.
    public func forgetKeys() throws {
        try database.transaction {
            try database.run("DELETE FROM key_grants")
            try database.run("DELETE FROM key_holdings")
        }
    }
}
