import Control
import Foundation
import Merge
import Peer

/// History you can trust: reading and restoring revisions, and permanent deletes based on
/// what the person saw (docs/control-protocol.md, docs/architecture.md "History").
extension EngineCore {
    /// Turns a history error into the protocol's error (a revision is not a `RecordKind`).
    func historyRPCError(_ error: HistoryError) -> RPCError {
        switch error {
        case .noSuchRevision: RPCError(code: .notFound, message: error.description)
        case .ambiguousRevision: RPCError(code: .ambiguousReference, message: error.description)
        case .badRevisionReference, .unknownBaseHeads: .invalidParams(error.description)
        case .erasedByPurge, .isDeletion: RPCError(code: .invalidOperation, message: error.description)
        }
    }

    /// Runs `body`, giving history errors their protocol form.
    private func mappingHistoryErrors<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as HistoryError { throw historyRPCError(error) }
    }

    static func revisionIDs(_ texts: [String], parameter: String) throws -> [RevisionID] {
        try texts.map { text in
            guard let id = RevisionID(hex: text.lowercased()) else { throw RPCError.invalidParams("params.\(parameter): \"\(text)\" is not a revision id") }
            return id
        }
    }

    public func notesHistory(_ params: NoteHistoryParams) throws -> [Control.HistoryEntry] {
        let id = try resolveNote(params.id)
        let entries = try replica.history(of: id)
        let authors = replicaDevices()
        let restoredFrom = Replica.restoreSources(entries)
        let byRevision = Dictionary(entries.map { ($0.revision, $0) }, uniquingKeysWith: { first, _ in first })
        return entries.map { entry in
            let parent = entry.parents.first.flatMap { byRevision[$0] }
            var result = historyEntry(entry, parent: parent, authors: authors)
            result.restoredFrom = restoredFrom[entry.revision]?.description
            if params.patch == true { result.patch = Self.patch(entry, parent: parent) }
            return result
        }
    }

    func historyEntry(
        _ entry: StoredRevision, parent: StoredRevision?, authors: [ReplicaID: (id: DeviceID, name: String)]
    ) -> Control.HistoryEntry {
        let author = authors[entry.author]
        return Control.HistoryEntry(
            revision: entry.revision.description, parents: entry.parents.map(\.description), hlc: entry.hlc.description,
            time: Timestamp(millisecondsSince1970: Int64(entry.hlc.milliseconds)), device: author?.id.description,
            deviceShort: author?.id.short, deviceName: author?.name, title: entry.note?.title ?? "",
            changes: Self.changes(entry, parent: parent), erased: entry.note == nil && !entry.isTombstone)
    }

    /// What a revision changed against its first parent (docs/control-protocol.md, `notes.history`).
    static func changes(_ entry: StoredRevision, parent: StoredRevision?) -> [HistoryChange] {
        if entry.isTombstone { return [.deleted] }
        var changes: [HistoryChange] = []
        if entry.parents.count > 1 { changes.append(.merged) }
        guard let parent else { return entry.parents.isEmpty ? [.created] : changes.isEmpty ? [.body] : changes }
        guard let now = entry.note, let before = parent.note else { return changes.isEmpty ? [.body] : changes }
        if now.title != before.title { changes.append(.title) }
        if now.body != before.body { changes.append(.body) }
        if now.folder != before.folder { changes.append(.folder) }
        if now.tags != before.tags { changes.append(.tags) }
        if now.pinned != before.pinned { changes.append(.pinned) }
        if now.color != before.color { changes.append(.color) }
        if now.trashed != before.trashed { changes.append(now.trashed ? .trashed : .restored) }
        return changes.isEmpty ? [.body] : changes
    }

    /// The blocks added and removed against the first parent (everything added for a first revision).
    static func patch(_ entry: StoredRevision, parent: StoredRevision?) -> [BlockChange] {
        guard let note = entry.note else { return [] }
        let old = parent?.note?.body ?? []
        func line(_ op: BlockChange.Operation, _ block: Block) -> BlockChange {
            BlockChange(op: op, html: HTMLBlocks.join([block]), text: block.text)
        }
        var lines: [BlockChange] = []
        for hunk in Diff.hunks(from: old, to: note.body) {
            lines += old[hunk.old].map { line(.removed, $0) }
            lines += note.body[hunk.new].map { line(.added, $0) }
        }
        return lines
    }

    public func notesGetRevision(_ params: NoteRevisionParams) throws -> NoteDocument {
        let id = try resolveNote(params.id)
        return try mappingHistoryErrors {
            let revision = try replica.resolveRevision(params.revision, of: id)
            let note = try replica.note(id, at: revision)
            let format = params.format ?? .html
            let body = switch format {
            case .html: HTMLBlocks.join(note.body)
            case .text: note.body.map(\.text).joined(separator: "\n\n")
            case .markdown: HTMLBlocks.markdown(note.body)
            }
            var summary = try noteSummary(id)
            summary.title = note.title
            summary.folder = note.folder?.description
            summary.folderPath = note.folder.flatMap { folder in
                try? replica.listFolders().first { $0.id == folder }?.path.joined(separator: "/")
            } ?? ""
            summary.pinned = note.pinned
            summary.color = note.color
            summary.tags = note.tags.sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
            summary.trashed = note.trashed
            summary.modified = Timestamp(millisecondsSince1970: Int64(clamping: note.modified))
            // Edited from this copy (`baseHeads`), a change merges with everything since.
            return NoteDocument(summary: summary, format: format, body: body, heads: [revision.description])
        }
    }

    public func notesRestoreRevision(_ params: RestoreRevisionParams) throws -> RestoreRevisionResult {
        let id = try resolveNote(params.id)
        return try mappingHistoryErrors {
            let revision = try replica.resolveRevision(params.revision, of: id)
            let (_, changed) = try replica.restoreRevision(id, to: revision, now: now)
            if changed { committed(.local) }
            return RestoreRevisionResult(note: try noteSummary(id), restoredFrom: revision.description, changed: changed)
        }
    }

    public func notesPurge(_ params: NotePurgeParams) throws -> PurgeResult {
        let id = try resolveNote(params.id)
        let base = try params.baseHeads.map { try Self.revisionIDs($0, parameter: "baseHeads") }
        let outcome = try mappingHistoryErrors { try replica.purgeNote(id, basedOn: base, now: now) }
        committed(.local)
        let authors = replicaDevices()
        let unseen = outcome.unseen.map { historyEntry($0, parent: nil, authors: authors) }
        return PurgeResult(id: id.description, purged: outcome.purged, unseen: unseen)
    }
}
