import Control
import Foundation
import Merge
import Peer

/// The control methods (docs/control-protocol.md), run on the engine's queue. Each mutation
/// is one replica transaction, then its events are published and it is pushed to peers.
extension EngineCore {
    // MARK: - Errors

    /// Turns any failure into the control protocol's error, with a message naming what to do.
    public func rpcError(_ error: any Error) -> RPCError {
        switch error {
        case let error as RPCError: return error
        case let error as ReplicaError:
            switch error {
            case .notFound(let kind, let id): return .notFound(Self.controlKind(kind), id.description)
            case .invalid(let message): return RPCError(code: .invalidOperation, message: message)
            case .corrupt: return RPCError(code: .databaseError, message: error.description, encoding: DatabaseErrorData(sqliteCode: SQLiteError.corruptCode))
            case .unknownBaseRevision: return .invalidParams(error.description)
            case .logNotRestored: return RPCError(code: .databaseError, message: error.description)
            }
        case let error as SQLiteError:
            return RPCError(
                code: .databaseError, message: "the database failed: \(error.message); check free disk space and `journalctl --user -u notesd`",
                encoding: DatabaseErrorData(sqliteCode: error.resultCode))
        default:
            return .internalError("\(error)")
        }
    }

    public static func controlKind(_ kind: RecordKind) -> ReferenceKind {
        switch kind {
        case .note: .note
        case .folder: .folder
        case .device: .device
        }
    }

    // MARK: - References and short ids

    /// Resolves a note reference: a full id, or a unique prefix of ≥ 4 hex digits (dashes and
    /// case ignored).
    public func resolveNote(_ reference: String) throws -> NoteID {
        if let id = RecordID(reference.lowercased()), try replica.noteExists(id) { return id }
        let wanted = Self.hexDigits(reference)
        guard wanted.count >= 4, wanted.count == reference.filter({ $0 != "-" }).count else {
            throw RPCError.invalidParams("a note reference is a note id or at least 4 of its hex digits (got \"\(reference)\")")
        }
        // A range of ids, not every id: 20 are as many as the error lists.
        let matches = try replica.noteIDs(withHexPrefix: wanted, limit: 20)
        guard let first = matches.first else { throw RPCError.notFound(.note, reference) }
        guard matches.count == 1 else {
            let candidates = try matches.prefix(20).map { AmbiguousData.Candidate(id: $0.description, label: try replica.note($0)?.title ?? "") }
            throw RPCError.ambiguous(.note, reference, candidates: candidates)
        }
        return first
    }

    static func hexDigits(_ text: String) -> String { text.lowercased().filter { $0.isHexDigit } }

    /// Resolves a folder reference: id, then path, then id prefix. `""` and `"/"` are the root
    /// (returned as nil).
    public func resolveFolder(_ reference: String?) throws -> FolderID? {
        guard let reference, reference != "", reference != "/" else { return nil }
        // Reads the folders the reference can name (by id, by last path name, by id range)
        // and their ancestors, never the notes.
        if let id = RecordID(reference.lowercased()), try replica.folder(id) != nil { return id }
        let path = reference.hasPrefix("/") ? String(reference.dropFirst()) : reference
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        let byPath = try replica.folders(named: name).filter { $0.path.joined(separator: "/") == path }
        if byPath.count == 1 { return byPath[0].id }
        if byPath.count > 1 {
            throw RPCError.ambiguous(.folder, reference, candidates: byPath.prefix(20).map { .init(id: $0.id.description, label: $0.path.joined(separator: "/")) })
        }
        let wanted = Self.hexDigits(reference)
        if wanted.count >= 4, wanted.count == reference.filter({ $0 != "-" }).count {
            let matches = try replica.folderIDs(withHexPrefix: wanted, limit: 20).compactMap { try replica.folderSummary($0) }
            if matches.count == 1 { return matches[0].id }
            if matches.count > 1 {
                throw RPCError.ambiguous(.folder, reference, candidates: matches.prefix(20).map { .init(id: $0.id.description, label: $0.path.joined(separator: "/")) })
            }
        }
        throw RPCError.notFound(.folder, reference)
    }

