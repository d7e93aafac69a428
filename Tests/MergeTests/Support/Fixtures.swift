@testable import Merge

/// Small constructors for readable tests.
enum Fixtures {
    static let noteID = RecordID(high: 0x0190_f3a4_1b2c_7d3e, low: 0x8f40_1234_5678_9abc)

    /// A stamp at `milliseconds`, with a revision id made of `revision` repeated.
    static func stamp(_ milliseconds: UInt64, revision: UInt8 = 1) -> Stamp {
        Stamp(hlc: HLC(milliseconds: milliseconds, counter: 0),
              revision: RevisionID(bytes: [UInt8](repeating: revision, count: 32))!)
    }

    static func folderID(_ number: UInt64) -> FolderID {
        RecordID(high: 0x0190_0000_0000_7000, low: 0x8000_0000_0000_0000 | number)
    }

    static func note(_ title: String, _ html: String, folder: FolderID? = nil, tags: Set<String> = []) -> Note {
        Note(title: title, body: HTMLBlocks.split(html), folder: folder, tags: tags, created: 1_000, modified: 1_000)
    }

    static func version(_ note: Note, at milliseconds: UInt64, revision: UInt8 = 1) -> Version<Note> {
        Version(stamp: stamp(milliseconds, revision: revision), record: .live(note))
    }

    static func tombstone<Content>(at milliseconds: UInt64, revision: UInt8 = 1) -> Version<Content> {
        Version(stamp: stamp(milliseconds, revision: revision), record: .tombstone)
    }
}
