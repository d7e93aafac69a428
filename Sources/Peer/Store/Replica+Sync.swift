import CSQLite
import Merge
import Synchronization

/// Whether `Replica.releaseMemory` trims the process's heap (`Replica.tuneHeapForDaemon`).
private let heapTrimming = Atomic<Bool>(false)
/// Whether big buffers stay in the heap for a catch-up or an import, until the next
/// `Replica.releaseMemory` (`Replica.keepLargeBuffersInHeap`).
private let heapKeepsLargeBuffers = Atomic<Bool>(false)

/// The result of applying a batch: how far it got, and why it stopped if it stopped early.
/// Whatever was applied is committed: a batch always leaves a contiguous prefix.
public struct ApplyOutcome: Sendable {
    public var applied = 0
    public var duplicates = 0
    public var need: Need?
    /// A malformed entry (bad hash, undecodable data): the sender is broken; stop talking to it.
    public var rejected: String?
    public var changes = Changes()
    /// The latest HLC among newly applied revisions (for measuring sync lag).
    public var latestHLC: HLC?
}

extension Replica {
    // MARK: - Sending

    /// The entries a peer holding `peer` lacks, in this replica's storage order (so parents
    /// come before children), at most `maxCount` entries and about `maxBytes` (always ≥ 1).
    /// Own entries handed out here are marked offered, so they are never coalesced away.
    public func entries(missingFrom peer: VersionVector, maxCount: Int = 500, maxBytes: Int = 256 * 1024) throws -> [EntryPayload] {
        let payloads = try database.read { try collectEntries(missingFrom: peer, maxCount: maxCount, maxBytes: maxBytes) }
        if payloads.count >= Self.bulkBatchThreshold { Self.keepLargeBuffersInHeap() }
        if let ownHighest = payloads.lazy.filter({ $0.dot.replica == self.replicaID }).map(\.dot.seq).max() {
            try markOffered(through: ownHighest)
        }
        return payloads
    }

    private func collectEntries(missingFrom peer: VersionVector, maxCount: Int, maxBytes: Int) throws -> [EntryPayload] {
        var candidates: [(stored: Int64, dot: Dot, record: RecordID?, revision: RevisionID)] = []
        for (replica, ours) in vector.counters where ours > peer[replica] {
            candidates += try database.rows(
                "SELECT stored, seq, record, revision FROM log WHERE replica = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                [.record(replica.raw), .integer(Int64(peer[replica])), .integer(Int64(maxCount))]
            ) { row in
                (row.int(0), Dot(replica: replica, seq: UInt64(row.int(1))), row.recordID(2), Hash256(bytes: row.blob(3))!)
            }
        }
        candidates.sort { $0.stored < $1.stored }
        var payloads: [EntryPayload] = []
        var bytes = 0
        for candidate in candidates.prefix(maxCount) {
            let payload = try payload(candidate.dot, candidate.revision, of: candidate.record)
            if !payloads.isEmpty, bytes + payload.approximateSize > maxBytes { break }
            bytes += payload.approximateSize
            payloads.append(payload)
        }
        return payloads
    }

    private func payload(_ dot: Dot, _ id: RevisionID, of record: RecordID?) throws -> EntryPayload {
        guard let record, let row = try revisionRow(id, of: record) else {
            throw ReplicaError.invalid("log entry \(dot) names revision \(id.short), which is not stored")
        }
        if row.purged {
            let header = RevisionHeader(
                kind: row.kind, record: row.record, parents: row.parents, author: row.author, hlc: row.hlc,
                isTombstone: row.tombstone, body: row.body)
            return EntryPayload(dot: dot, revision: id, content: .purged(header))
        }
        var inherited = Set<BlockHash>()
        var firstParentBody: [BlockHash]?
        for parent in row.parents {
            if let body = try storedBody(parent, of: record) {
                inherited.formUnion(body)
                if parent == row.parents.first { firstParentBody = body }
            }
        }
        var added: [BlockHash] = []
        var seen = Set<BlockHash>(minimumCapacity: row.body.count)
        for hash in row.body where !inherited.contains(hash) && seen.insert(hash).inserted { added.append(hash) }
        let blocks = try blockData(added, of: row.record).map { $0[...] }
        let full = EntryPayload(dot: dot, revision: id, content: .full(data: row.data, blocks: blocks))
        // A note edit travels as edits to its first parent's body when that is smaller: the
        // receiver holds that parent (parents come first) and its body list (kept even when purged).
        guard row.kind == .note, !row.tombstone, let parentBody = firstParentBody, let split = try BodyDelta.split(row.data) else {
            return full
        }
        let edited = EntryPayload(dot: dot, revision: id, content: .edited(
            prefix: Array(split.prefix), edits: BodyDelta.edits(from: parentBody, to: split.body), suffix: Array(split.suffix), blocks: blocks))
        return edited.approximateSize < full.approximateSize ? edited : full
    }