    /// The shortest prefix of each id (canonical text) unique among `ids`, at least 8 characters.
    /// Ids are ASCII (hex digits and dashes), so they are sorted and compared as bytes, which
    /// orders them as their text and costs a fraction of comparing characters.
    public static func shortForms(_ ids: [String]) -> [String: String] {
        let sorted = ids.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        func common(_ one: [UInt8], _ other: [UInt8]) -> Int {
            var count = 0
            while count < one.count, count < other.count, one[count] == other[count] { count += 1 }
            return count
        }
        var result: [String: String] = [:]
        result.reserveCapacity(sorted.count)
        for (index, id) in sorted.enumerated() {
            var needed = 8
            if index > 0 { needed = max(needed, common(id, sorted[index - 1]) + 1) }
            if index + 1 < sorted.count { needed = max(needed, common(id, sorted[index + 1]) + 1) }
            needed = min(needed, id.count)
            if needed > 0, needed < id.count, id[needed - 1] == UInt8(ascii: "-") { needed += 1 }
            result[String(decoding: id, as: UTF8.self)] = String(decoding: id[..<needed], as: UTF8.self)
        }
        return result
    }

    /// `shortForms` for record ids already in id order (a note listing reads them from the
    /// primary key), as lengths of the ids' text: the same prefixes, found from the ids' bits —
    /// how many leading hex digits neighbours share — without text, sorting or string keys.
    /// `ShortFormTests` holds the two to the same answers.
    public static func shortFormLengths(sortedRecordIDs ids: [RecordID]) -> [RecordID: Int] {
        /// Leading hex digits `one` and `other` share (32 when equal).
        func sharedDigits(_ one: RecordID, _ other: RecordID) -> Int {
            one.high != other.high ? (one.high ^ other.high).leadingZeroBitCount / 4 : 16 + (one.low ^ other.low).leadingZeroBitCount / 4
        }
        var result: [RecordID: Int] = [:]
        result.reserveCapacity(ids.count)
        for (index, id) in ids.enumerated() {
            var shared = 0
            if index > 0 { shared = max(shared, sharedDigits(id, ids[index - 1])) }
            if index + 1 < ids.count { shared = max(shared, sharedDigits(id, ids[index + 1])) }
            // Up to the first digit no neighbour shares, counting the dashes before it
            // (after digits 8, 12, 16 and 20); never fewer than 8 characters.
            let dashes = shared < 8 ? 0 : min(4, (shared - 4) / 4)
            result[id] = shared >= 32 ? 36 : max(8, shared + dashes + 1)
        }
        return result
    }

    // MARK: - Notes

    /// Up to this many notes, summaries are built note by note (`pagedNoteSummaries`), above
    /// it from every note id at once: an empty Trash or a search's hits must not cost a read
    /// of the whole library.
    static let summariesNoteByNote = 500

    /// Summaries of a listing: short forms among every note id, paths of every folder (no
    /// note counts); a short listing reads only its own notes' neighbours.
    /// `shortFormLengths`: every note id's, when the caller has them already.
    func noteSummaries(_ notes: [NoteRow], shortFormLengths known: [RecordID: Int]? = nil) throws -> [Control.NoteSummary] {
        guard notes.count > Self.summariesNoteByNote else { return try pagedNoteSummaries(notes) }
        return noteSummaries(
            notes, shortForms: try known ?? Self.shortFormLengths(sortedRecordIDs: try replica.noteIDs()),
            paths: try replica.folderPaths().mapValues { $0.joined(separator: "/") })
    }

    /// Summaries of a page: each short form from the note's id neighbours, each path from its
    /// folder's ancestors, so the page costs its own notes.
    func pagedNoteSummaries(_ notes: [NoteRow]) throws -> [Control.NoteSummary] {
        var shorts: [RecordID: Int] = [:]
        var paths: [FolderID: String] = [:]
        for note in notes {
            let ids = ([note.id] + (try replica.neighbouringNoteIDs(of: note.id))).sorted()
            shorts[note.id] = Self.shortFormLengths(sortedRecordIDs: ids)[note.id]
            if let folder = note.folder, paths[folder] == nil { paths[folder] = try replica.folderPath(folder)?.joined(separator: "/") }
        }
        return noteSummaries(notes, shortForms: shorts, paths: paths)
    }

