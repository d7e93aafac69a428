import Merge

extension Replica {
    /// The note as it stood at `heads` (the heads a client read, `notes.get`'s `heads`),
    /// folded the way `editNote(_:_:basedOn:now:)` folds them; nil when the note is gone or a
    /// head is not one of its revisions. What a Markdown edit is compared against.
    public func note(_ id: NoteID, atHeads heads: [RevisionID]) throws -> Note? {
        let current = Set(try self.heads(of: id))
        let wanted = Set(heads)
        if wanted.isEmpty || wanted == current { return try note(id) }
        let rows = try revisionRows(record: id)
        let byID = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        guard wanted.allSatisfy({ byID[$0] != nil }) else { return nil }
        var unusedHashes: [Block: BlockHash] = [:]
        let dag = RecordDAG(rows)
        let (base, _) = try foldHeads(
            Array(wanted), rows: byID, dag: dag, erased: dag.erasedByTombstones(rows),
            load: { row in try self.loadNote(row, hashes: &unusedHashes) },
            merge: { base, a, b in Self.mergeNotes(id, base: base, a, b) })
        guard case .live(let note) = base.record else { return nil }
        return note
    }
}
