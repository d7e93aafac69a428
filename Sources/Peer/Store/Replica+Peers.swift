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
    public var status: SyncSession.Status
    /// Unix ms of the last time both sides were caught up.
    public var lastSuccess: UInt64?
    public var lastError: String?
    public var lastErrorAt: UInt64?
    /// Failed connection attempts since the last success.
    public var retries: Int
    /// Entries the peer has that this replica lacks, as of the last contact.
    public var entriesBehind: UInt64

    public init(
        peer: String, name: String, address: String? = nil, replica: ReplicaID? = nil, vector: VersionVector = VersionVector(),
        status: SyncSession.Status = .offline, lastSuccess: UInt64? = nil, lastError: String? = nil, lastErrorAt: UInt64? = nil,
        retries: Int = 0, entriesBehind: UInt64 = 0
    ) {
        self.peer = peer
        self.name = name
        self.address = address
        self.replica = replica
        self.vector = vector
        self.status = status
        self.lastSuccess = lastSuccess
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.retries = retries
        self.entriesBehind = entriesBehind
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
            INSERT INTO peers (peer, name, address, replica, vector, status, last_success, last_error, last_error_at, retries, entries_behind)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            ON CONFLICT(peer) DO UPDATE SET name = excluded.name, address = excluded.address, replica = excluded.replica,
                vector = excluded.vector, status = excluded.status, last_success = excluded.last_success,
                last_error = excluded.last_error, last_error_at = excluded.last_error_at, retries = excluded.retries,
                entries_behind = excluded.entries_behind
            """,
            [
                .text(record.peer), .text(record.name), record.address.map { .text($0) } ?? .null,
                record.replica.map { .blob($0.raw.bytes) } ?? .null, .blob(vector.bytes), .text(record.status.rawValue),
                record.lastSuccess.map { .integer(Int64($0)) } ?? .null, record.lastError.map { .text($0) } ?? .null,
                record.lastErrorAt.map { .integer(Int64($0)) } ?? .null, .integer(Int64(record.retries)),
                .integer(Int64(record.entriesBehind)),
            ])
    }

    public func peers() throws -> [PeerRecord] {
        try database.rows(
            """
            SELECT peer, name, address, replica, vector, status, last_success, last_error, last_error_at, retries, entries_behind
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
                replica: row.optionalBlob(3).flatMap(RecordID.init(bytes:)).map(ReplicaID.init), vector: VersionVector(counters),
                status: SyncSession.Status(rawValue: row.text(5)) ?? .offline,
                lastSuccess: row.isNull(6) ? nil : UInt64(row.int(6)), lastError: row.optionalText(7),
                lastErrorAt: row.isNull(8) ? nil : UInt64(row.int(8)), retries: Int(row.int(9)), entriesBehind: UInt64(row.int(10)))
        }
    }
}