    /// Summaries of `notes` from precomputed short-form lengths and folder paths. Pure, so a
    /// large listing builds its two halves at once (`TwoHalves`), each straight into its part
    /// of the result.
    func noteSummaries(_ notes: [NoteRow], shortForms shorts: [RecordID: Int], paths: [FolderID: String]) -> [Control.NoteSummary] {
        [Control.NoteSummary](unsafeUninitializedCapacity: notes.count) { buffer, initialized in
            // Each half initialises its own elements, and both are done when `map` returns.
            nonisolated(unsafe) let output = buffer
            _ = TwoHalves.map(count: notes.count) { range in
                /// Each folder's id as text once, shared by its notes' summaries.
                var folderIDs: [FolderID: String] = [:]
                for index in range {
                    let note = notes[index]
                    let id = note.id.description
                    let folder = note.folder.map { folder in
                        if let text = folderIDs[folder] { return text }
                        let text = folder.description
                        folderIDs[folder] = text
                        return text
                    }
                    (output.baseAddress! + index).initialize(to: Control.NoteSummary(
                        id: id, short: String(id.utf8.prefix(shorts[note.id] ?? 8))!,
                        title: note.title, folder: folder, folderPath: note.folder.flatMap { paths[$0] } ?? "",
                        pinned: note.pinned, color: note.color, tags: note.tags, trashed: note.trashed,
                        conflictOf: note.conflictOf?.description, created: Timestamp(millisecondsSince1970: Int64(clamping: note.created)),
                        modified: Timestamp(millisecondsSince1970: Int64(clamping: note.modified))))
                }
            }
            initialized = notes.count
        }
    }

    /// One note's summary, reading only that note, its id neighbours (for the short id) and
    /// its folder's ancestors (for the path).
    public func noteSummary(_ id: NoteID) throws -> Control.NoteSummary {
        guard let note = try replica.noteSummary(id) else { throw RPCError.notFound(.note, id.description) }
        return try pagedNoteSummaries([note])[0]
    }

    static let listPageLimit = 10_000

    public func notesList(_ params: NotesListParams) throws -> [Control.NoteSummary] {
        var filter = NoteFilter(trashed: params.trashed ?? false, conflictCopies: params.conflicts, pinned: params.pinned, text: params.query)
        if let folder = params.folder { filter.folder = .some(try resolveFolder(folder)) }
        filter.tag = params.tag
        // The whole listing walks the listing-order index too: it reads the notes it lists
        // (an empty Trash reads none), and from the index alone (migration 11).
        guard params.limit != nil || params.after != nil else { return try everyNoteSummary(filter) }
        let limit = params.limit ?? Self.listPageLimit
        guard (1...Self.listPageLimit).contains(limit) else {
            throw RPCError.invalidParams("params.limit must be between 1 and \(Self.listPageLimit)")
        }
        let after = try params.after.map { after in
            guard let id = RecordID(after.id.lowercased()) else {
                throw RPCError.invalidParams("params.after.id must be a full note id (the id of the last note of the page before)")
            }
            return NoteListPosition(pinned: after.pinned, modified: UInt64(clamping: after.modified.rawValue), id: id)
        }
        return try pagedNoteSummaries(try replica.listNotes(filter, limit: limit, after: after))
    }

    /// Every note `filter` matches, summarised. Outside the Trash of a large library, the ids
    /// for the short forms are read and measured on the `ParallelReader`, on the other core,
    /// while the engine's connection reads the listing.
    func everyNoteSummary(_ filter: NoteFilter) throws -> [Control.NoteSummary] {
        guard !filter.trashed, try replica.noteCount > Self.summariesNoteByNote else {
            return try noteSummaries(try replica.listNotes(filter, limit: .max, after: nil))
        }
        let reader = try replica.parallelReader()
        defer { reader.releaseMemory() }
        nonisolated(unsafe) let replica = replica
        let (rows, lengths) = TwoHalves.both(
            { Result { try replica.listNotes(filter, limit: .max, after: nil) } },
            { Result { Self.shortFormLengths(sortedRecordIDs: try replica.noteIDs(on: reader.database)) } })
        return try noteSummaries(try rows.get(), shortFormLengths: try lengths.get())
    }

    public func notesGet(_ params: NoteGetParams) throws -> NoteDocument {
        let id = try resolveNote(params.id)
        guard let note = try replica.note(id) else { throw RPCError.notFound(.note, params.id) }
        let format = params.format ?? .html
        let body = Self.render(note.body, format: format)
        return NoteDocument(summary: try noteSummary(id), format: format, body: body, heads: try replica.heads(of: id).map(\.description).sorted())
    }

