import Foundation
import Merge

/// A change to a note's fields; `nil` leaves a field as it is.
public struct NoteEdit: Sendable, Equatable {
    public var title: String?
    public var body: [Block]?
    /// `.some(nil)` moves the note to Uncategorized.
    public var folder: FolderID??
    public var pinned: Bool?
    /// `.some(nil)` clears the color.
    public var color: String??
    public var addTags: Set<String>
    public var removeTags: Set<String>
    public var trashed: Bool?

    public init(
        title: String? = nil, body: [Block]? = nil, folder: FolderID?? = nil, pinned: Bool? = nil, color: String?? = nil,
        addTags: Set<String> = [], removeTags: Set<String> = [], trashed: Bool? = nil
    ) {
        self.title = title
        self.body = body
        self.folder = folder
        self.pinned = pinned
        self.color = color
        self.addTags = addTags
        self.removeTags = removeTags
        self.trashed = trashed
    }

    func applied(to note: Note, now: UInt64) -> Note {
        var result = note
        if let title { result.title = title }
        if let body { result.body = body }
        if let folder { result.folder = folder }
        if let pinned { result.pinned = pinned }
        if let color { result.color = color }
        result.tags.subtract(removeTags)
        result.tags.formUnion(addTags)
        if let trashed { result.trashed = trashed }
        if result != note { result.modified = max(now, note.modified) }
        return result
    }
}

/// Local mutations (docs/architecture.md): each is exactly one transaction that writes the revision, its
/// new blocks, its log entry and the materialised state.
extension Replica {
    // MARK: - Notes

    /// Creates a note and returns its id. `created`/`modified` (milliseconds; imports carry a
    /// file's own times) default to `now`; the revision's HLC is always `now`'s.
    public func createNote(
        title: String, body: [Block], folder: FolderID? = nil, tags: Set<String> = [], pinned: Bool = false,
        color: String? = nil, created: UInt64? = nil, modified: UInt64? = nil, now: UInt64
    ) throws -> NoteID {
        try write {
            if let folder { try requireLiveFolder(folder) }
            try validate(tags: tags, color: color)
            let id = newRecordID(now: now)
            let note = Note(
                title: title, body: body, folder: folder, pinned: pinned, color: color, tags: tags,
                created: created ?? now, modified: modified ?? created.map { max($0, now) } ?? now)
            try commitLocal(record: id, content: .note(.live(note)), now: now)
            return id
        }
    }

