import Testing
@testable import Merge

@Suite struct FolderMergeTests {
    func version(_ folder: Folder, at milliseconds: UInt64, revision: UInt8 = 1) -> Version<Folder> {
        Version(stamp: Fixtures.stamp(milliseconds, revision: revision), record: .live(folder))
    }

    func merge(_ base: Folder?, _ a: Version<Folder>, _ b: Version<Folder>, sourceLocation: SourceLocation = #_sourceLocation) -> Record<Folder> {
        let merged = FolderMerge.merge(base: base.map { .live($0) }, a, b)
        #expect(FolderMerge.merge(base: base.map { .live($0) }, b, a) == merged, "not symmetric", sourceLocation: sourceLocation)
        return merged
    }

    @Test func renameAndMoveMergeIndependently() {
        let base = Folder(name: "Work", parent: nil, movedAt: HLC(rawValue: 1))
        let renamed = Folder(name: "Job", parent: nil, movedAt: HLC(rawValue: 1))
        let moved = Folder(name: "Work", parent: Fixtures.folderID(9), movedAt: HLC(rawValue: 50))
        #expect(merge(base, version(renamed, at: 10), version(moved, at: 20))
            == .live(Folder(name: "Job", parent: Fixtures.folderID(9), movedAt: HLC(rawValue: 50))))
    }

    @Test func concurrentMovesTakeTheLaterPlacementWhole() {
        let base = Folder(name: "F", parent: nil, movedAt: HLC(rawValue: 1))
        let early = Folder(name: "F", parent: Fixtures.folderID(1), movedAt: HLC(rawValue: 100))
        let late = Folder(name: "F", parent: Fixtures.folderID(2), movedAt: HLC(rawValue: 90))
        // The later stamp wins the pair (parent, movedAt), never a mix of the two.
        #expect(merge(base, version(early, at: 10), version(late, at: 20)) == .live(late))
    }

    @Test func deleteVersusEditTheEditWins() {
        let base = Folder(name: "F")
        let renamed = Folder(name: "G")
        let deletion: Version<Folder> = Fixtures.tombstone(at: 99)
        #expect(merge(base, version(renamed, at: 10), deletion) == .live(renamed))
        #expect(merge(base, version(base, at: 10), deletion) == .tombstone)
        #expect(merge(base, deletion, Fixtures.tombstone(at: 5, revision: 3)) == .tombstone)
        #expect(merge(nil, version(base, at: 10), deletion) == .live(base))
    }

    @Test func treeSendsOrphansToTheTop() {
        let (a, b, c) = (Fixtures.folderID(1), Fixtures.folderID(2), Fixtures.folderID(3))
        let resolved = FolderTree.resolve([
            a: Folder(name: "a"),
            b: Folder(name: "b", parent: a),
            c: Folder(name: "c", parent: Fixtures.folderID(77)),  // parent deleted (tombstone) or never seen
        ])
        #expect(resolved == [a: nil, b: a, c: nil])
    }

    @Test func treeBreaksMoveCyclesAtTheLatestMove() {
        let (a, b, c, d) = (Fixtures.folderID(1), Fixtures.folderID(2), Fixtures.folderID(3), Fixtures.folderID(4))
        // a → b → c → a, c moved last; d hangs below b.
        let folders = [
            a: Folder(name: "a", parent: b, movedAt: HLC(rawValue: 10)),
            b: Folder(name: "b", parent: c, movedAt: HLC(rawValue: 20)),
            c: Folder(name: "c", parent: a, movedAt: HLC(rawValue: 30)),
            d: Folder(name: "d", parent: b, movedAt: HLC(rawValue: 99)),
        ]
        #expect(FolderTree.resolve(folders) == [a: b, b: c, c: nil, d: b])
        // A tie on movedAt goes to the larger id; a folder inside itself goes to the top.
        let tied = [
            a: Folder(name: "a", parent: b, movedAt: HLC(rawValue: 10)),
            b: Folder(name: "b", parent: a, movedAt: HLC(rawValue: 10)),
            c: Folder(name: "c", parent: c, movedAt: HLC(rawValue: 1)),
        ]
        #expect(FolderTree.resolve(tied) == [a: b, b: nil, c: nil])
    }

    @Test func treeResolutionIsDeterministicAndAcyclic() {
        for seed in Seeds.forProperty("treeResolutionIsDeterministicAndAcyclic", count: 300) {
            var random = SeededGenerator(seed: seed)
            let ids = (0..<UInt64.random(in: 1...12, using: &random)).map { Fixtures.folderID($0) }
            var folders: [FolderID: Folder] = [:]
            for id in ids {
                let parent = random.chance(0.8) ? random.pick(ids + [Fixtures.folderID(500)]) : nil
                folders[id] = Folder(name: "\(id)", parent: parent, movedAt: HLC(rawValue: UInt64.random(in: 0..<5, using: &random)))
            }
            let resolved = FolderTree.resolve(folders)
            let rebuilt = FolderTree.resolve(Dictionary(uniqueKeysWithValues: folders.shuffled(using: &random)))
            #expect(resolved == rebuilt, "MERGE_SEED=\(seed)")
            #expect(Set(resolved.keys) == Set(folders.keys), "MERGE_SEED=\(seed)")
            for start in ids {
                // Walking up from any folder reaches the top within as many steps as there are folders.
                var current: FolderID? = start
                var steps = 0
                while let id = current, steps <= ids.count {
                    current = resolved[id] ?? nil
                    steps += 1
                }
                #expect(current == nil, "MERGE_SEED=\(seed): cycle above \(start)")
            }
            // Only folders whose own parent was missing or part of a cycle lose it.
            for (id, parent) in resolved where parent != folders[id]?.parent {
                #expect(parent == nil, "MERGE_SEED=\(seed)")
            }
        }
    }

    @Test func notesInDeletedFoldersShowInUncategorized() {
        let live = Fixtures.folderID(1)
        let resolved = FolderTree.resolve([live: Folder(name: "live")])
        #expect(FolderTree.effectiveFolder(of: Note(folder: live), in: resolved) == live)
        #expect(FolderTree.effectiveFolder(of: Note(folder: Fixtures.folderID(2)), in: resolved) == nil)
        #expect(FolderTree.effectiveFolder(of: Note(folder: nil), in: resolved) == nil)
    }
}

