/// `backup` params.
public struct BackupParams: Codable, Hashable, Sendable {
    /// `true`: write the copy to the file descriptor sent with this request (`SCM_RIGHTS`),
    /// opened for writing by the caller. Absent: into `backups/` in the data directory.
    public var toDescriptor: Bool?
    /// With the copy in `backups/`: keep only the newest this many there (at least 1).
    public var keep: Int?

    public init(toDescriptor: Bool? = nil, keep: Int? = nil) {
        self.toDescriptor = toDescriptor
        self.keep = keep
    }
}

/// `backup` result: a consistent copy of the database, checked with `integrity_check`.
public struct BackupResult: Codable, Hashable, Sendable {
    /// Where the copy is, for one in `backups/`; `nil` when written to the passed descriptor.
    public var path: String?
    public var bytes: Int64
    /// The household the copy belongs to (`HouseholdInfo.id`); `--restore-backup` checks it.
    public var household: String
    /// The replica id the copy was taken from (a restore installs it under a new one).
    public var replica: String
    /// Own log entries the copy holds (its `offered` mark and top sequence number).
    public var offered: Int64
    public var sequence: Int64
    /// Older backups removed from `backups/` to honour `keep`.
    public var removed: [String]

    public init(path: String?, bytes: Int64, household: String, replica: String, offered: Int64, sequence: Int64, removed: [String]) {
        self.path = path
        self.bytes = bytes
        self.household = household
        self.replica = replica
        self.offered = offered
        self.sequence = sequence
        self.removed = removed
    }
}