    /// Applies `edit` to the note's current state; a change that changes nothing writes nothing.
    /// With `baseHeads` (the heads a client read before editing, e.g. in `$EDITOR`), the edit
    /// applies to the note as it was at those heads and is written as a revision on top of them,
    /// so whatever changed meanwhile is merged, never overwritten. Returns the note as it now stands.
    @discardableResult
    public func editNote(_ id: NoteID, _ edit: NoteEdit, basedOn baseHeads: [RevisionID]? = nil, now: UInt64) throws -> Note {
        try write {
            let current = try requireNote(id)
            if case .some(.some(let folder)) = edit.folder { try requireLiveFolder(folder) }
            try validate(tags: edit.addTags, color: edit.color ?? nil)
            let heads = Set(try heads(of: id))
            guard let baseHeads = baseHeads.map(Set.init), baseHeads != heads, !baseHeads.isEmpty else {
                let edited = edit.applied(to: current, now: now)
                guard edited != current else { return current }
                try commitLocal(record: id, content: .note(.live(edited)), now: now)
                return edited
            }
            let rows = try revisionRows(record: id)
            let byID = Dictionary(rows.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            guard baseHeads.allSatisfy({ byID[$0] != nil }) else {
                throw ReplicaError.unknownBaseRevision
            }
            var unusedHashes: [Block: BlockHash] = [:]
            let dag = RecordDAG(rows)
            let (base, _) = try foldHeads(
                Array(baseHeads), rows: byID, dag: dag, erased: dag.erasedByTombstones(rows),
                load: { row in try self.loadNote(row, hashes: &unusedHashes) },
                merge: { base, a, b in Self.mergeNotes(id, base: base, a, b) })
            guard case .live(let baseNote) = base.record else { throw ReplicaError.notFound(kind: .note, id: id) }
            let edited = edit.applied(to: baseNote, now: now)
            guard edited != baseNote else { return current }
            try commitLocal(record: id, content: .note(.live(edited)), parents: Array(baseHeads).sorted(), now: now)
            return try requireNote(id)
        }
    }

    /// Moves the note to the Trash (it keeps its folder, for restoring).
    @discardableResult
    public func trashNote(_ id: NoteID, now: UInt64) throws -> Note { try editNote(id, NoteEdit(trashed: true), now: now) }

    @discardableResult
    public func restoreNote(_ id: NoteID, now: UInt64) throws -> Note { try editNote(id, NoteEdit(trashed: false), now: now) }

    /// Deletes the note permanently: a tombstone, and its content gone from this replica.
    public func purgeNote(_ id: NoteID, now: UInt64) throws {
        try write {
            _ = try requireNote(id)
            try commitLocal(record: id, content: .note(.tombstone), now: now)
        }
    }

    // MARK: - Folders

    public func createFolder(name: String, parent: FolderID? = nil, now: UInt64) throws -> FolderID {
        try write {
            try validate(folderName: name)
            if let parent { try requireLiveFolder(parent) }
            let id = newRecordID(now: now)
            let hlc = clock.advanced(now: now)
            try commitLocal(record: id, content: .folder(.live(Folder(name: name, parent: parent, movedAt: hlc))), now: now)
            return id
        }
    }

    public func renameFolder(_ id: FolderID, to name: String, now: UInt64) throws {
        try write {
            try validate(folderName: name)
            var folder = try requireLiveFolder(id)
            guard folder.name != name else { return }
            folder.name = name
            try commitLocal(record: id, content: .folder(.live(folder)), now: now)
        }
    }

    /// Moves a folder under `parent` (nil: top level). Refuses a move into itself or below itself.
    public func moveFolder(_ id: FolderID, to parent: FolderID?, now: UInt64) throws {
        try write {
            var folder = try requireLiveFolder(id)
            if let parent {
                try requireLiveFolder(parent)
                let tree = FolderTree.resolve(try liveFolders())
                var cursor: FolderID? = parent
                while let current = cursor {
                    guard current != id else {
                        throw ReplicaError.invalid("cannot move a folder into itself or one of its subfolders")
                    }
                    cursor = tree[current] ?? nil
                }
            }
            guard folder.parent != parent else { return }
            folder.parent = parent
            folder.movedAt = clock.advanced(now: now)
            try commitLocal(record: id, content: .folder(.live(folder)), now: now)
        }
    }

    /// Deletes a folder (a tombstone). Its notes show in Uncategorized and its subfolders at
    /// the top level; nothing inside is deleted.
    public func deleteFolder(_ id: FolderID, now: UInt64) throws {
        try write {
            try requireLiveFolder(id)
            try commitLocal(record: id, content: .folder(.tombstone), now: now)
        }
    }

    // MARK: - Devices (the household roster)

    /// Adds a device to the roster (or renames it). A revoked device stays revoked.
    @discardableResult
    public func addDevice(publicKey: [UInt8], name: String, now: UInt64) throws -> RecordID {
        try write { try putDevice(publicKey: publicKey, name: name, now: now) }
    }

    /// `addDevice` inside a caller's transaction. A revoked device stays revoked unless
    /// `readmitting` (an invite made for it).
    @discardableResult
    func putDevice(publicKey: [UInt8], name: String, readmitting: Bool = false, now: UInt64) throws -> RecordID {
        guard publicKey.count == 32 else { throw ReplicaError.invalid("a device public key is 32 bytes") }
        let id = Self.deviceRecordID(publicKey: publicKey)
        let existing = try device(id)
        let revoked = (existing?.revoked ?? false) && !readmitting
        if let existing, existing.name == name, existing.revoked == revoked { return id }
        let device = Device(name: name, publicKey: publicKey, revoked: revoked, added: existing?.added ?? now)
        try commitLocal(record: id, content: .device(.live(device)), now: now)
        return id
    }

    public func revokeDevice(_ id: RecordID, now: UInt64) throws {
        try write {
            guard var device = try device(id) else { throw ReplicaError.notFound(kind: .device, id: id) }
            guard !device.revoked else { return }
            device.revoked = true
            try commitLocal(record: id, content: .device(.live(device)), now: now)
        }
    }

    // MARK: - The one write path for local changes

    /// Writes `content` as the record's next revision on top of all its heads. A local head
    /// that no peer has been offered, edited within the coalescing window, is replaced rather
    /// than extended (same parents, same log entry), so typing does not flood history.
    func commitLocal(record: RecordID, content: RecordContent, parents explicitParents: [RevisionID]? = nil, now: UInt64) throws {
        let heads = try heads(of: record)
        let hlc = tick(now: now)
        if let explicitParents {
            let revision = Revision(record: record, parents: explicitParents, author: replicaID, hlc: hlc, content: content)
            try storeNew(revision, dot: nextOwnDot())
            return
        }
        if heads.count == 1, let head = try revisionRow(heads[0], of: record), head.author == replicaID, !head.purged,
           head.kind == content.kind, let dot = try ownDot(of: head.id, above: offeredSeq),
           now <= head.hlc.milliseconds + Self.coalescingWindowMilliseconds, dot.seq > (try sealedSeq())
        {
            let revision = Revision(record: record, parents: head.parents, author: replicaID, hlc: hlc, content: content)
            let encoded = try insertLocalRevision(revision)
            try database.run("UPDATE log SET revision = ?1 WHERE replica = ?2 AND seq = ?3", [
                .hash(encoded.id), .record(dot.replica.raw), .integer(Int64(dot.seq)),
            ])
            try database.run("DELETE FROM heads WHERE record = ?1 AND revision = ?2", [.record(record), .hash(head.id)])
            try Self.detachDeltaChildren(of: head.id, record: record, in: database)
            try database.run("DELETE FROM revisions WHERE record = ?1 AND id = ?2", [.record(record), .hash(head.id)])
            try settlePacks(try releaseBlocks(head.body, of: head.id, record: record), of: record, newest: encoded.body)
            try advanceHeads(record: record, kind: content.kind, parents: [], to: encoded.id)
            try materialize(record, kind: content.kind, stored: encoded)
            return
        }
        let revision = Revision(record: record, parents: heads, author: replicaID, hlc: hlc, content: content)
        try storeNew(revision, dot: nextOwnDot())
    }

    // MARK: - Checks

    @discardableResult
    func requireNote(_ id: NoteID) throws -> Note {
        guard let note = try note(id) else { throw ReplicaError.notFound(kind: .note, id: id) }
        return note
    }

    @discardableResult
    func requireLiveFolder(_ id: FolderID) throws -> Folder {
        guard let folder = try folder(id) else { throw ReplicaError.notFound(kind: .folder, id: id) }
        return folder
    }

    private func validate(folderName name: String) throws {
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty else { throw ReplicaError.invalid("a folder name cannot be empty") }
        guard !name.contains("/") else { throw ReplicaError.invalid("a folder name cannot contain '/' (it separates folders in paths)") }
        guard name.utf8.count <= 1_024 else { throw ReplicaError.invalid("a folder name is limited to 1024 bytes") }
    }

    private func validate(tags: Set<String>, color: String?) throws {
        for tag in tags {
            guard !tag.isEmpty, tag.utf8.count <= RevisionCodec.Limits.tag else {
                throw ReplicaError.invalid("a tag must be 1 to \(RevisionCodec.Limits.tag) bytes long")
            }
        }
        if let color, color.utf8.count > RevisionCodec.Limits.shortText {
            throw ReplicaError.invalid("a color is limited to \(RevisionCodec.Limits.shortText) bytes")
        }
    }
}
