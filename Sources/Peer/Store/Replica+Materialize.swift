import Merge

/// A conflict copy this replica derived while materialising a note (docs/merge.md).
public struct ConflictCopyCreated: Hashable, Sendable {
    public let copy: NoteID
    public let original: NoteID
    public let title: String
}

/// How a note's visible state changed in a transaction.
public enum NoteChange: String, Hashable, Sendable {
    case created, edited, trashed, restored, purged
}

/// What one committed transaction changed, for events and counters.
public struct Changes: Hashable, Sendable {
    /// Notes whose visible state changed, with how (the first change in the transaction wins
    /// for `created`; later ones refine it).
    public var notes: [NoteID: NoteChange] = [:]
    public var folders: Set<FolderID> = []
    public var devices: Set<RecordID> = []
    public var conflictCopies: [ConflictCopyCreated] = []

    public init() {}

    public var isEmpty: Bool { notes.isEmpty && folders.isEmpty && devices.isEmpty }

    mutating func note(_ id: NoteID, _ change: NoteChange) {
        if notes[id] == .created, change != .purged { return }
        notes[id] = change
    }

    /// Adds the changes a later part of the same transaction made (a nested write's).
    mutating func absorb(_ later: Changes) {
        for (id, change) in later.notes { note(id, change) }
        folders.formUnion(later.folders)
        devices.formUnion(later.devices)
        conflictCopies += later.conflictCopies
    }
}

/// The revision DAG of one record, for finding merge bases.
struct RecordDAG {
    let parents: [RevisionID: [RevisionID]]

    init(_ rows: [Replica.RevisionRow]) {
        parents = Dictionary(rows.map { ($0.id, $0.parents) }, uniquingKeysWith: { first, _ in first })
    }

    /// Every revision reachable from `starts` through parents, `starts` included.
    func ancestors(of starts: [RevisionID]) -> Set<RevisionID> {
        var seen = Set<RevisionID>()
        var stack = starts
        while let next = stack.popLast() {
            guard seen.insert(next).inserted else { continue }
            stack.append(contentsOf: parents[next] ?? [])
        }
        return seen
    }

    /// Revisions whose content a tombstone erased: every proper ancestor of a tombstone. A pure
    /// function of the DAG, so every replica treats the same revisions as gone whether or not
    /// it has physically purged them yet (merge bases must agree for states to converge).
    func erasedByTombstones(_ rows: [Replica.RevisionRow]) -> Set<RevisionID> {
        let tombstones = rows.filter(\.tombstone)
        guard !tombstones.isEmpty else { return [] }
        return ancestors(of: tombstones.flatMap(\.parents))
    }

    /// The lowest common ancestors of two sets of revisions: common ancestors that are not
    /// ancestors of another common ancestor. Empty when they share no history.
    func lowestCommonAncestors(_ left: [RevisionID], _ right: [RevisionID]) -> [RevisionID] {
        let common = ancestors(of: left).intersection(ancestors(of: right))
        guard !common.isEmpty else { return [] }
        let below = ancestors(of: common.flatMap { parents[$0] ?? [] })
        return common.subtracting(below).sorted()
    }
}

extension Replica {
    /// The stamp standing for several merged heads: their latest HLC, and a revision id that is
    /// a pure function of the set, so every replica folds the same heads to the same stamp.
    static func virtualStamp(_ members: [Stamp]) -> Stamp {
        guard members.count > 1 else { return members[0] }
        let ids = members.map(\.revision).sorted()
        return Stamp(hlc: members.map(\.hlc).max()!, revision: Sodium.hash256(concatenated(ids)))
    }

