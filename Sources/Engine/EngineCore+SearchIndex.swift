import Peer

/// The search index after a catch-up (docs/architecture.md, "Search indexing after a
/// catch-up"): a catch-up only records which notes it materialised, and the core indexes them
/// afterwards a step at a time, one timer turn each, so control requests and frames never
/// wait behind the whole backlog. `status` counts what is left.
extension EngineCore {
    /// Notes per step: one transaction of about 60 ms on this machine (docs/benchmarks.md).
    static let searchIndexStep = 500

    /// A step is due now: notes wait and no catch-up is adding more (it would pay for its
    /// own writes twice).
    var searchIndexStepDue: Bool { !stopped && searchIndexBacklog > 0 && !replica.isWritingInBulk }

    /// What `status` reports: counted now, so a catch-up in progress shows its notes too.
    func notesToIndex() throws -> Int? {
        let waiting = try replica.notesAwaitingSearchIndex
        return waiting > 0 ? waiting : nil
    }

    func indexSearchStep() {
        guard searchIndexStepDue else { return }
        do {
            let before = searchIndexBacklog
            searchIndexBacklog = try replica.indexPendingSearch(limit: Self.searchIndexStep)
            if searchIndexBacklog == 0 {
                log.info("search index: caught up (\(before) notes in the last step)")
                // The steps filled the page cache and left heap pages behind, and a daemon that
                // caught up may idle from here on: given back at the next turn.
                memoryReleaseDue = true
            }
        } catch {
            // Left for the next start, which counts the backlog again; search misses them meanwhile.
            log.warning("cannot index \(searchIndexBacklog) notes for search: \(error); they are indexed at the next start")
            searchIndexBacklog = 0
        }
    }
}
