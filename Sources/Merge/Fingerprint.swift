/// FNV-1a, 64 bits: a fast hash that gives the same value on every machine and in every run.
///
/// Swift's `Hasher` is seeded per process, so it must never decide anything that two devices
/// have to agree on; this does (block fingerprints, tie-breaks between equal stamps).
/// It is not a cryptographic hash: the replica content-addresses blocks with BLAKE2b.
struct Fingerprint {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }

    mutating func add(_ bytes: UnsafeBufferPointer<UInt8>) {
        var hash = value
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        value = hash
    }

    mutating func add(_ bytes: some Collection<UInt8>) {
        if bytes.withContiguousStorageIfAvailable({ add($0) }) == nil {
            for byte in bytes { add(byte) }
        }
    }

    mutating func add(_ word: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { add(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }

    /// A string as its length and UTF-8 bytes, so that ("ab","c") and ("a","bc") differ.
    mutating func add(_ text: String) {
        add(UInt64(text.utf8.count))
        add(text.utf8)
    }

    static func of(_ bytes: some Collection<UInt8>) -> UInt64 {
        var fingerprint = Fingerprint()
        fingerprint.add(bytes)
        return fingerprint.value
    }
}