    /// Folds a record's heads into one version (docs/architecture.md: state is a function of the DAG).
    /// Heads are folded in canonical stamp order; each step merges with the lowest common
    /// ancestors (several are merged first, recursively; none → no base).
    /// Revisions in `erased` (ancestors of a tombstone) read as tombstones.
    func foldHeads<Content>(
        _ heads: [RevisionID], rows: [RevisionID: RevisionRow], dag: RecordDAG, erased: Set<RevisionID> = [],
        load loadRow: (RevisionRow) throws -> Record<Content>,
        merge: (Record<Content>?, Version<Content>, Version<Content>) -> (Record<Content>, Conflict?)
    ) throws -> (version: Version<Content>, conflicts: [Conflict]) {
        func load(_ row: RevisionRow) throws -> Record<Content> { erased.contains(row.id) ? .tombstone : try loadRow(row) }
        func version(_ id: RevisionID) throws -> Version<Content> {
            let row = rows[id]!
            return Version(stamp: row.stamp, record: try load(row))
        }
        func fold(_ revisions: [RevisionID], keepConflicts: Bool) throws -> (Version<Content>, [Conflict]) {
            let ordered = revisions.sorted { rows[$0]!.stamp < rows[$1]!.stamp }
            var members = [ordered[0]]
            var accumulated = try version(ordered[0])
            var conflicts: [Conflict] = []
            for next in ordered.dropFirst() {
                let ancestors = dag.lowestCommonAncestors(members, [next])
                let base: Record<Content>? = switch ancestors.count {
                case 0: nil
                case 1: try load(rows[ancestors[0]]!)
                default: try fold(ancestors, keepConflicts: false).0.record
                }
                let (merged, conflict) = merge(base, accumulated, try version(next))
                members.append(next)
                accumulated = Version(stamp: Self.virtualStamp(members.map { rows[$0]!.stamp }), record: merged)
                if keepConflicts, let conflict { conflicts.append(conflict) }
            }
            return (accumulated, conflicts)
        }
        return try fold(heads, keepConflicts: true)
    }

    /// Recomputes `record`'s current state from its heads, writes the materialised row, purges
    /// what tombstones erased, and derives conflict copies. `stored` is a revision of the record
    /// this transaction just stored, still in memory: when it is the one head, it is not read
    /// back (the common case of an edit, and of every note a catch-up brings).
    /// `newInBatch`: what this transaction gave a record the store held nothing of before it,
    /// so its heads, its tombstones and its materialised row (none) need not be read.
    func materialize(_ record: RecordID, kind: RecordKind, stored: RevisionRow? = nil, newInBatch: RecordNewInBatch? = nil) throws {
        let heads = try newInBatch.map { $0.heads.sorted() } ?? heads(of: record)
        guard !heads.isEmpty else { return }
        let hadNoRow = newInBatch != nil
        // A record whose one head has no parents is new: no history, so no tombstone to look for.
        let single = heads.count == 1 ? try (stored?.id == heads[0] ? stored : revisionRow(heads[0], of: record)) : nil
        let isNew = single.map(\.parents.isEmpty) ?? false
        let hasTombstone = isNew ? false : try newInBatch.map(\.hasTombstone) ?? database.first(
            "SELECT 1 FROM revisions WHERE record = ?1 AND tombstone = 1 LIMIT 1", [.record(record)]) { _ in true } ?? false
        let everything = heads.count > 1 || hasTombstone
        if !everything, kind == .note, let row = single, !row.purged {
            // One head and no tombstone, so nothing is erased: no DAG is built (every note a
            // catch-up brings).
            return try writeNoteRow(record, asStoredIn: row, hadNoRow: hadNoRow)
        }
        try ungathered { try materializeMerging(record, kind: kind, heads: heads, single: single, everything: everything, hadNoRow: hadNoRow) }
    }

