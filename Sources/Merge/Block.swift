/// One block of a note body: a paragraph, heading, list item, … (see `HTMLBlocks`).
public struct Block: Hashable, Sendable {
    /// The block's HTML, as `HTMLBlocks.split` produced it.
    public var html: String

    public init(html: String) { self.html = html }
}