    /// The encoded blocks of `record` for `hashes`; throws when one is not stored.
    public func blockData(_ hashes: [BlockHash], of record: RecordID) throws -> [[UInt8]] {
        try zip(hashes, storedBlocks(hashes, of: record)).map { hash, data in
            guard let data else {
                throw ReplicaError.invalid("block \(hash.short) of \(record) is not stored here")
            }
            return data
        }
    }

    /// The blocks among `hashes` that are stored here, for answering a peer's `need`.
    /// A `needBlocks` frame names hashes only, and blocks are kept per record: the peer asks
    /// for the blocks of the first entry it could not apply, which is, for some replica, the
    /// entry after what it holds (`peerHolds`); so those entries' records are looked in first.
    /// A hash found under none of them is looked for in every pack's directory (it costs what
    /// the library holds; it should not happen).
    public func availableBlocks(_ hashes: [BlockHash], maxBytes: Int, peerHolds: VersionVector) throws -> [[UInt8]] {
        var records: [RecordID] = []
        for (replica, ours) in vector.counters.sorted(by: { $0.key < $1.key }) where ours > peerHolds[replica] {
            let next = peerHolds[replica] + 1
            let record = try database.first(
                "SELECT record FROM log WHERE replica = ?1 AND seq = ?2",
                [.record(replica.raw), .integer(Int64(next))]) { $0.recordID(0) } ?? nil
            if let record, !records.contains(record) { records.append(record) }
        }
        var found: [BlockHash: [UInt8]] = [:]
        var unplaced = Array(Set(hashes)).sorted()
        for record in records where !unplaced.isEmpty {
            for (hash, data) in zip(unplaced, try storedBlocks(unplaced, of: record)) { found[hash] = data }
            unplaced.removeAll { found[$0] != nil }
        }
        if !unplaced.isEmpty {
            let asked = Set(unplaced)
            var holders: [RecordID: [BlockHash]] = [:]
            try forEachStoredBlock { record, hash, _, _ in
                if asked.contains(hash) { holders[record, default: []].append(hash) }
            }
            for (record, held) in holders.sorted(by: { $0.key < $1.key }) {
                for (hash, data) in zip(held, try storedBlocks(held, of: record)) where found[hash] == nil { found[hash] = data }
            }
        }
        var answer: [[UInt8]] = []
        var bytes = 0
        for hash in hashes {
            guard let data = found[hash] else { continue }
            if !answer.isEmpty, bytes + data.count > maxBytes { break }
            answer.append(data)
            bytes += data.count
        }
        return answer
    }

    /// At most this many bytes of blocks wait in memory for their entries (`storeBlocks`):
    /// a peer sends a large note's blocks just ahead of it, and answers a `need` with at most
    /// a window of batches. Beyond it the oldest are forgotten: what was sent last is what the
    /// next entries use (blocks of an entry that came as a duplicate, or from another peer
    /// first, are never taken up), and whatever an entry still lacks it asks for again.
    static let awaitingBlocksLimit = 64 * 1_048_576

    /// Keeps blocks a peer sent ahead of an entry, or in answer to a `need`, until the entry
    /// that uses them is applied (`insertRevision` takes them from here).
    public func storeBlocks(_ encodedBlocks: [[UInt8]]) throws {
        for encoded in encodedBlocks {
            try Block.check(encoded: encoded)
            let hash = RevisionCodec.blockHash(encoded)
            guard sentBlocksAwaitingUse[hash] == nil else { continue }
            var oldest = 0
            while sentBlocksAwaitingBytes + encoded.count > Self.awaitingBlocksLimit, oldest < sentBlocksArrivalOrder.count {
                sentBlocksAwaitingBytes -= sentBlocksAwaitingUse.removeValue(forKey: sentBlocksArrivalOrder[oldest])?.count ?? 0
                oldest += 1
            }
            sentBlocksArrivalOrder.removeFirst(oldest)
            // Hashes taken up since stay in the order until here: keep it near the map's size.
            if sentBlocksArrivalOrder.count > 2 * sentBlocksAwaitingUse.count + 1_024 {
                sentBlocksArrivalOrder.removeAll { sentBlocksAwaitingUse[$0] == nil }
            }
            sentBlocksAwaitingUse[hash] = encoded
            sentBlocksAwaitingBytes += encoded.count
            sentBlocksArrivalOrder.append(hash)
        }
    }