    static func cleanTags(_ tags: [String]?) throws -> Set<String> {
        var result = Set<String>()
        for tag in tags ?? [] {
            let trimmed = tag.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { throw RPCError.invalidParams("a tag cannot be empty") }
            result.insert(trimmed)
        }
        return result
    }

    public func notesCreate(_ params: NoteCreateParams) throws -> Control.NoteSummary {
        let folder = try resolveFolder(params.folder)
        let tags = try Self.cleanTags(params.tags)
        if let color = params.color, color.isEmpty { throw RPCError.invalidParams("params.color must not be empty (leave it out for no colour)") }
        let times = try Self.createTimes(params)
        let id = try replica.createNote(
            title: params.title, body: try Self.createBody(params), folder: folder, tags: tags, pinned: params.pinned ?? false,
            color: params.color, created: times.created, modified: times.modified, now: now)
        committed(.local)
        return try noteSummary(id)
    }

    public func notesUpdate(_ params: NoteUpdateParams) throws -> Control.NoteSummary {
        let id = try resolveNote(params.id)
        var edit = NoteEdit(title: params.title, pinned: params.pinned)
        switch params.folder {
        case .unchanged: break
        case .clear: edit.folder = .some(nil)
        case .set(let reference): edit.folder = .some(try resolveFolder(reference))
        }
        switch params.color {
        case .unchanged: break
        case .clear: edit.color = .some(nil)
        case .set(let color): edit.color = .some(color.isEmpty ? nil : color)
        }
        edit.addTags = try Self.cleanTags(params.addTags)
        edit.removeTags = try Self.cleanTags(params.removeTags).subtracting(edit.addTags)
        var base: [RevisionID]?
        if let heads = params.baseHeads {
            base = try heads.map { text in
                guard let id = RevisionID(hex: text.lowercased()) else { throw RPCError.invalidParams("params.baseHeads: \"\(text)\" is not a revision id") }
                return id
            }
        }
        edit.body = try updateBody(params, id: id, baseHeads: base)
        try replica.editNote(id, edit, basedOn: base, now: now)
        committed(.local)
        return try noteSummary(id)
    }

    public func notesTrash(_ params: NoteReference, trashed: Bool) throws -> Control.NoteSummary {
        let id = try resolveNote(params.id)
        try replica.editNote(id, NoteEdit(trashed: trashed), now: now)
        committed(.local)
        return try noteSummary(id)
    }

    /// Which device authored revisions of each replica: this one, and every peer whose Hello
    /// named its replica.
    func replicaDevices() -> [ReplicaID: (id: DeviceID, name: String)] {
        var result: [ReplicaID: (id: DeviceID, name: String)] = [replica.replicaID: (identity.deviceID, settings.deviceName)]
        for record in (try? replica.peers()) ?? [] {
            if let replicaID = record.replica, let device = DeviceID(record.peer) { result[replicaID] = (device, record.name) }
        }
        return result
    }

    /// After a local commit: events for watchers, and push to every connected peer.
    public func committed(_ origin: ChangeOrigin) {
        publish(replica.lastChanges, origin: origin)
        localChange()
    }

    // MARK: - Folders

    public func folderInfos() throws -> [FolderInfo] {
        let folders = try replica.listFolders()
        let shorts = Self.shortForms(folders.map(\.id.description))
        return folders.map { folder in
            FolderInfo(
                id: folder.id.description, short: shorts[folder.id.description] ?? String(folder.id.description.prefix(8)),
                name: folder.name, parent: folder.parent?.description, path: folder.path.joined(separator: "/"), noteCount: folder.noteCount)
        }
    }

    /// One folder's info, reading it, its ancestors, its count and its id neighbours.
    func folderInfo(_ id: FolderID) throws -> FolderInfo {
        guard let folder = try replica.folderSummary(id) else { throw RPCError.notFound(.folder, id.description) }
        let shorts = Self.shortForms(([id] + (try replica.neighbouringFolderIDs(of: id))).map(\.description))
        return FolderInfo(
            id: folder.id.description, short: shorts[folder.id.description] ?? String(folder.id.description.prefix(8)),
            name: folder.name, parent: folder.parent?.description, path: folder.path.joined(separator: "/"), noteCount: folder.noteCount)
    }

