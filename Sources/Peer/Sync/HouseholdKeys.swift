import Merge

/// Which household key: its epoch (0 for the key a household started with, one more at each
/// rotation) and its fingerprint. Ordered by epoch, then fingerprint, so two keys minted
/// concurrently at the same epoch still have one winner on every device.
public struct KeyVersion: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var epoch: UInt64
    /// `PreSharedKey.fingerprint`: 16 bytes.
    public var fingerprint: [UInt8]

    public init(epoch: UInt64, fingerprint: [UInt8]) {
        self.epoch = epoch
        self.fingerprint = fingerprint
    }

    public static func < (lhs: KeyVersion, rhs: KeyVersion) -> Bool {
        lhs.epoch != rhs.epoch ? lhs.epoch < rhs.epoch : lhs.fingerprint.lexicographicallyPrecedes(rhs.fingerprint)
    }

    public var description: String { "epoch \(epoch) (\(Hex.encode(fingerprint.prefix(4))))" }
}

/// A household key sealed to one member's static key (`crypto_box_seal`): only that member
/// can read it (docs/security.md, "Key rotation").
public struct KeyGrant: Hashable, Sendable {
    public var key: KeyVersion
    /// The member's 32-byte device public key.
    public var member: [UInt8]
    public var sealed: [UInt8]

    public init(key: KeyVersion, member: [UInt8], sealed: [UInt8]) {
        self.key = key
        self.member = member
        self.sealed = sealed
    }
}

/// A member says it holds a key (and, by saying anything, that it takes part in rotation).
public struct KeyHolding: Hashable, Sendable {
    public var member: [UInt8]
    public var key: KeyVersion

    public init(member: [UInt8], key: KeyVersion) {
        self.member = member
        self.key = key
    }
}

/// What devices that both use the `key-rotation` feature tell each other: the household's
/// lasting id and every grant and holding the sender knows. Both sets only grow, so merging
/// is a union and the order of arrival does not matter.
public struct HouseholdKeys: Hashable, Sendable {
    /// `HouseholdKey.householdID`'s 16 bytes: the id stays when the key rotates.
    public var household: [UInt8]
    public var grants: [KeyGrant]
    public var holdings: [KeyHolding]

    public init(household: [UInt8], grants: [KeyGrant], holdings: [KeyHolding]) {
        self.household = household
        self.grants = grants
        self.holdings = holdings
    }

    public var isEmpty: Bool { grants.isEmpty && holdings.isEmpty }
}
