import Merge

/// Block hashes in order, each once. Finding one is a binary search: a few comparisons, which
/// mostly stop at a hash's first word, where a `Set` or a `Dictionary` hashes all 32 bytes with
/// SipHash at every insert and lookup. A catch-up's blocks went through five of those each
/// (docs/decisions.md, "A new record's blocks inserted in order, without a statement journal").
struct SortedBlockHashes: Equatable, Sendable {
    private(set) var hashes: [BlockHash] = []

    init() {}

    init(_ unsorted: [BlockHash]) {
        hashes = unsorted.sorted()
        removeRepeats()
    }

    var isEmpty: Bool { hashes.isEmpty }

    func index(of hash: BlockHash) -> Int? {
        var low = 0, high = hashes.count
        while low < high {
            let middle = (low + high) / 2
            if hashes[middle] < hash { low = middle + 1 } else { high = middle }
        }
        return low < hashes.count && hashes[low] == hash ? low : nil
    }

    func contains(_ hash: BlockHash) -> Bool { index(of: hash) != nil }

    mutating func formUnion(_ other: SortedBlockHashes) {
        guard !other.isEmpty else { return }
        guard !isEmpty else {
            self = other
            return
        }
        hashes.append(contentsOf: other.hashes)
        hashes.sort()
        removeRepeats()
    }

    private mutating func removeRepeats() {
        guard hashes.count > 1 else { return }
        var kept = 1
        for index in 1..<hashes.count where hashes[index] != hashes[kept - 1] {
            hashes[kept] = hashes[index]
            kept += 1
        }
        hashes.removeLast(hashes.count - kept)
    }
}

/// Encoded blocks found by their hash (`SortedBlockHashes`): those an entry or a revision made
/// here supplies. A hash given twice keeps its first block.
struct SuppliedBlocks: Sendable {
    let hashes: SortedBlockHashes
    /// In the order of `hashes`.
    private let encoded: [EntryPayload.EncodedBlock]

    init(hashes: [BlockHash], encoded: [EntryPayload.EncodedBlock]) {
        precondition(hashes.count == encoded.count, "one hash per block")
        // A stable order keeps the first of a repeated hash first.
        let order = hashes.indices.sorted { (hashes[$0], $0) < (hashes[$1], $1) }
        var kept: [BlockHash] = [], blocks: [EntryPayload.EncodedBlock] = []
        kept.reserveCapacity(order.count)
        blocks.reserveCapacity(order.count)
        for index in order where kept.last != hashes[index] {
            kept.append(hashes[index])
            blocks.append(encoded[index])
        }
        self.hashes = SortedBlockHashes(sortedUnique: kept)
        self.encoded = blocks
    }

    subscript(hash: BlockHash) -> EntryPayload.EncodedBlock? { hashes.index(of: hash).map { encoded[$0] } }
}

extension SortedBlockHashes {
    /// Hashes already sorted and without repeats.
    fileprivate init(sortedUnique: [BlockHash]) { hashes = sortedUnique }
}

/// Where a record's stored blocks are: for each block's hash, the pack (a `block_packs`
/// rowid) holding it. Read from the record's pack directories, and kept through an `apply`
/// batch as the batch stores packs (empty for a record new to it).
struct BlockPlaces: Sendable {
    private var hashes = SortedBlockHashes()
    /// In the order of `hashes`.
    private var packs: [Int64] = []

    init() {}

    /// `places` in any order; a hash found in two packs (a damaged library) keeps the first.
    init(_ places: [(hash: BlockHash, pack: Int64)]) {
        let sorted = places.enumerated().sorted { ($0.element.hash, $0.offset) < ($1.element.hash, $1.offset) }
        var kept: [BlockHash] = []
        kept.reserveCapacity(sorted.count)
        packs.reserveCapacity(sorted.count)
        for (_, place) in sorted where kept.last != place.hash {
            kept.append(place.hash)
            packs.append(place.pack)
        }
        hashes = SortedBlockHashes(sortedUnique: kept)
    }

    var isEmpty: Bool { hashes.isEmpty }

    func pack(of hash: BlockHash) -> Int64? { hashes.index(of: hash).map { packs[$0] } }

    /// The blocks of a pack just stored, in hash order, none of them held before: merged
    /// into the places in one pass (a record new to a batch takes its first pack as they are).
    mutating func add(_ stored: [BlockHash], in pack: Int64) {
        guard !stored.isEmpty else { return }
        precondition(zip(stored, stored.dropFirst()).allSatisfy { $0 < $1 }, "a pack's blocks come in hash order, each once")
        guard !isEmpty else {
            hashes = SortedBlockHashes(sortedUnique: stored)
            packs = Array(repeating: pack, count: stored.count)
            return
        }
        let held = hashes.hashes
        var mergedHashes: [BlockHash] = [], mergedPacks: [Int64] = []
        mergedHashes.reserveCapacity(held.count + stored.count)
        mergedPacks.reserveCapacity(held.count + stored.count)
        var (old, new) = (0, 0)
        while old < held.count || new < stored.count {
            if new == stored.count || (old < held.count && held[old] < stored[new]) {
                mergedHashes.append(held[old])
                mergedPacks.append(packs[old])
                old += 1
            } else {
                precondition(old == held.count || held[old] != stored[new], "a block is stored in one pack of its record")
                mergedHashes.append(stored[new])
                mergedPacks.append(pack)
                new += 1
            }
        }
        hashes = SortedBlockHashes(sortedUnique: mergedHashes)
        packs = mergedPacks
    }
}
