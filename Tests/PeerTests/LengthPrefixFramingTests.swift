import Merge
@testable import Peer
import Testing

/// The wire framing cuts a byte stream into the frames it carries however the stream arrives,
/// each frame received into its own array (`LengthPrefixFraming`).
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

    @Test func aLengthOverTheCapIsRefusedBeforeRoomIsMade() throws {
        var framing = LengthPrefixFraming()
        framing.append([0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        #expect(throws: ChannelError(.frameTooLarge(length: 0x7FFF_FFFF, limit: 65_535))) { try framing.nextFrame(maxLength: 65_535) }
        #expect(framing.heldCapacity < 1_024, "held \(framing.heldCapacity) bytes")
    }
}
