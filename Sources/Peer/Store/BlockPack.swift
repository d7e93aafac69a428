import Merge

/// How blocks are stored (`block_packs`, schema migration 16): one row holds the blocks one
/// revision brought to its record, so a note's first revision costs one row instead of one per
/// block (docs/decisions.md, "Blocks stored a revision's worth to a row").
///
/// A pack's `directory` names its blocks: each block's hash (32 bytes), in hash order, then
/// where each block after the first starts in `data` (4 bytes, big-endian). `data` holds the
/// blocks one after another. A pack of one block is its hash and the block itself, which is
/// how migration 16 turns each old block row into a pack.
enum BlockPack {
    static let hashSize = 32
    static let startSize = 4

    /// The directory and the data of a pack holding `blocks`, given in hash order (each block
    /// whole, or where it arrived in a received frame).
    static func encode(_ blocks: [(hash: BlockHash, encoded: EntryPayload.EncodedBlock)]) -> (directory: [UInt8], data: [UInt8]) {
        precondition(!blocks.isEmpty, "a pack holds at least one block")
        let size = blocks.reduce(0) { $0 + $1.encoded.count }
        precondition(size <= Int(UInt32.max), "a pack's blocks fit 4-byte offsets")
        let directorySize = blocks.count * (hashSize + startSize) - startSize
        let directory = [UInt8](unsafeUninitializedCapacity: directorySize) { buffer, count in
            let bytes = UnsafeMutableRawBufferPointer(buffer)
            var start = 0
            for (index, block) in blocks.enumerated() {
                block.hash.store(into: bytes, at: index * hashSize)
                if index > 0 {
                    bytes.storeBytes(
                        of: UInt32(start).bigEndian, toByteOffset: blocks.count * hashSize + (index - 1) * startSize, as: UInt32.self)
                }
                start += block.encoded.count
            }
            count = directorySize
        }
        var data: [UInt8] = []
        data.reserveCapacity(size)
        for block in blocks { data.append(contentsOf: block.encoded) }
        return (directory, data)
    }

    /// A pack's directory, read. Where a block ends is checked only against the data it is
    /// taken from (`block(_:in:)`), so finding a record's blocks needs no read of the data.
    struct Directory {
        let hashes: [BlockHash]
        /// Where each block starts in the data (the first at 0).
        private let starts: [Int]

        /// nil when `bytes` is not a directory: a damaged library.
        init?(_ bytes: UnsafeRawBufferPointer) {
            let count = (bytes.count + BlockPack.startSize) / (BlockPack.hashSize + BlockPack.startSize)
            guard count > 0, count * (BlockPack.hashSize + BlockPack.startSize) - BlockPack.startSize == bytes.count else { return nil }
            var hashes: [BlockHash] = []
            hashes.reserveCapacity(count)
            for index in 0..<count {
                let start = index * BlockPack.hashSize
                hashes.append(Hash256(bytes: UnsafeRawBufferPointer(rebasing: bytes[start..<start + BlockPack.hashSize]))!)
            }
            var starts = [0]
            starts.reserveCapacity(count)
            for index in 1..<count {
                let start = Int(UInt32(bigEndian: bytes.loadUnaligned(
                    fromByteOffset: count * BlockPack.hashSize + (index - 1) * BlockPack.startSize, as: UInt32.self)))
                guard start >= starts[index - 1] else { return nil }
                starts.append(start)
            }
            self.hashes = hashes
            self.starts = starts
        }

        /// The `index`-th block of `data`; nil when the data is shorter than the directory says.
        func block(_ index: Int, in data: UnsafeRawBufferPointer) -> [UInt8]? {
            let end = index + 1 < starts.count ? starts[index + 1] : data.count
            guard end <= data.count, starts[index] <= end else { return nil }
            return Array(data[starts[index]..<end])
        }
    }
}