    // MARK: - Settings while writing in bulk (a catch-up, an import)

    /// A batch this large means a catch-up (or an import) is running: worth a larger page
    /// cache and fewer checkpoints, and its notes wait for the search index.
    public static let bulkBatchThreshold = 100
    /// The log's size between checkpoints while writing in bulk: 64 MiB, in pages of the
    /// library's size (16,384 of 4 KiB). SQLite's default, restored afterwards, is 1,000 pages.
    static let bulkWriteCheckpointBytes = 64 << 20

    /// What a bulk write is, which decides how it journals (docs/decisions.md, "A bulk write
    /// without the log").
    public enum BulkWrite: Sendable {
        /// A catch-up's batches (up to 2,000 entries a commit): without the write-ahead log
        /// when no other connection is open (`leaveTheLog`).
        case catchUp
        /// An import's batches (`notesctl import` sends 500 notes a `notes.createMany`): in the
        /// log, whose copy runs on the other core; a rollback journal's extra syncs a commit
        /// made imports 3–8 % slower.
        case `import`
    }

    /// Settings for a catch-up or an import, undone by `releaseMemory`: a 16 MiB page cache
    /// (with the default 2 MiB, a batch's dirty pages spill mid-transaction and the same pages
    /// are written many times; 64 MiB, chosen when blocks and revisions were keyed by hash,
    /// held 50 MiB more at the peak of a 100,000-note catch-up for no measurable speed, now
    /// that their inserts append: docs/decisions.md, "The bulk write's page cache"), and the
    /// journal `kind` asks for. Notes materialised meanwhile wait for the search index.
    public func enterBulkWrite(_ kind: BulkWrite) throws {
        guard !writingInBulk else { return }
        Self.keepLargeBuffersInHeap()
        try database.execute("PRAGMA cache_size = -16384")
        // A return that failed at the last `releaseMemory` first: the checkpointing thread's
        // connection would otherwise switch the file back to the log underneath.
        try returnToLog()
        let leftTheLog = kind == .catchUp ? try leaveTheLog() : false
        if !leftTheLog { try keepLogForBulkWrite() }
        writingInBulk = true
    }

    /// Has the bulk write journal its transactions in a rollback journal instead of the
    /// write-ahead log, when no other connection is open (docs/decisions.md, "A bulk write
    /// without the log"): a page new to the file (most of a catch-up's) is then written once,
    /// where the log writes every page twice (into the log, then copied into the file). Each
    /// commit stays atomic and durable (`synchronous=FULL` syncs the journal, then the file,
    /// then the journal's truncation); a crash leaves a journal that the next open rolls back.
    /// False when the log stays: another connection is open.
    private func leaveTheLog() throws -> Bool {
        guard connectionsBeside == 0 else { return false }
        closeParallelReader()
        guard try database.setJournalMode(.rollbackTruncated) else { return false }
        outOfTheLog = true
        return true
    }

    /// A bulk write in the write-ahead log: its copy into the database file on a thread of its
    /// own (`checkpointBesideBulkWrites`), or SQLite's own checkpoints every
    /// `bulkCheckpointPages` instead of every 1,000 pages (each checkpoint copies again the
    /// index pages every batch since the last one touched, and waits for two fsyncs).
    private func keepLogForBulkWrite() throws {
        // Without a second connection (none left to open), SQLite's own checkpoints.
        if checkpointsBeside, let thread = try? WALCheckpointer(path: path) {
            checkpointer = thread
            database.countLogPages()
        } else {
            try database.execute("PRAGMA wal_autocheckpoint = \(bulkCheckpointPages)")
        }
    }

    /// Back to the write-ahead log, which every other connection to the library expects
    /// (`releaseMemory`, `connectionBesideOpening`). Through `DELETE`, which removes the
    /// journal file: the switch from `TRUNCATE` straight to WAL would leave it, empty.
    private func returnToLog() throws {
        guard outOfTheLog else { return }
        closeParallelReader()
        guard try database.setJournalMode(.rollbackDeleted), try database.setJournalMode(.writeAheadLog) else {
            throw ReplicaError.logNotRestored(path: path)
        }
        outOfTheLog = false
    }

