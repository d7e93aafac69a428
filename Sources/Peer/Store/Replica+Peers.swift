import Merge

/// What this replica remembers about one peer (docs/protocol.md "per-peer state"), kept across
/// restarts so `notesctl status` can say when a device was last in sync and why it failed.
public struct PeerRecord: Hashable, Sendable {
    /// The peer's key: its device id on the network, its replica id in the simulation.
    public var peer: String
    public var name: String
    public var address: String?
    public var replica: ReplicaID?
    /// The peer's version vector as last seen.
    public var vector: VersionVector
    /// Unix ms of the last time both sides were caught up.
    public var lastSuccess: UInt64?
    public var lastError: String?
    /// Unix ms of `lastError`.
    public var lastErrorAt: UInt64?
    /// Failed connection attempts since the last success.
    public var retries: Int
    /// Its notesd version as its last handshake gave it (`PeerAgreement.peerVersionText`).
    public var software: String?

    public init(
        peer: String, name: String, address: String? = nil, replica: ReplicaID? = nil, vector: VersionVector = VersionVector(),
        lastSuccess: UInt64? = nil, lastError: String? = nil, lastErrorAt: UInt64? = nil, retries: Int = 0,
        software: String? = nil
    ) {
        self.peer = peer
        self.name = name
        self.address = address
        self.replica = replica
        self.vector = vector
        self.lastSuccess = lastSuccess
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.retries = retries
        self.software = software
    }
}

extension Replica {
    public func savePeer(_ record: PeerRecord) throws {
        var vector = ByteWriter()
        for (replica, seq) in record.vector.counters.sorted(by: { $0.key < $1.key }) {
            vector.record(replica.raw)
            vector.u64(seq)
        }
        try database.run(
            """
            INSERT INTO peers (peer, name, address, replica, vector, last_success, last_error, last_error_at, retries, software)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
            ON CONFLICT(peer) DO UPDATE SET name = excluded.name, address = excluded.address, replica = excluded.replica,
                vector = excluded.vector, last_success = excluded.last_success, last_error = excluded.last_error,
                last_error_at = excluded.last_error_at, retries = excluded.retries, software = excluded.software
            """,
            [
                .text(record.peer), .text(record.name), record.address.map { .text($0) } ?? .null,
                record.replica.map { .record($0.raw) } ?? .null, .blob(vector.bytes),
                record.lastSuccess.map { .integer(Int64($0)) } ?? .null, record.lastError.map { .text($0) } ?? .null,
                record.lastErrorAt.map { .integer(Int64($0)) } ?? .null, .integer(Int64(record.retries)),
                record.software.map { .text($0) } ?? .null,
            ])
    }

    public func peers() throws -> [PeerRecord] {
        try database.rows(
            """
            SELECT peer, name, address, replica, vector, last_success, last_error, last_error_at, retries, software
            FROM peers ORDER BY name, peer
            """
        ) { row in
            var reader = ByteReader(row.blob(4))
            var counters: [ReplicaID: UInt64] = [:]
            while reader.remaining >= 24 {
                guard let replica = try? reader.record(), let seq = try? reader.u64() else { break }
                counters[ReplicaID(replica)] = seq
            }
            return PeerRecord(
                peer: row.text(0), name: row.text(1), address: row.optionalText(2),
                replica: row.recordID(3).map(ReplicaID.init), vector: VersionVector(counters),
                lastSuccess: row.isNull(5) ? nil : UInt64(row.int(5)), lastError: row.optionalText(6),
                lastErrorAt: row.isNull(7) ? nil : UInt64(row.int(7)), retries: Int(row.int(8)), software: row.optionalText(9))
        }
    }
}
