/// The per-field rules shared by notes, folders and devices (docs/merge.md).
enum FieldRules {
    /// A single value: a side that left it as in the base gives way to the side that changed it;
    /// if both changed it, the winner's value (equal when both made the same change).
    /// With no base, every value counts as changed.
    static func scalar<Value: Equatable>(base: Value?, winner: Value, loser: Value) -> Value {
        if base == winner { return loser }
        return winner
    }

    /// A set, merged element by element: `base − removed(a) − removed(b) ∪ added(a) ∪ added(b)`.
    static func set<Element>(base: Set<Element>, _ a: Set<Element>, _ b: Set<Element>) -> Set<Element> {
        base.intersection(a).intersection(b).union(a.subtracting(base)).union(b.subtracting(base))
    }

    /// Orders two versions: the later stamp wins. Equal stamps should mean the same revision;
    /// if their contents differ anyway, a deterministic digest of the content decides, so that the
    /// order never depends on which side was passed first.
    static func ordered<Content: Digestible>(_ a: Version<Content>, _ b: Version<Content>) -> (winner: Version<Content>, loser: Version<Content>) {
        if a.stamp != b.stamp { return a.stamp > b.stamp ? (a, b) : (b, a) }
        return digest(a.record) >= digest(b.record) ? (a, b) : (b, a)
    }

    private static func digest<Content: Digestible>(_ record: Record<Content>) -> UInt64 {
        var fingerprint = Fingerprint()
        switch record {
        case .tombstone: fingerprint.add(UInt8(0))
        case .live(let content):
            fingerprint.add(UInt8(1))
            content.addDigest(to: &fingerprint)
        }
        return fingerprint.value
    }

    /// Delete versus edit (docs/merge.md): the edit wins. Returns the record decided without a field
    /// merge, or nil when both sides are live and their fields must be merged.
    /// - tombstone vs tombstone → tombstone;
    /// - tombstone vs a live side unchanged from the base → tombstone;
    /// - tombstone vs a live side that changed anything → that side, whole (as merging it with a
    ///   side that changed nothing would give).
    static func deletion<Content: Equatable>(base: Content?, _ a: Record<Content>, _ b: Record<Content>) -> Record<Content>? {
        switch (a, b) {
        case (.tombstone, .tombstone):
            return .tombstone
        case (.tombstone, .live(let content)), (.live(let content), .tombstone):
            return content == base ? .tombstone : .live(content)
        case (.live, .live):
            return nil
        }
    }
}

/// Content that can feed a deterministic digest (for ordering equal stamps).
protocol Digestible: Hashable, Sendable {
    func addDigest(to fingerprint: inout Fingerprint)
}

extension Note: Digestible {
    func addDigest(to fingerprint: inout Fingerprint) {
        fingerprint.add(title)
        fingerprint.add(UInt64(body.count))
        for block in body { fingerprint.add(block.fingerprint) }
        fingerprint.add(folder.map { $0.bytes } ?? [])
        fingerprint.add(UInt8(trashed ? 1 : 0))
        fingerprint.add(UInt8(pinned ? 1 : 0))
        fingerprint.add(color ?? "\u{0}none")
        fingerprint.add(UInt64(tags.count))
        for tag in tags.sorted() { fingerprint.add(tag) }
        fingerprint.add(created)
        fingerprint.add(modified)
        fingerprint.add(conflictOf.map { $0.bytes } ?? [])
    }
}

extension Folder: Digestible {
    func addDigest(to fingerprint: inout Fingerprint) {
        fingerprint.add(name)
        fingerprint.add(parent.map { $0.bytes } ?? [])
        fingerprint.add(movedAt.rawValue)
    }
}

extension Device: Digestible {
    func addDigest(to fingerprint: inout Fingerprint) {
        fingerprint.add(name)
        fingerprint.add(UInt64(publicKey.count))
        fingerprint.add(publicKey)
        fingerprint.add(UInt8(revoked ? 1 : 0))
    }
}
