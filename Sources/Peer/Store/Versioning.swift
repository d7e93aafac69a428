import Merge

/// The random id a replica mints with its database. A wiped database gets a new one, so log
/// sequence numbers never restart under an old name (docs/architecture.md).
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let raw: RecordID

    public init(_ raw: RecordID) { self.raw = raw }

    /// The author of revisions that every replica derives identically (conflict copies).
    public static let derived = ReplicaID(RecordID(high: 0, low: 0))

    public var description: String { Hex.encode(raw.bytes.prefix(6)) }

    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool { lhs.raw < rhs.raw }
}

/// One log entry's name: the `seq`-th revision a replica authored or derived.
public struct Dot: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let replica: ReplicaID
    public let seq: UInt64

    public init(replica: ReplicaID, seq: UInt64) {
        self.replica = replica
        self.seq = seq
    }

    public var description: String { "\(replica):\(seq)" }

    public static func < (lhs: Dot, rhs: Dot) -> Bool { (lhs.replica, lhs.seq) < (rhs.replica, rhs.seq) }
}

/// For each replica, the highest sequence number held with no gap below it.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    public private(set) var counters: [ReplicaID: UInt64]

    public init(_ counters: [ReplicaID: UInt64] = [:]) { self.counters = counters.filter { $0.value > 0 } }

    public subscript(replica: ReplicaID) -> UInt64 {
        get { counters[replica] ?? 0 }
        set { counters[replica] = newValue == 0 ? nil : newValue }
    }

    public func contains(_ dot: Dot) -> Bool { dot.seq <= self[dot.replica] }

    /// How many entries `self` holds that `other` does not (saturating: vectors come from peers).
    public func entriesAhead(of other: VersionVector) -> UInt64 {
        counters.reduce(0) { total, counter in
            let ahead = counter.value > other[counter.key] ? counter.value - other[counter.key] : 0
            let (sum, overflow) = total.addingReportingOverflow(ahead)
            return overflow ? .max : sum
        }
    }

    /// Entries one side holds that the other does not, both directions summed (saturating).
    public func entriesToExchange(with other: VersionVector) -> UInt64 {
        let (sum, overflow) = entriesAhead(of: other).addingReportingOverflow(other.entriesAhead(of: self))
        return overflow ? .max : sum
    }

    /// The pointwise maximum.
    public func merged(with other: VersionVector) -> VersionVector {
        VersionVector(counters.merging(other.counters, uniquingKeysWith: Swift.max))
    }

    /// True when `self` holds every entry `other` holds.
    public func dominates(_ other: VersionVector) -> Bool {
        other.counters.allSatisfy { self[$0.key] >= $0.value }
    }

    public var description: String {
        "{" + counters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") + "}"
    }
}