    static func cleanFolderName(_ name: String) throws -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw RPCError.invalidParams("a folder name cannot be empty") }
        guard !trimmed.contains("/") else { throw RPCError.invalidParams("a folder name cannot contain '/' (it separates folders in paths)") }
        return trimmed
    }

    private func requireNoSibling(named name: String, in parent: FolderID?, except: FolderID? = nil) throws {
        if let sibling = try replica.folders(named: name).first(where: { $0.parent == parent && $0.id != except }) {
            throw RPCError(
                code: .alreadyExists, message: "a folder named \"\(name)\" already exists there",
                encoding: AlreadyExistsData(kind: .folder, id: sibling.id.description, path: sibling.path.joined(separator: "/")))
        }
    }

    public func foldersCreate(_ params: FolderCreateParams) throws -> FolderInfo {
        let name = try Self.cleanFolderName(params.name)
        let parent = try resolveFolder(params.parent)
        try requireNoSibling(named: name, in: parent)
        let id = try replica.createFolder(name: name, parent: parent, now: now)
        committed(.local)
        return try folderInfo(id)
    }

    public func foldersRename(_ params: FolderRenameParams) throws -> FolderInfo {
        guard let id = try resolveFolder(params.folder) else { throw RPCError(code: .invalidOperation, message: "the top level cannot be renamed") }
        let name = try Self.cleanFolderName(params.name)
        let parent = try replica.folderSummary(id)?.parent
        try requireNoSibling(named: name, in: parent, except: id)
        try replica.renameFolder(id, to: name, now: now)
        committed(.local)
        return try folderInfo(id)
    }

    public func foldersMove(_ params: FolderMoveParams) throws -> FolderInfo {
        guard let id = try resolveFolder(params.folder) else { throw RPCError(code: .invalidOperation, message: "the top level cannot be moved") }
        let parent = try resolveFolder(params.parent)
        let name = try replica.folder(id)?.name ?? ""
        try requireNoSibling(named: name, in: parent, except: id)
        try replica.moveFolder(id, to: parent, now: now)
        committed(.local)
        return try folderInfo(id)
    }

    public func foldersDelete(_ params: FolderDeleteParams) throws -> FolderDeleteResult {
        guard let id = try resolveFolder(params.folder) else { throw RPCError(code: .invalidOperation, message: "the top level cannot be deleted") }
        let info = try folderInfo(id)
        let subfolders = try replica.subfolders(of: id).count
        if !(params.force ?? false), info.noteCount > 0 || subfolders > 0 {
            throw RPCError(
                code: .folderNotEmpty,
                message: "\"\(info.path)\" holds \(info.noteCount) note(s) and \(subfolders) folder(s); move them first, or pass --force to delete it anyway (its notes go to Uncategorized)",
                encoding: FolderNotEmptyData(id: info.id, path: info.path, notes: info.noteCount, folders: subfolders))
        }
        try replica.deleteFolder(id, now: now)
        committed(.local)
        return FolderDeleteResult(id: info.id, path: info.path, notes: info.noteCount, folders: subfolders)
    }

    // MARK: - Devices and status

    public func householdInfo() -> HouseholdInfo {
        let id = household.householdID
        // This device counts while it is a member, even before a re-admission syncs in.
        return HouseholdInfo(
            id: id, short: String(id.prefix(8)), deviceCount: roster().filter { !$0.revoked || $0.id == identity.deviceID }.count,
            key: householdKeyState())
    }

    public func deviceInfos() -> [DeviceInfo] {
        let members = roster()
        let shorts = Self.shortForms(members.map(\.id.description))
        let seen = peerVersions()
        let epochs = keyEpochs()
        let infos = members.map { member in
            DeviceInfo(
                id: member.id.description, short: member.id.short.count >= 7 ? member.id.short : (shorts[member.id.description] ?? member.id.short),
                name: member.device.name, isSelf: member.id == identity.deviceID, revoked: member.revoked,
                added: Timestamp(millisecondsSince1970: Int64(clamping: member.device.added)), connected: member.id != identity.deviceID && isConnected(member.id),
                version: member.id == identity.deviceID ? NotesVersion.string : seen[member.id.description],
                keyEpoch: member.id == identity.deviceID ? household.current.version.epoch : epochs[member.id.description])
        }
        return infos.sorted { ($0.isSelf ? 0 : 1, $0.name, $0.id) < ($1.isSelf ? 0 : 1, $1.name, $1.id) }
    }

    public func devicesRemove(_ params: DeviceRemoveParams) throws -> DeviceInfo {
        // A device name (any case) or an id prefix; when they name different devices (a short
        // name can spell the start of another's id), the reference is ambiguous.
        let wanted = params.device.uppercased().filter { $0.isLetter || $0.isNumber }
        let name = params.device.trimmingCharacters(in: .whitespaces).lowercased()
        let members = roster()
        let byName = members.filter { $0.device.name.lowercased() == name }
        let byID = wanted.isEmpty ? [] : members.filter { $0.id.description.uppercased().filter { $0.isLetter || $0.isNumber }.hasPrefix(wanted) }
        let matches = byName + byID.filter { member in !byName.contains { $0.id == member.id } }
        guard let member = matches.first else { throw RPCError.notFound(.device, params.device) }
        guard matches.count == 1 else {
            throw RPCError.ambiguous(.device, params.device, candidates: matches.prefix(20).map { .init(id: $0.id.description, label: $0.device.name) })
        }
        guard member.id != identity.deviceID else {
            throw RPCError(code: .invalidOperation, message: "this device cannot remove itself; remove it from another device of the household")
        }
        try replica.revokeDevice(member.record, now: now)
        log.info("removed device \(member.device.name) (\(member.id.short)) from the household")
        committed(.local)
        rosterChanged()
        guard let info = deviceInfos().first(where: { $0.id == member.id.description }) else { throw RPCError.notFound(.device, params.device) }
        return info
    }

    public func status() throws -> StatusResult {
        StatusResult(
            version: NotesVersion.string, started: Timestamp(millisecondsSince1970: Int64(started)),
            device: DeviceLabel(id: identity.deviceID.description, short: identity.deviceID.short, name: settings.deviceName),
            household: removedFromHousehold == nil ? householdInfo() : nil, listen: listenAddresses.map(\.description), controlSocket: settings.controlSocket,
            dataDir: settings.dataDirectory, discovery: discovery, peers: peerStatuses(),
            counters: SyncCounters(
                entriesSent: counters.entriesSent, entriesReceived: counters.entriesReceived,
                conflictCopiesCreated: counters.conflictCopiesCreated, failedConnections: counters.failedConnections,
                syncLagMs: counters.lag),
            noteCount: try replica.noteCount, notesToIndex: try notesToIndex())
    }

    // MARK: - Sync, connect, watch

    /// `sync`: redial everyone now and push; with `wait`, answer once caught up.
    public func startSync(_ params: SyncParams, token: RequestToken) {
        let complete: (Result<SyncResult, RPCError>) -> Void = { self.actions.append(.reply(token, .sync($0))) }
        let timeout = params.timeoutMs ?? 30_000
        guard (1...86_400_000).contains(timeout) else {
            complete(.failure(.invalidParams("params.timeoutMs must be between 1 and 86400000")))
            return
        }
        guard removedFromHousehold == nil else {
            complete(.failure(notInHousehold))
            return
        }
        for key in targets.keys { updateTarget(key) { $0.retries = 0; $0.nextAttempt = now } }
        dialDueTargets()
        localChange()
        guard params.wait else {
            complete(.success(syncResult()))
            return
        }
        syncWaiters.append(SyncWaiter(deadline: now + UInt64(timeout), token: token))
        checkSyncWaiters()
    }

    public func startConnect(_ params: ConnectParams, token: RequestToken) {
        let complete: (Result<PeerStatus, RPCError>) -> Void = { self.actions.append(.reply(token, .connect($0))) }
        guard let address = Self.address(params.address) else {
            complete(.failure(.invalidParams("\"\(params.address)\" is not a host:port address (IPv6 in brackets: [fe80::1%eth0]:7479)")))
            return
        }
        guard removedFromHousehold == nil else {
            complete(.failure(notInHousehold))
            return
        }
        let key = address.description
        if let device = targets[key]?.device, isConnected(device) {
            complete(.success(peerStatus(device: device)))
            return
        }
        let isNew = targets[key] == nil
        do {
            try addTarget(key, origin: .connected)
        } catch {
            complete(.failure(rpcError(error)))
            return
        }
        updateTarget(key) { $0.retries = 0; $0.nextAttempt = now; $0.blocked = false }
        connectWaiters.append(ConnectWaiter(target: key, deadline: now + Self.connectTimeout, isNew: isNew, token: token))
        dialDueTargets()
    }
}