    /// `materialize` for a record whose state is a merge of its heads, or whose one head is a
    /// tombstone or follows one.
    private func materializeMerging(
        _ record: RecordID, kind: RecordKind, heads: [RevisionID], single: RevisionRow?, everything: Bool, hadNoRow: Bool
    ) throws {
        let allRows = everything ? try revisionRows(record: record) : [single!]
        let rows = Dictionary(allRows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let dag = RecordDAG(everything ? allRows : [])
        let erased = dag.erasedByTombstones(allRows)
        try purgeContent(of: erased, rows: rows)
        switch kind {
        case .note where heads.count == 1 && erased.isEmpty && !(single?.purged ?? true):
            try writeNoteRow(record, asStoredIn: single!, hadNoRow: hadNoRow)
        case .note:
            var blockHashes: [Block: BlockHash] = [:]
            let (version, conflicts) = try foldHeads(
                heads, rows: rows, dag: dag, erased: erased,
                load: { row in try self.loadNote(row, hashes: &blockHashes) },
                merge: { base, a, b in Self.mergeNotes(record, base: base, a, b) })
            try writeNote(record, version, blockHashes: blockHashes, hadNoRow: hadNoRow)
            for conflict in conflicts {
                if let created = try deriveConflictCopy(of: record, conflict) { pendingChanges.conflictCopies.append(created) }
            }
        case .folder:
            let (version, _) = try foldHeads(
                heads, rows: rows, dag: dag, erased: erased, load: loadFolder,
                merge: { base, a, b in (FolderMerge.merge(base: base, a, b), nil) })
            try writeFolder(record, version.record)
            pendingChanges.folders.insert(record)
        case .device:
            let (version, _) = try foldHeads(
                heads, rows: rows, dag: dag, erased: erased, load: loadDevice,
                merge: { base, a, b in (DeviceMerge.merge(base: base, a, b), nil) })
            try writeDevice(record, version.record)
            pendingChanges.devices.insert(record)
        }
    }

    /// A note whose one head is `row`: its state is that revision as stored; no block needs
    /// reading.
    private func writeNoteRow(_ record: RecordID, asStoredIn row: RevisionRow, hadNoRow: Bool) throws {
        guard case .note(let stored) = try row.decoded ?? RevisionCodec.decodeStored(row.data).content else { return }
        try writeNoteRow(record, stored, stamp: row.stamp, hadNoRow: hadNoRow)
    }

    /// The note merge, with the conflict copy made a function of the losing version alone
    /// (its own folder and Trash state rather than the merged note's).
    static func mergeNotes(_ note: NoteID, base: Record<Note>?, _ a: Version<Note>, _ b: Version<Note>) -> (Record<Note>, Conflict?) {
        let outcome = NoteMerge.merge(note: note, base: base, a, b)
        guard var conflict = outcome.conflict, case .live(let loser) = (a.stamp == conflict.loser ? a : b).record else {
            return (outcome.merged, outcome.conflict)
        }
        conflict.copy.folder = loser.folder
        conflict.copy.trashed = loser.trashed
        return (outcome.merged, conflict)
    }

    // MARK: - Loading revision content

    /// A purged revision reads as a tombstone: its content is gone by design.
    func loadNote(_ row: RevisionRow, hashes: inout [Block: BlockHash]) throws -> Record<Note> {
        guard !row.purged, case .note(let stored) = try RevisionCodec.decodeStored(row.data).content else { return .tombstone }
        guard case .live(let fields) = stored else { return .tombstone }
        let blocks = try self.blocks(of: row.record, fields.body)
        for (block, hash) in zip(blocks, fields.body) { hashes[block] = hash }
        return .live(fields.note(body: blocks))
    }

    func loadFolder(_ row: RevisionRow) throws -> Record<Folder> {
        guard !row.purged, case .folder(let stored) = try RevisionCodec.decodeStored(row.data).content else { return .tombstone }
        return stored
    }

    func loadDevice(_ row: RevisionRow) throws -> Record<Device> {
        guard !row.purged, case .device(let stored) = try RevisionCodec.decodeStored(row.data).content else { return .tombstone }
        return stored
    }

    // MARK: - Writing materialised state

    /// Writes a merged note (with its blocks): hashes each block the merge composed itself.
    private func writeNote(_ id: NoteID, _ version: Version<Note>, blockHashes: [Block: BlockHash], hadNoRow: Bool) throws {
        guard case .live(let note) = version.record else {
            try writeNoteRow(id, .tombstone, stamp: version.stamp, hadNoRow: hadNoRow)
            return
        }
        var body: [BlockHash] = []
        body.reserveCapacity(note.body.count)
        var places: BlockPlaces?
        for block in note.body {
            if let hash = blockHashes[block] {
                body.append(hash)
            } else {
                // A block the merge composed itself: store it so the state never points at nothing.
                let encoded = block.encoded()
                let hash = RevisionCodec.blockHash(encoded)
                try storeComposedBlock(encoded, hash: hash, of: id, places: &places)
                body.append(hash)
            }
        }
        try writeNoteRow(id, .live(RevisionCodec.NoteFields(note, body: body)), stamp: version.stamp, hadNoRow: hadNoRow)
    }

    /// Writes (or, for a tombstone, deletes) a note's materialised row and records how its
    /// visible state changed.
    /// `hadNoRow`: the note is known to have no row yet (a record new to this transaction).
    func writeNoteRow(_ id: NoteID, _ record: Record<RevisionCodec.NoteFields<BlockHash>>, stamp: Stamp, hadNoRow: Bool) throws {
        let before = hadNoRow ? nil : try database.first("SELECT trashed, folder FROM notes WHERE id = ?1", [.record(id)]) { row in
            (folder: row.recordID(1), trashed: row.int(0) != 0)
        }
        let wasTrashed = before?.trashed
        guard case .live(let note) = record else {
            if before != nil {
                try database.run("DELETE FROM notes WHERE id = ?1", [.record(id)])
                pendingCounts.note(before: before, after: nil)
                try removeFromSearch(id)
                pendingChanges.note(id, .purged)
            }
            // Blocks the merge composed for the note's shown state (`writeNote`) belong to no
            // revision, so no release frees them: the note shows nothing now, so they go too.
            try database.run("DELETE FROM block_packs WHERE record = ?1 AND refs <= 0", [.record(id)])
            return
        }
        switch wasTrashed {
        case nil: pendingChanges.note(id, .created)
        case .some(let trashed) where trashed != note.trashed: pendingChanges.note(id, note.trashed ? .trashed : .restored)
        case .some: pendingChanges.note(id, .edited)
        }
        try upsertNoteRow(id, note, hlc: stamp.hlc, hadRow: before != nil)
        pendingCounts.note(before: before, after: (note.folder, note.trashed))
        if writingInBulk {
            pendingSearchNotes.append(id)
        } else {
            try indexForSearch(id, title: note.title, body: note.body)
        }
    }

    /// A materialised note's columns, in the order `upsertNoteRow` binds them.
    static let noteColumns = "id, title, body, folder, trashed, pinned, color, created, modified, conflict_of, hlc"
    private static let upsertNote = """
        INSERT INTO notes (\(noteColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
        ON CONFLICT(id) DO UPDATE SET title = excluded.title, body = excluded.body, folder = excluded.folder,
            trashed = excluded.trashed, pinned = excluded.pinned, color = excluded.color, created = excluded.created,
            modified = excluded.modified, conflict_of = excluded.conflict_of, hlc = excluded.hlc
        """

    private func upsertNoteRow(_ id: NoteID, _ note: RevisionCodec.NoteFields<BlockHash>, hlc: HLC, hadRow: Bool) throws {
        let values: [SQLValue] = [
            .record(id), .text(note.title), .blob(Self.concatenated(note.body)),
            note.folder.map { .record($0) } ?? .null, .integer(note.trashed ? 1 : 0), .integer(note.pinned ? 1 : 0),
            note.color.map { .text($0) } ?? .null, .integer(Int64(bitPattern: note.created)),
            .integer(Int64(bitPattern: note.modified)), note.conflictOf.map { .record($0) } ?? .null,
            .integer(Int64(bitPattern: hlc.rawValue)),
        ]
        // A note with no row yet, in a batch of received entries: its row and tags wait to go
        // in with others (`GatheredRows`).
        if !hadRow, try gather(values, of: id, into: .notes) {
            for tag in note.tags { gatheredRows!.addTag(tag, of: id) }
            return
        }
        try database.run(Self.upsertNote, values)
        if hadRow { try database.run("DELETE FROM note_tags WHERE note = ?1", [.record(id)]) }
        for tag in note.tags { try insertTag(tag, of: id) }
    }

    private func writeFolder(_ id: FolderID, _ record: Record<Folder>) throws {
        guard case .live(let folder) = record else {
            try database.run("DELETE FROM folders WHERE id = ?1", [.record(id)])
            return
        }
        try database.run(
            """
            INSERT INTO folders (id, name, parent, moved_at) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT(id) DO UPDATE SET name = excluded.name, parent = excluded.parent, moved_at = excluded.moved_at
            """,
            [
                .record(id), .text(folder.name), folder.parent.map { .record($0) } ?? .null,
                .integer(Int64(bitPattern: folder.movedAt.rawValue)),
            ])
    }

    private func writeDevice(_ id: RecordID, _ record: Record<Device>) throws {
        guard case .live(let device) = record else {
            try database.run("DELETE FROM devices WHERE id = ?1", [.record(id)])
            return
        }
        try database.run(
            """
            INSERT INTO devices (id, name, public_key, revoked, added) VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(id) DO UPDATE SET name = excluded.name, public_key = excluded.public_key, revoked = excluded.revoked,
                added = excluded.added
            """,
            [.record(id), .text(device.name), .blob(device.publicKey), .integer(device.revoked ? 1 : 0), .integer(Int64(clamping: device.added))])
    }

    // MARK: - Purge and conflict copies

    /// Content of a permanently deleted record is gone at once (docs/architecture.md): every revision a
    /// tombstone descends from keeps its place in the DAG, so no stale device brings the record
    /// back, but loses its data and its claim on blocks. An edit made concurrently with the
    /// deletion is not an ancestor of the tombstone and keeps its text (the edit wins).
    func purgeContent(of erased: Set<RevisionID>, rows: [RevisionID: RevisionRow]) throws {
        var unsettled: [RecordID: [Int64]] = [:]
        for id in erased.sorted() {
            guard let row = rows[id], !row.purged, !row.tombstone else { continue }
            unsettled[row.record, default: []] += try releaseBlocks(row.body, of: id, record: row.record)
            try Self.detachDeltaChildren(of: id, record: row.record, in: database)
            // The body list stays: hashes reveal no text, and edits may be sent against it.
            try database.run("UPDATE revisions SET data = x'', purged = 1 WHERE record = ?1 AND id = ?2", [.record(row.record), .hash(id)])
        }
        for (record, packs) in unsettled.sorted(by: { $0.key < $1.key }) { try settlePacks(packs, of: record) }
    }

    /// Writes the conflict copy for `conflict` unless this replica already has that record
    /// (derived earlier, received from a peer, or since purged by the user).
    private func deriveConflictCopy(of note: NoteID, _ conflict: Conflict) throws -> ConflictCopyCreated? {
        let copyID = Self.conflictCopyID(
            note: note, title: conflict.copy.title, body: conflict.copy.body.map { RevisionCodec.blockHash($0.encoded()) })
        guard try !recordExists(copyID) else { return nil }
        let revision = Revision(record: copyID, parents: [], author: .derived, hlc: conflict.loser.hlc, content: .note(.live(conflict.copy)))
        // Derived during a merge, maybe of a peer's batch: refusing it would stop that sync.
        try storeNew(revision, dot: nextOwnDot(), authored: false)
        return ConflictCopyCreated(copy: copyID, original: note, title: conflict.copy.title)
    }

    /// Stores a revision made on this replica (authored or derived) with its blocks and log
    /// entry, advances the record's heads and materialises it.
    @discardableResult
    func storeNew(_ revision: Revision, dot: Dot, authored: Bool = true) throws -> RevisionID {
        let encoded = try insertLocalRevision(revision, authored: authored)
        try crashPoint?("revision stored")
        try appendLog(dot, revision: encoded.id, of: revision.record)
        try crashPoint?("log appended")
        try advanceHeads(record: revision.record, kind: revision.kind, parents: revision.parents, to: encoded.id)
        try materialize(revision.record, kind: revision.kind, stored: encoded)
        try crashPoint?("materialised")
        return encoded.id
    }

    /// Encodes a revision made here and stores it with its blocks; returns the row as it now
    /// reads. One the user `authored` must be one every peer can receive (a derived conflict
    /// copy is stored regardless).
    func insertLocalRevision(_ revision: Revision, authored: Bool = true) throws -> RevisionRow {
        let encoded = RevisionCodec.encode(revision)
        if authored { try Self.checkSendable(encoded) }
        let header = try RevisionCodec.header(encoded.bytes)
        let inserted = try insertRevision(
            id: encoded.id, header: header, data: encoded.bytes, body: SortedBlockHashes(header.body),
            newBlocks: SuppliedBlocks(hashes: encoded.blocks.map(\.hash), encoded: encoded.blocks.map { $0.encoded[...] }))
        precondition(inserted.missing.isEmpty, "a local revision supplies all of its blocks")
        return RevisionRow(encoded.id, header: header, data: encoded.bytes)
    }

    /// The most a revision and its blocks may weigh: sent whole, they travel as one entry,
    /// which must fit a sync frame (`FrameCodec.Limits.frameBytes`) with room to spare.
    public static let maximumRevisionWithBlocks = FrameCodec.Limits.frameBytes / 2

    /// Refuses a local change no peer could receive: saving it would succeed here and then
    /// stop sync with every peer at that entry.
    static func checkSendable(_ encoded: EncodedRevision) throws {
        let blockBytes = encoded.blocks.reduce(0) { $0 + $1.encoded.count }
        let total = encoded.bytes.count + blockBytes
        guard total <= maximumRevisionWithBlocks, encoded.bytes.count <= FrameCodec.Limits.revisionBytes,
              encoded.blocks.count <= FrameCodec.Limits.blocksPerFrame
        else {
            throw ReplicaError.invalid(
                "this note is too large to sync: \(total / 1_048_576) MiB in \(encoded.blocks.count) blocks, and a note may hold at most "
                    + "\(maximumRevisionWithBlocks / 1_048_576) MiB so that every device can receive it; split it into smaller notes")
        }
    }
}

/// What one `apply` transaction gave a record the store held nothing of before it
/// (`Replica.heldRecords(among:)`): every revision the record has, its heads, and whether one
/// is a tombstone (where its blocks are, `apply` keeps with every record's). Its heads change as the store's do (`advanceHeads`): a revision
/// replaces its parents.
struct RecordNewInBatch {
    private(set) var revisions: Set<RevisionID> = []
    private(set) var heads: [RevisionID] = []
    private(set) var hasTombstone = false

    mutating func add(_ revision: RevisionID, header: RevisionHeader) {
        revisions.insert(revision)
        heads.removeAll { header.parents.contains($0) }
        if !heads.contains(revision) { heads.append(revision) }
        hasTombstone = hasTombstone || header.isTombstone
    }
}
