import Merge
@testable import Peer
import Testing

/// The wire framing cuts a byte stream into the frames it carries however the stream arrives,
/// each frame received into its own array, or the one before it's (`LengthPrefixFraming`).
@Suite struct LengthPrefixFramingTests {
    /// Frames of every awkward size: empty, shorter than a length prefix, and larger than a read.
    static let frames: [[UInt8]] = [0, 1, 3, 4, 5, 70_000, 2, 0, 131_072].enumerated().map { index, size in
        (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }
    }
    static let stream = frames.flatMap(LengthPrefixFraming.frame)

    /// Feeds `stream` in pieces of the sizes `cut` gives, taking every frame after each piece.
    private func received(cut: (Int) -> Int) throws -> [[UInt8]] {
        var framing = LengthPrefixFraming()
        var frames: [[UInt8]] = []
        var offset = 0
        while offset < Self.stream.count {
            let end = min(Self.stream.count, offset + max(1, cut(Self.stream.count - offset)))
            framing.append(Self.stream[offset..<end])
            while let frame = try framing.nextFrame(maxLength: 1 << 20) { frames.append(frame) }
            framing.releaseIfEmpty()
            offset = end
        }
        #expect(framing.bufferedByteCount == 0, "nothing left over")
        return frames
    }

    @Test func framesComeOutWholeHoweverTheStreamIsCut() throws {
        #expect(try received { $0 } == Self.frames, "all at once")
        #expect(try received { _ in 1 } == Self.frames, "one byte at a time")
        #expect(try received { _ in 64 * 1024 } == Self.frames, "as a socket reads")
        for seed in 1...20 as ClosedRange<UInt64> {
            var random = SplitMix64(seed: seed)
            #expect(try received { remaining in Int(random.next() % UInt64(min(remaining, 9_000))) + 1 } == Self.frames, "seed \(seed)")
        }
    }

    @Test func aFrameHalfReceivedCountsAsBufferedAndFinishesFromLaterBytes() throws {
        var framing = LengthPrefixFraming()
        let frame = LengthPrefixFraming.frame([UInt8](repeating: 9, count: 1_000))
        framing.append(frame[0..<2])
        #expect(try framing.nextFrame(maxLength: 4_096) == nil)
        #expect(framing.bufferedByteCount == 2, "half a length prefix")
        framing.append(frame[2..<600])
        #expect(try framing.nextFrame(maxLength: 4_096) == nil)
        #expect(framing.bufferedByteCount == 600)
        framing.append(frame[600...] + LengthPrefixFraming.frame([1]))
        #expect(try framing.nextFrame(maxLength: 4_096) == [UInt8](repeating: 9, count: 1_000))
        #expect(try framing.nextFrame(maxLength: 4_096) == [1])
        #expect(try framing.nextFrame(maxLength: 4_096) == nil)
        #expect(framing.bufferedByteCount == 0)
    }

    /// Announced and stalled, a frame holds its room, never more than the cap.
    @Test func aFrameAnnouncedAndStalledHoldsAtMostTheCap() throws {
        var framing = LengthPrefixFraming()
        framing.append([0x00, 0x00, 0xFF, 0xFF])
        #expect(try framing.nextFrame(maxLength: 65_535) == nil)
        #expect(framing.heldCapacity >= 65_535 && framing.heldCapacity <= 65_535 + 1_024, "held \(framing.heldCapacity) bytes")
        #expect(framing.bufferedByteCount == 4)
    }

    /// A large frame that begins in the read that ended the one before it is received into
    /// that frame's array, handed back (`recycle`); at the end of the read an array no frame
    /// took up is dropped.
    @Test func aLargeFrameReusesTheArrayOfTheFrameBeforeIt() throws {
        var framing = LengthPrefixFraming()
        let large = { (fill: UInt8) in [UInt8](repeating: fill, count: 200_000) }
        let stream = LengthPrefixFraming.frame(large(1)) + LengthPrefixFraming.frame(large(2)) + LengthPrefixFraming.frame(large(3))
        framing.append(stream[..<(stream.count - 100)])
        let first = try #require(try framing.nextFrame(maxLength: 1 << 20))
        let firstStorage = first.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        #expect(first == large(1))
        framing.recycle(consume first)
        let second = try #require(try framing.nextFrame(maxLength: 1 << 20))
        #expect(second == large(2))
        #expect(second.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } == firstStorage, "received into the first frame's array")
        framing.recycle(consume second)
        #expect(try framing.nextFrame(maxLength: 1 << 20) == nil, "the third is still arriving, in the second's array")
        framing.releaseIfEmpty()
        #expect(framing.heldCapacity < 200_000 + 1_024, "one frame's room, not two: held \(framing.heldCapacity) bytes")
        framing.append(stream[(stream.count - 100)...])
        let third = try #require(try framing.nextFrame(maxLength: 1 << 20))
        #expect(third == large(3))
        framing.recycle(consume third)
        framing.releaseIfEmpty()
        #expect(framing.heldCapacity < 1_024, "nothing kept once the read is done: held \(framing.heldCapacity) bytes")
    }

    @Test func aLengthOverTheCapIsRefusedBeforeRoomIsMade() throws {
        var framing = LengthPrefixFraming()
        framing.append([0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        #expect(throws: ChannelError(.frameTooLarge(length: 0x7FFF_FFFF, limit: 65_535))) { try framing.nextFrame(maxLength: 65_535) }
        #expect(framing.heldCapacity < 1_024, "held \(framing.heldCapacity) bytes")
    }
}
