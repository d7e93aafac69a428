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
        let hits = try searchHits(params.query, limit: limit, folder: folder, tag: params.tag)
        let summaries = try noteSummaries(hits.map(\.note))
        return zip(hits, summaries).map { hit, summary in SearchHit(note: summary, snippet: hit.snippet, rank: hit.rank) }
    }

    /// The hits: in a large library ranked in two halves of the index at once, the second on
    /// the replica's read-only `ParallelReader` (ranking every match of a common word is most of
    /// a search's time; docs/decisions.md, "Search on two cores").
    func searchHits(_ query: String, limit: Int, folder: FolderID??, tag: String?) throws -> [SearchResult] {
        guard let split = try replica.searchSplit() else { return try replica.searchNotes(query, limit: limit, folder: folder, tag: tag) }
        guard let search = try replica.prepareSearch(query, limit: limit, folder: folder, tag: tag) else { return [] }
        let reader = try replica.parallelReader()
        defer { reader.releaseMemory() }
        // The engine's connection ranks the first half while the reader ranks the second;
        // nothing else uses either meanwhile (the engine's queue waits here).
        nonisolated(unsafe) let replica = replica
        let (first, second) = TwoHalves.both(
            { Result { try replica.rankedMatches(search, part: .upTo(split), on: replica.database) } },
            { Result { try replica.rankedMatches(search, part: .after(split), on: reader.database) } })
        return try replica.mergedSearch(try first.get(), try second.get(), limit: limit)
    }
}
