import Merge

/// Why a revision of a note's history cannot be read or brought back.
public enum HistoryError: Error, Equatable, CustomStringConvertible {
    /// No revision of the note has an id starting with `prefix`.
    case noSuchRevision(note: NoteID, prefix: String)
    /// Several revisions of the note start with `prefix`.
    case ambiguousRevision(note: NoteID, prefix: String, candidates: [RevisionID])
    /// A revision id prefix is hex digits only, at least `minimumPrefix` of them.
    case badRevisionReference(String)
    /// A purge erased the revision's content on every device: only its place in the DAG is left.
    case erasedByPurge(RevisionID)
    /// The revision is the note's deletion (a tombstone): there is nothing in it to show.
    case isDeletion(RevisionID)
    /// `baseHeads` names revisions the note does not have.
    case unknownBaseHeads(note: NoteID)

    /// The fewest hex digits a revision reference may have (`notesctl log` shows 12).
    public static let minimumPrefix = 4

    public var description: String {
        switch self {
        case .noSuchRevision(let note, let prefix):
            "note \(note) has no revision \(prefix); list its revisions with `notesctl log \(note.description.prefix(8))`"
        case .ambiguousRevision(_, let prefix, let candidates):
            "revision \(prefix) is ambiguous (\(candidates.count) revisions start with it: \(candidates.prefix(3).map(\.short).joined(separator: ", "))); give more digits"
        case .badRevisionReference(let text):
            "\"\(text)\" is not a revision id: give at least \(Self.minimumPrefix) hex digits, as `notesctl log` prints them"
        case .erasedByPurge(let revision):
            "the content of revision \(revision.short) was erased by a permanent delete (purge); only its place in the history is left, so it cannot be shown or restored"
        case .isDeletion(let revision):
            "revision \(revision.short) is the note's permanent delete; it has no content to show or restore"
        case .unknownBaseHeads:
            "baseHeads names a revision this note does not have; read the note again and retry"
        }
    }
}

/// What `purgeNote(_:basedOn:now:)` did.
public struct PurgeOutcome: Hashable, Sendable {
    /// The note is gone (a tombstone is its only head).
    public let purged: Bool
    /// Revisions the purging person had not seen (not ancestors of the given base heads) that
    /// now keep the note; empty when `purged`.
    public let unseen: [StoredRevision]
}

/// Reading a note as it was at any revision, bringing one back, and deleting based on what
/// was seen (docs/architecture.md, "History").
extension Replica {
    /// Resolves a revision reference of `note`: a full id or a unique hex prefix.
    public func resolveRevision(_ reference: String, of note: NoteID) throws -> RevisionID {
        let prefix = reference.lowercased()
        guard prefix.count >= HistoryError.minimumPrefix, prefix.count <= 64, prefix.allSatisfy(\.isHexDigit) else {
            throw HistoryError.badRevisionReference(reference)
        }
        let matches = try revisionRows(record: note).map(\.id).filter { $0.description.hasPrefix(prefix) }
        switch matches.count {
        case 0: throw HistoryError.noSuchRevision(note: note, prefix: reference)
        case 1: return matches[0]
        default: throw HistoryError.ambiguousRevision(note: note, prefix: reference, candidates: matches.sorted())
        }
    }

    /// The note as it was at `revision` (one revision's own content, not a merge of heads).
    public func note(_ id: NoteID, at revision: RevisionID) throws -> Note {
        let rows = try revisionRows(record: id)
        guard let row = rows.first(where: { $0.id == revision }) else {
            throw HistoryError.noSuchRevision(note: id, prefix: revision.description)
        }
        guard !row.tombstone else { throw HistoryError.isDeletion(revision) }
        guard !row.purged, !RecordDAG(rows).erasedByTombstones(rows).contains(revision) else {
            throw HistoryError.erasedByPurge(revision)
        }
        var unusedHashes: [Block: BlockHash] = [:]
        guard case .live(let note) = try loadNote(row, hashes: &unusedHashes) else { throw HistoryError.erasedByPurge(revision) }
        return note
    }