    /// Another connection to this library is about to open beside the engine's (a backup,
    /// the start-up check), on another thread: a catch-up that left the write-ahead log goes
    /// back into it first, and catch-ups stay in it until `connectionBesideClosed`. With a
    /// rollback journal, that connection's reads and the engine's commits would wait for
    /// each other; in the log, neither waits.
    public func connectionBesideOpening() throws {
        if outOfTheLog {
            try returnToLog()
            if writingInBulk { try keepLogForBulkWrite() }
        }
        connectionsBeside += 1
    }

    /// The connection announced by `connectionBesideOpening` is closed.
    public func connectionBesideClosed() {
        assert(connectionsBeside > 0, "a connection beside the engine's closed that was never announced")
        connectionsBeside = max(0, connectionsBeside - 1)
    }

    /// The log's size, in pages, at which a bulk write waits for its copy into the database
    /// file: the library's own size, and at least `bulkCheckpointPages` (64 MiB). With a
    /// fixed 64 MiB the engine of a 100,000-note catch-up waited for a copy five times; grown
    /// with the library, once, and the rest is copied after "holds all" (`releaseMemory`).
    /// The log then needs about the library's size on disk, plus a batch (the limit is
    /// checked before each transaction), while no reader holds an older state of it
    /// (docs/decisions.md, "The bulk write's log grows with the library").
    func bulkLogLimit() throws -> Int {
        guard bulkLogGrowsWithLibrary else { return bulkCheckpointPages }
        return max(bulkCheckpointPages, Int(try database.first("PRAGMA page_count") { $0.int(0) } ?? 0))
    }

    /// Has each bulk write's log copied into the database file on a thread of its own
    /// (`WALCheckpointer`), so the engine's thread, a catch-up's bottleneck, copies little of
    /// it (docs/decisions.md, "Checkpoints beside a bulk write"). The daemon's choice: the
    /// tests and the simulation, with many replicas in one process, keep one thread each.
    public func checkpointBesideBulkWrites() { checkpointsBeside = true }

    /// Ends the bulk write's checkpointing thread (its checkpoint in progress done first).
    func stopCheckpointer() {
        checkpointer?.stop()
        checkpointer = nil
    }

    /// A catch-up or an import is under way: its notes wait for the search index until it ends.
    public var isWritingInBulk: Bool { writingInBulk }

    /// Tunes the process's heap for a long-lived daemon; process-wide, called once by notesd at
    /// start, before the engine's threads (and by notes-bench, for its in-process replicas):
    /// big buffers (sync batches) go straight back to the system when freed, `releaseMemory`
    /// hands the heap's free pages back too (`malloc_trim`), and the threads share
    /// `heapArenas` malloc arenas. Without it (tests, the simulation) the heap is left as it
    /// is: trimming walks the whole heap, and in a process holding many replicas, releasing
    /// after every live change made trimming a large share of the simulation's time
    /// (docs/decisions.md, "Heap trimming").
    public static func tuneHeapForDaemon() {
        notesd_keep_large_buffers_mapped()
        notesd_limit_heap_arenas(heapArenas)
        heapTrimming.store(true, ordering: .relaxed)
    }

    /// The daemon's malloc arenas: it runs about ten threads, mostly idle, and at most about
    /// four are busy at once (engine, network, a control or web request, the log's copy).
    /// Fewer arenas leave less free room stranded in the arenas of idle threads
    /// (docs/decisions.md, "Four heap arenas").
    static let heapArenas: Int32 = 4

    /// While a catch-up (in either direction) or an import runs, the daemon's big buffers come
    /// from the heap and its freed pages stay there, so each batch's 2 MiB frames, plaintexts
    /// and entries reuse the last one's pages; `releaseMemory` hands them back once sync idles.
    /// Mapped afresh, they cost a 10,000-note catch-up's receiver ~8,000 page faults and its
    /// sender ~40 ms of its ~290 ms of CPU (docs/decisions.md, "Big buffers in the heap during
    /// a catch-up"). Process-wide; in the daemon only (`tuneHeapForDaemon`).
    static func keepLargeBuffersInHeap() {
        guard heapTrimming.load(ordering: .relaxed), !heapKeepsLargeBuffers.exchange(true, ordering: .relaxed) else { return }
        notesd_keep_large_buffers_in_heap()
    }

