import Control
import Merge
import Peer

/// `notes.search` (docs/web.md, "Search"): FTS5 through the replica, answered with the
/// same note summaries as `notes.list`.
extension EngineCore {
    public func notesSearch(_ params: NotesSearchParams) throws -> [SearchHit] {
        let limit = params.limit ?? 50
        guard (1...500).contains(limit) else { throw RPCError.invalidParams("params.limit must be between 1 and 500") }
        var folder: FolderID?? = nil
        if let reference = params.folder { folder = .some(try resolveFolder(reference)) }
        let hits = try replica.searchNotes(params.query, limit: limit, folder: folder, tag: params.tag)
        let summaries = try noteSummaries(hits.map(\.note))
        return zip(hits, summaries).map { hit, summary in SearchHit(note: summary, snippet: hit.snippet, rank: hit.rank) }
    }
}