@Suite struct DeviceMergeTests {
    let key = [UInt8](repeating: 7, count: 32)

    func version(_ device: Device, at milliseconds: UInt64) -> Version<Device> {
        Version(stamp: Fixtures.stamp(milliseconds), record: .live(device))
    }

    @Test func revocationIsSticky() {
        let base = Device(name: "laptop", publicKey: key)
        let revoked = Device(name: "laptop", publicKey: key, revoked: true)
        let renamed = Device(name: "old laptop", publicKey: key)
        let merged = DeviceMerge.merge(base: .live(base), version(revoked, at: 10), version(renamed, at: 20))
        #expect(merged == .live(Device(name: "old laptop", publicKey: key, revoked: true)))
        #expect(DeviceMerge.merge(base: .live(base), version(renamed, at: 20), version(revoked, at: 10)) == merged)
    }

    @Test func namesFollowTheScalarRule() {
        let base = Device(name: "a", publicKey: key)
        let early = Device(name: "b", publicKey: key)
        let late = Device(name: "c", publicKey: key)
        #expect(DeviceMerge.merge(base: .live(base), version(early, at: 10), version(base, at: 30)) == .live(early))
        #expect(DeviceMerge.merge(base: .live(base), version(early, at: 10), version(late, at: 30)) == .live(late))
        #expect(DeviceMerge.merge(base: nil, version(early, at: 10), Fixtures.tombstone(at: 50)) == .live(early))
    }
}
