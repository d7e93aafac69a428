import Control
import Merge
import Peer

/// `notes.import`: many `notes.create` in one transaction, so an import of a large library
/// pays one commit (and one `fsync`) per batch instead of per note (docs/benchmarks.md,
/// "`library`").
extension Engine {
    func notesImport(_ params: NotesImportParams) throws -> [Control.NoteSummary] {
        guard (1...NotesImportParams.maximumCount).contains(params.notes.count) else {
            throw RPCError.invalidParams("params.notes must hold 1 to \(NotesImportParams.maximumCount) notes (send more in several requests)")
        }
        // Everything checked before the transaction: a refused note refuses the batch, and
        // nothing of it is written.
        var folders: [String: FolderID?] = [:]
        var prepared: [(note: NoteCreateParams, folder: FolderID?, tags: Set<String>)] = []
        for (index, note) in params.notes.enumerated() {
            let reference = note.folder ?? ""
            if folders[reference] == nil { folders[reference] = .some(try resolveFolder(note.folder)) }
            if let color = note.color, color.isEmpty {
                throw RPCError.invalidParams("params.notes[\(index)].color must not be empty (leave it out for no colour)")
            }
            prepared.append((note, folders[reference] ?? nil, try Self.cleanTags(note.tags)))
        }
        let now = Self.now()
        let ids = try replica.inOneTransaction {
            try prepared.map { item in
                try replica.createNote(
                    title: item.note.title, body: HTMLBlocks.split(item.note.html), folder: item.folder, tags: item.tags,
                    pinned: item.note.pinned ?? false, color: item.note.color, now: now)
            }
        }
        committed(.local)
        return try pagedNoteSummaries(try ids.compactMap { try replica.noteSummary($0) })
    }
}