    /// Writes a new revision of the note on top of all its current heads whose title, body,
    /// folder, tags, pinned state and colour are `revision`'s (the Trash state, creation time and
    /// conflict-copy link stay the note's). It never folds into the edit before it, and the edits
    /// after it do not fold into it, so the history keeps showing the restore. Restoring what the
    /// note already shows writes nothing. Returns the note as it now stands and whether it changed.
    @discardableResult
    public func restoreRevision(_ id: NoteID, to revision: RevisionID, now: UInt64) throws -> (note: Note, changed: Bool) {
        try write {
            let current = try requireNote(id)
            let source = try note(id, at: revision)
            var restored = current
            restored.title = source.title
            restored.body = source.body
            restored.folder = source.folder
            restored.tags = source.tags
            restored.pinned = source.pinned
            restored.color = source.color
            guard restored != current else { return (current, false) }
            restored.modified = max(now, current.modified)
            try commitLocal(record: id, content: .note(.live(restored)), parents: try heads(of: id).sorted(), now: now)
            try setMeta("sealed", vector[replicaID])
            return (try requireNote(id), true)
        }
    }

    /// Own entries up to this seq are never coalesced into (a restore is a point in history
    /// of its own), whether or not they were offered to a peer.
    func sealedSeq() throws -> UInt64 {
        UInt64(bitPattern: try database.first("SELECT value FROM meta WHERE key = 'sealed'") { $0.int(0) } ?? 0)
    }

    /// Deletes the note permanently, as seen at `baseHeads` (the heads of the copy the person
    /// looked at before confirming). When the note changed since, the tombstone is written on
    /// those heads, concurrent with the newer revisions, so the edit its author never saw wins
    /// (delete against edit keeps the edit, docs/merge.md) and the note stays. Without
    /// `baseHeads`, or when nothing changed, it deletes what is here now.
    public func purgeNote(_ id: NoteID, basedOn baseHeads: [RevisionID]?, now: UInt64) throws -> PurgeOutcome {
        try write {
            _ = try requireNote(id)
            let heads = Set(try heads(of: id))
            guard let base = baseHeads.map(Set.init), !base.isEmpty, base != heads else {
                try commitLocal(record: id, content: .note(.tombstone), now: now)
                return PurgeOutcome(purged: true, unseen: [])
            }
            let rows = try revisionRows(record: id)
            let dag = RecordDAG(rows)
            guard base.allSatisfy({ dag.parents[$0] != nil }) else { throw HistoryError.unknownBaseHeads(note: id) }
            let seen = dag.ancestors(of: Array(base))
            let unseenIDs = dag.ancestors(of: Array(heads)).subtracting(seen)
            // History is read before the tombstone erases the content it would describe.
            let unseen = try history(of: id).filter { unseenIDs.contains($0.revision) }
            try commitLocal(record: id, content: .note(.tombstone), parents: base.sorted(), now: now)
            let survived = try note(id) != nil
            return PurgeOutcome(purged: !survived, unseen: survived ? unseen : [])
        }
    }

    /// What a restore brings back: the fields `notes.restoreRevision` copies.
    private struct RestorableContent: Hashable {
        let title: String, body: [Block], folder: FolderID?, tags: Set<String>, pinned: Bool, color: String?
        init(_ note: Note) {
            (title, body, folder, tags, pinned, color) = (note.title, note.body, note.folder, note.tags, note.pinned, note.color)
        }
    }

    /// For each revision whose content differs from its first parent's and equals an earlier
    /// ancestor's: the nearest such ancestor. Derived from the DAG alone, so every device shows
    /// the same "restored from" without the revision having to say it.
    public static func restoreSources(_ entries: [StoredRevision]) -> [RevisionID: RevisionID] {
        let byRevision = Dictionary(entries.map { ($0.revision, $0) }, uniquingKeysWith: { first, _ in first })
        var result: [RevisionID: RevisionID] = [:]
        for entry in entries {
            guard let note = entry.note, let first = entry.parents.first, let parentNote = byRevision[first]?.note else { continue }
            let content = RestorableContent(note)
            guard content != RestorableContent(parentNote) else { continue }
            // Breadth first from the first parent's parents: the nearest ancestor wins.
            var seen: Set<RevisionID> = [first]
            var frontier = byRevision[first]?.parents ?? []
            search: while !frontier.isEmpty {
                var next: [RevisionID] = []
                for id in frontier where seen.insert(id).inserted {
                    guard let ancestor = byRevision[id] else { continue }
                    if let old = ancestor.note, RestorableContent(old) == content {
                        result[entry.revision] = id
                        break search
                    }
                    next.append(contentsOf: ancestor.parents)
                }
                frontier = next
            }
        }
        return result
    }
}