    /// Gives memory and disk back once the replica is idle again (an idle daemon stays small):
    /// drops blocks kept for entries that never came (a catch-up cut short, or blocks nobody
    /// asked for); after a catch-up, returns the file to the write-ahead log (or checkpoints
    /// and truncates it) and restores the small page cache; always drops SQLite's other
    /// caches and, in the daemon (`tuneHeapForDaemon`), the heap pages a big batch left behind.
    /// The catch-up's notes still wait for the search index (`indexPendingSearch`).
    /// Called when no sync is in progress, so after each live change too: trimming only after
    /// catch-ups was tried, and a daemon that served one and then 300 edits idled 2.4 MiB
    /// larger (24.6 MiB, at the 25 MB target), for ~0.5 ms saved per edit.
    public func releaseMemory() throws {
        // First, so that the frees below already shrink the heap, and before anything can fail.
        if heapKeepsLargeBuffers.exchange(false, ordering: .relaxed) { notesd_keep_large_buffers_mapped() }
        sentBlocksAwaitingUse = [:]
        sentBlocksAwaitingBytes = 0
        sentBlocksArrivalOrder = []
        if writingInBulk {
            writingInBulk = false
            // Stopped first: a checkpoint can run on one connection at a time.
            stopCheckpointer()
            // SQLite's automatic checkpoints again (in place of `countLogPages`, if it was on),
            // before anything here can fail.
            try database.execute("PRAGMA wal_autocheckpoint = 1000")
            try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            try database.execute("PRAGMA cache_size = -2000")
        }
        // Outside the bulk write's settings, so a return that failed is tried again.
        try returnToLog()
        try database.execute("PRAGMA shrink_memory")
        Self.releaseFreeHeap()
    }

    /// Hands the heap's free pages back to the system, in the daemon only (`tuneHeapForDaemon`).
    public static func releaseFreeHeap() {
        if heapTrimming.load(ordering: .relaxed) { notesd_release_free_heap() }
    }

    // MARK: - Receiving

