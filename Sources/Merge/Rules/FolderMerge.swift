/// The merge of two concurrent versions of a folder: `name` and the placement (`parent` with
/// `movedAt`, as one value) follow the scalar rule; delete versus edit, the edit wins.
public enum FolderMerge {
    public static func merge(base: Record<Folder>?, _ a: Version<Folder>, _ b: Version<Folder>) -> Record<Folder> {
        let (winner, loser) = FieldRules.ordered(a, b)
        let base = base?.live
        if let decided = FieldRules.deletion(base: base, winner.record, loser.record) { return decided }
        guard case .live(let won) = winner.record, case .live(let lost) = loser.record else {
            preconditionFailure("FieldRules.deletion decides every case with a tombstone")
        }
        let placement = FieldRules.scalar(base: base.map(Placement.init), winner: Placement(won), loser: Placement(lost))
        return .live(Folder(
            name: FieldRules.scalar(base: base?.name, winner: won.name, loser: lost.name),
            parent: placement.parent, movedAt: placement.movedAt))
    }

    /// A move: the parent and when it was set, which only make sense together.
    private struct Placement: Equatable {
        var parent: FolderID?
        var movedAt: HLC

        init(_ folder: Folder) {
            parent = folder.parent
            movedAt = folder.movedAt
        }
    }
}

/// The folder tree as it is shown, derived from the folders' merged states — never written
/// back, so every device derives the same tree from the same records.
public enum FolderTree {
    /// The effective parent of every live folder: a parent that is missing or a tombstone (not
    /// in `folders`) → top level (`nil`). Concurrent moves can make folders contain each other;
    /// in each such cycle the folder with the latest `movedAt` (tie: larger id) goes to the top
    /// level. Each folder has one parent, so cycles are disjoint and one cut per cycle leaves
    /// the tree acyclic.
    public static func resolve(_ folders: [FolderID: Folder]) -> [FolderID: FolderID?] {
        var parents: [FolderID: FolderID?] = [:]
        for (id, folder) in folders {
            let parent = folder.parent.flatMap { folders[$0] == nil ? nil : $0 }
            parents.updateValue(parent, forKey: id)
        }
        enum Visit { case onPath, done }
        var visits: [FolderID: Visit] = [:]
        for start in folders.keys where visits[start] == nil {
            var path: [FolderID] = []
            var next: FolderID? = start
            while let current = next, visits[current] == nil {
                visits[current] = .onPath
                path.append(current)
                next = parents[current] ?? nil
            }
            if let repeated = next, visits[repeated] == .onPath, let cycleStart = path.firstIndex(of: repeated) {
                let cut = path[cycleStart...].max { lhs, rhs in
                    (folders[lhs]?.movedAt ?? .zero, lhs) < (folders[rhs]?.movedAt ?? .zero, rhs)
                }
                if let cut { parents.updateValue(nil, forKey: cut) }
            }
            for id in path { visits[id] = .done }
        }
        return parents
    }

    /// Where a note shows: its folder if that folder is live (in `resolved`), else Uncategorized.
    public static func effectiveFolder(of note: Note, in resolved: [FolderID: FolderID?]) -> FolderID? {
        guard let folder = note.folder, resolved.index(forKey: folder) != nil else { return nil }
        return folder
    }
}