    /// Applies entries from a peer in one transaction (docs/protocol.md): idempotent (an entry held
    /// already is skipped), in order (parents and blocks must be present or sent), then
    /// recomputes every record it touched. Stops at the first entry it cannot apply and says
    /// what it needs; what came before is committed.
    public func apply(_ entries: [EntryPayload], now: UInt64) throws -> ApplyOutcome {
        if entries.count >= Self.bulkBatchThreshold { try enterBulkWrite(.catchUp) }
        var outcome = ApplyOutcome()
        try write {
            // Rows go in many to a statement (`GatheredRows`).
            gatheredRows = GatheredRows()
            defer { gatheredRows = nil }
            // Each record the batch changed, with its revision stored last while it is whole
            // (materialised from memory when it is the record's one head).
            var touched: [RecordID: (kind: RecordKind, stored: RevisionRow?)] = [:]
            touched.reserveCapacity(entries.count)
            // Records the store held nothing of before this batch, with what the batch gave
            // them; and those it held (`heldRecords(among:)`).
            let records = entries.map { entry in Result { try entry.record } }
            let heldBefore = Set(try heldRecords(among: Array(Set(records.compactMap { try? $0.get() })).sorted()[...]))
            var newInBatch: [RecordID: RecordNewInBatch] = [:]
            newInBatch.reserveCapacity(entries.count - heldBefore.count)
            // Where each record's blocks are, read once per batch (none for a record new to it):
            // nothing in the entry loop deletes a pack (purges happen as the batch is materialised).
            var places: [RecordID: BlockPlaces] = [:]
            var latest = HLC.zero
            entryLoop: for (entry, decodedRecord) in zip(entries, records) {
                if vector.contains(entry.dot) {
                    outcome.duplicates += 1
                    continue
                }
                guard entry.dot.seq == vector[entry.dot.replica] + 1 else {
                    outcome.need = .gap(replica: entry.dot.replica, expected: vector[entry.dot.replica] + 1)
                    break
                }
                let record: RecordID
                do {
                    record = try decodedRecord.get()
                } catch {
                    outcome.rejected = "entry \(entry.dot): \(error)"
                    break
                }
                // What follows reads the record's revisions, blocks and heads.
                if gatheredRows!.hasRows(of: record) { try insertGatheredRows() }
                if newInBatch[record] == nil, !heldBefore.contains(record) { newInBatch[record] = RecordNewInBatch() }
                if try newInBatch[record]?.revisions.contains(entry.revision) ?? hasRevision(entry.revision, of: record) {
                    try appendLog(entry.dot, revision: entry.revision, of: record)
                    outcome.applied += 1
                    continue
                }
                var content = entry.content
                if case .edited(let prefix, let edits, let suffix, let blocks) = content {
                    // Rebuild the canonical encoding from the first parent's body.
                    guard let first = try? BodyDelta.recordAndParents(inPrefix: prefix).parents.first else {
                        outcome.rejected = "entry \(entry.dot): an edited revision must name a parent"
                        break entryLoop
                    }
                    guard let parentBody = try storedBody(first, of: record) else {
                        outcome.need = .parents([first])
                        break entryLoop
                    }
                    guard let body = try? BodyDelta.apply(edits, to: parentBody) else {
                        outcome.rejected = "entry \(entry.dot): its body edits do not fit the parent's body"
                        break entryLoop
                    }
                    content = .full(data: BodyDelta.join(prefix: prefix, body: body, suffix: suffix), blocks: blocks)
                }
                let header: RevisionHeader
                var decoded: RevisionCodec.StoredContent?
                switch content {
                case .purged(let stub):
                    header = stub
                case .full(let data, _):
                    guard entry.checks?.revisionMatches ?? (Sodium.hash256(data) == entry.revision) else {
                        outcome.rejected = "entry \(entry.dot): revision data does not hash to its id \(entry.revision.short)"
                        break entryLoop
                    }
                    do {
                        (header, decoded) = try entry.checks?.revisionDecoded?.get() ?? RevisionCodec.decodeStored(data)
                    } catch {
                        outcome.rejected = "entry \(entry.dot): \(error)"
                        break entryLoop
                    }
                case .edited:
                    preconditionFailure("edited content was rebuilt into full content above")
                }
                var missingParents: [RevisionID] = []
                // A revision's parents are revisions of its record: one named elsewhere is
                // never found, and the peer is asked again until the session gives up on it.
                for parent in header.parents where try !(newInBatch[record]?.revisions.contains(parent) ?? hasRevision(parent, of: record)) {
                    missingParents.append(parent)
                }
                guard missingParents.isEmpty else {
                    outcome.need = .parents(missingParents)
                    break
                }
                switch content {
                case .edited:
                    preconditionFailure("edited content was rebuilt into full content above")
                case .purged:
                    try insertPurgedRevision(id: entry.revision, header: header)
                case .full(let data, let blocks):
                    guard let hashes = entry.checks.map(\.blockHashes) ?? EntryPayload.blockHashes(blocks) else {
                        outcome.rejected = "entry \(entry.dot): a block does not decode"
                        break entryLoop
                    }
                    let sorted = SortedBlockHashes(header.body)
                    var recordPlaces = try places[record] ?? (newInBatch[record] != nil ? BlockPlaces() : blockPlaces(of: record))
                    let inserted = try insertRevision(
                        id: entry.revision, header: header, data: data, body: sorted,
                        newBlocks: SuppliedBlocks(hashes: hashes, encoded: blocks), places: recordPlaces)
                    guard inserted.missing.isEmpty else {
                        outcome.need = .blocks(inserted.missing)
                        break entryLoop
                    }
                    if let pack = inserted.pack { recordPlaces.add(pack.hashes, in: pack.id) }
                    places[record] = recordPlaces
                }
                try crashPoint?("remote revision stored")
                try appendLog(entry.dot, revision: entry.revision, of: record)
                try advanceHeads(record: header.record, kind: header.kind, parents: header.parents, to: entry.revision)
                // A purged revision's stub stored no blocks and is not whole.
                var stored: RevisionRow?
                if case .full(let data, _) = content { stored = RevisionRow(entry.revision, header: header, data: data, decoded: decoded) }
                newInBatch[record]?.add(entry.revision, header: header)
                touched[header.record] = (header.kind, stored)
                latest = max(latest, header.hlc)
                outcome.applied += 1
            }
            try insertGatheredRows()
            // The keys sorted alone: sorting the pairs moved every stored row along with them.
            for record in touched.keys.sorted() {
                let change = touched[record]!
                try materialize(record, kind: change.kind, stored: change.stored, newInBatch: newInBatch[record])
            }
            try insertGatheredRows()
            try crashPoint?("batch materialised")
            if latest > .zero {
                clock = clock.receiving(latest, now: now)
                outcome.latestHLC = latest
            }
        }
        outcome.changes = lastChanges
        return outcome
    }
}
