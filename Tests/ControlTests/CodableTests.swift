import Control
import Foundation
import Synchronization
import Testing

/// Every method's params and result survive the full wire path: the client's request line
/// through the server's `IncomingRequest`, the server's response line through the client's
/// `IncomingMessage`.
@Suite struct CodableTests {
    private func check<M: ControlMethod>(_ method: M.Type, params: M.Params, result: M.Result, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let requestLine = try ControlWire.request(M.self, id: .number(7), params: params)
        #expect(requestLine.last == UInt8(ascii: "\n"), sourceLocation: sourceLocation)
        #expect(!requestLine.dropLast().contains(UInt8(ascii: "\n")), "one line", sourceLocation: sourceLocation)
        let request = try IncomingRequest.parse(requestLine.dropLast()).get()
        #expect(request.method == M.name, sourceLocation: sourceLocation)
        #expect(request.id == .number(7), sourceLocation: sourceLocation)
        #expect(try request.params(M.Params.self) == params, sourceLocation: sourceLocation)

        let responseLine = request.respond(to: M.self) { _ in result }
        guard case .response(let id, .result(let line)) = try IncomingMessage.parse(responseLine.dropLast()) else {
            Issue.record("not a result: \(String(decoding: responseLine, as: UTF8.self))", sourceLocation: sourceLocation)
            return
        }
        #expect(id == .number(7), sourceLocation: sourceLocation)
        #expect(try IncomingMessage.result(M.Result.self, from: line) == result, sourceLocation: sourceLocation)
    }

    @Test func everyMethodRoundTrips() throws {
        var covered: [String] = []
        func record<M: ControlMethod>(_ method: M.Type, _ params: M.Params, _ result: M.Result) throws {
            try check(method, params: params, result: result)
            covered.append(M.name)
        }
        try record(ControlMethods.Status.self, EmptyParams(), Samples.status)
        try record(ControlMethods.DevicesList.self, EmptyParams(), [Samples.device])
        try record(ControlMethods.DevicesRemove.self, DeviceRemoveParams(device: "AAAA"), Samples.device)
        try record(ControlMethods.Invite.self, EmptyParams(), InviteResult(code: "ABCD-EFGH", expiresAt: Timestamp(rawValue: 99), addresses: ["10.0.0.2:7654"]))
        try record(ControlMethods.Join.self, JoinParams(code: "ABCD-EFGH", address: "10.0.0.2:7654"), JoinResult(household: HouseholdInfo(id: "H", short: "H", deviceCount: 2), devices: [Samples.device]))
        try record(ControlMethods.Join.self, JoinParams(code: "ABCD-EFGH"), JoinResult(household: HouseholdInfo(id: "H", short: "H", deviceCount: 1), devices: []))
        try record(ControlMethods.Connect.self, ConnectParams(address: "[fe80::1%eth0]:7654"), Samples.peer)
        try record(ControlMethods.NotesList.self, NotesListParams(folder: "/", tag: "x", trashed: true, conflicts: false, pinned: true, query: "ü"), [Samples.note, Samples.plainNote])
        try record(ControlMethods.NotesList.self, NotesListParams(), [])
        try record(
            ControlMethods.NotesList.self,
            NotesListParams(limit: 100, after: NotesListAfter(pinned: true, modified: Timestamp(rawValue: 1_700_000_000_123), id: Samples.note.id)), [Samples.note])
        try record(ControlMethods.NotesGet.self, NoteGetParams(id: "0190", format: .markdown), Samples.document)
        try record(ControlMethods.NotesCreate.self, NoteCreateParams(title: "T", html: "<p>x</p>", folder: "Work", tags: ["a"], pinned: true, color: "red"), Samples.note)
        try record(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: "0190", baseHeads: ["ab"], title: "T", html: "<p/>", folder: .clear, pinned: false, color: .set("blue"), addTags: ["a"], removeTags: ["b"]), Samples.note)
        try record(ControlMethods.NotesTrash.self, NoteReference(id: "0190"), Samples.plainNote)
        try record(ControlMethods.NotesRestore.self, NoteReference(id: "0190"), Samples.note)
        try record(ControlMethods.NotesPurge.self, NotePurgeParams(id: "0190"), PurgeResult(id: Samples.note.id))
        try record(ControlMethods.NotesPurge.self, NotePurgeParams(id: "0190", baseHeads: ["ab"]), PurgeResult(id: Samples.note.id, purged: false, unseen: [Samples.history]))
        try record(ControlMethods.NotesHistory.self, NoteHistoryParams(id: "0190"), [Samples.history, HistoryEntry(revision: "r", parents: [], hlc: "0.0", time: Timestamp(rawValue: 0), device: nil, deviceShort: nil, deviceName: nil, title: "", changes: [.deleted])])
        try record(ControlMethods.NotesHistory.self, NoteHistoryParams(id: "0190", patch: true), [HistoryEntry(revision: "r", parents: ["q"], hlc: "0.0", time: Timestamp(rawValue: 0), device: nil, deviceShort: nil, deviceName: nil, title: "T", changes: [.body], restoredFrom: "p", patch: [BlockChange(op: .added, html: "<p>a</p>", text: "a"), BlockChange(op: .removed, html: "<p>b</p>", text: "b")])])
        try record(ControlMethods.NotesGetRevision.self, NoteRevisionParams(id: "0190", revision: "cdcd", format: .text), Samples.document)
        try record(ControlMethods.Backup.self, BackupParams(toDescriptor: true), BackupResult(path: nil, bytes: 4096, household: "hh", replica: "rr", offered: 3, sequence: 5, removed: []))
        try record(ControlMethods.Backup.self, BackupParams(keep: 7), BackupResult(path: "/d/backups/notes-x.db", bytes: 4096, household: "hh", replica: "rr", offered: 3, sequence: 5, removed: ["/d/backups/notes-w.db"]))
        try record(ControlMethods.NotesRestoreRevision.self, RestoreRevisionParams(id: "0190", revision: "cdcd"), RestoreRevisionResult(note: Samples.note, restoredFrom: String(repeating: "cd", count: 32), changed: true))
        try record(ControlMethods.FoldersList.self, EmptyParams(), [Samples.folder, FolderInfo(id: "f", short: "f", name: "Top", parent: nil, path: "Top", noteCount: 0)])
        try record(ControlMethods.FoldersCreate.self, FolderCreateParams(name: "Projects", parent: "Work"), Samples.folder)
        try record(ControlMethods.FoldersRename.self, FolderRenameParams(folder: "Work/Projects", name: "Old"), Samples.folder)
        try record(ControlMethods.FoldersMove.self, FolderMoveParams(folder: "0190a1b2", parent: nil), Samples.folder)
        try record(ControlMethods.FoldersDelete.self, FolderDeleteParams(folder: "Work", force: true), FolderDeleteResult(id: "f", path: "Work", notes: 2, folders: 1))
        try record(ControlMethods.Sync.self, SyncParams(wait: true, timeoutMs: 5000), SyncResult(caughtUp: false, peers: [Samples.peer]))
        try record(ControlMethods.NotesCreate.self, NoteCreateParams(
            title: "M", body: "- [x] a\n", format: .markdown, created: Timestamp(rawValue: 1), modified: Timestamp(rawValue: 2)), Samples.note)
        try record(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: "0190", baseHeads: ["ab"], body: "*b*\n", format: .markdown), Samples.note)
        try record(ControlMethods.MarkdownParse.self, MarkdownParseParams(text: "---\ntitle: T\n---\nx\n"), MarkdownParseResult(
            title: "T", tags: ["a"], created: Timestamp(rawValue: 1), modified: Timestamp(rawValue: 2), pinned: true, color: "red",
            folder: "A/B", id: "0190", unknownKeys: ["k"], hasFrontMatter: true, body: "x\n"))
        try record(ControlMethods.MarkdownParse.self, MarkdownParseParams(text: "x"), MarkdownParseResult(hasFrontMatter: false, body: "x"))
        try record(ControlMethods.MarkdownParseMany.self, MarkdownParseManyParams(texts: ["x", "---\n[\n---\n"]), [
            MarkdownParseOutcome(result: MarkdownParseResult(hasFrontMatter: false, body: "x")),
            MarkdownParseOutcome(error: RPCError(code: .invalidParams, message: "front matter line 1: …"))])
        try record(ControlMethods.NotesCreateMany.self, NotesCreateManyParams(notes: [NoteCreateParams(title: "T", html: "<p>x</p>")]), [
            NoteCreateOutcome(note: Samples.note), NoteCreateOutcome(error: RPCError(code: .notFound, message: "no folder"))])
        try record(ControlMethods.Watch.self, EmptyParams(), WatchResult(events: ControlEvent.knownTypes))
        #expect(Set(covered) == Set(ControlMethods.names))
        #expect(ControlMethods.names.count == Set(ControlMethods.names).count, "names are unique")
    }

    @Test func updateTellsAbsentFromNull() throws {
        let absent = try ControlJSON.decoder().decode(NoteUpdateParams.self, from: Data(#"{"id":"a"}"#.utf8))
        #expect(absent.folder == .unchanged && absent.color == .unchanged)
        let null = try ControlJSON.decoder().decode(NoteUpdateParams.self, from: Data(#"{"id":"a","folder":null,"color":null}"#.utf8))
        #expect(null.folder == .clear && null.color == .clear)
        let set = try ControlJSON.decoder().decode(NoteUpdateParams.self, from: Data(#"{"id":"a","folder":"Work","color":"red"}"#.utf8))
        #expect(set.folder == .set("Work") && set.color == .set("red"))

        let encoded = { (params: NoteUpdateParams) in String(decoding: try ControlJSON.encoder().encode(params), as: UTF8.self) }
        #expect(try encoded(NoteUpdateParams(id: "a")) == #"{"id":"a"}"#)
        #expect(try encoded(NoteUpdateParams(id: "a", folder: .clear)) == #"{"folder":null,"id":"a"}"#)
        #expect(try encoded(NoteUpdateParams(id: "a", color: .set("red"))) == #"{"color":"red","id":"a"}"#)
        // Members that cannot be cleared read `null` as absent.
        let nullTitle = try ControlJSON.decoder().decode(NoteUpdateParams.self, from: Data(#"{"id":"a","title":null}"#.utf8))
        #expect(nullTitle.title == nil)
    }

    @Test func fieldChangeApplies() {
        #expect(FieldChange<String>.unchanged.applied(to: "a") == "a")
        #expect(FieldChange<String>.clear.applied(to: "a") == nil)
        #expect(FieldChange.set("b").applied(to: "a") == "b")
        #expect(FieldChange<String>(nil) == .clear)
        #expect(FieldChange("x") == .set("x"))
    }

    @Test func resultsWriteEveryKeyEvenWhenNull() throws {
        let object = try ControlJSON.decoder().decode([String: JSONValue].self, from: ControlJSON.encoder().encode(Samples.plainNote))
        #expect(object["folder"] == .null)
        #expect(object["color"] == .null)
        #expect(object["conflictOf"] == .string(Samples.note.id))
        let peer = try ControlJSON.decoder().decode([String: JSONValue].self, from: ControlJSON.encoder().encode(Samples.offlinePeer))
        #expect(Set(peer.keys) == ["device", "short", "name", "address", "status", "lastSync", "lastError", "entriesBehind", "retries", "connected"])
        #expect(peer["lastSync"] == .null)
        var status = Samples.status
        status.household = nil
        let statusObject = try ControlJSON.decoder().decode([String: JSONValue].self, from: ControlJSON.encoder().encode(status))
        #expect(statusObject["household"] == .null)
    }

    @Test func noteDocumentIsOneFlatObject() throws {
        let object = try ControlJSON.decoder().decode([String: JSONValue].self, from: ControlJSON.encoder().encode(Samples.document))
        #expect(object["title"] == .string("Groceries"))
        #expect(object["body"] == .string(Samples.document.body))
        #expect(object["format"] == .string("html"))
        #expect(object["summary"] == nil)
        #expect(try ControlJSON.decoder().decode(NoteDocument.self, from: ControlJSON.encoder().encode(Samples.document)) == Samples.document)
    }

    @Test func eventsAreFlatWithTypeAndTime() throws {
        for event in Samples.events {
            let line = try ControlWire.event(event)
            guard case .notification(let method, let body) = try IncomingMessage.parse(line.dropLast()) else {
                Issue.record("not a notification")
                continue
            }
            #expect(method == "event")
            #expect(try IncomingMessage.params(ControlEvent.self, from: body) == event)
            let params = try ControlJSON.decoder().decode([String: JSONValue].self, from: line)["params"]?.objectValue
            #expect(params?["type"] == .string(event.payload.type))
            #expect(params?["time"] == .int(event.time.rawValue))
        }
        #expect(Set(Samples.events.map(\.payload.type)) == Set(ControlEvent.knownTypes))
        let future = try ControlJSON.decoder().decode(ControlEvent.self, from: Data(#"{"type":"folderChanged","time":5,"folder":"x"}"#.utf8))
        #expect(future.payload == .unknown(type: "folderChanged"))
    }

    @Test func timestampsAreIntegerMilliseconds() throws {
        let time = Timestamp(Date(timeIntervalSince1970: 1_715_000_000.1234))
        #expect(time.rawValue == 1_715_000_000_123)
        #expect(String(decoding: try ControlJSON.encoder().encode(time), as: UTF8.self) == "1715000000123")
        #expect(abs(time.date.timeIntervalSince1970 - 1_715_000_000.123) < 0.0005)
    }

    @Test func jsonValueKeepsTypesApart() throws {
        let text = #"{"a":true,"b":1,"c":1.5,"d":"s","e":[null],"f":{"g":9007199254740993}}"#
        let value = try ControlJSON.decoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(value == .object([
            "a": .bool(true), "b": .int(1), "c": .double(1.5), "d": .string("s"), "e": .array([.null]),
            "f": .object(["g": .int(9_007_199_254_740_993)]),
        ]))
        #expect(String(decoding: try ControlJSON.encoder().encode(value), as: UTF8.self) == text)
    }

    @Test func errorsCarryTypedData() throws {
        let error = RPCError.ambiguous(.note, "0190", candidates: [.init(id: "0190a", label: "A"), .init(id: "0190b", label: "B")])
        let line = ControlWire.error(id: .string("x"), error)
        guard case .response(let id, .error(let decoded)) = try IncomingMessage.parse(line.dropLast()) else {
            Issue.record("not an error response")
            return
        }
        #expect(id == .string("x"))
        #expect(decoded == error)
        #expect(decoded.code == .ambiguousReference)
        #expect(decoded.data(as: AmbiguousData.self)?.candidates.map(\.id) == ["0190a", "0190b"])
        #expect(decoded.data(as: FolderNotEmptyData.self) == nil, "data of another shape reads as nil")
        #expect(RPCError.notFound(.folder, "Work").data(as: NotFoundData.self) == NotFoundData(kind: .folder, reference: "Work"))
        let unknown = try ControlJSON.decoder().decode(RPCError.self, from: Data(#"{"code":4242,"message":"new"}"#.utf8))
        #expect(unknown.code.rawValue == 4242 && unknown.code.name == "error4242")
    }

    @Test func errorWithUnknownIDWritesNull() throws {
        let line = String(decoding: ControlWire.error(id: nil, .parseError("x")), as: UTF8.self)
        #expect(line.contains(#""id":null"#))
        #expect(line.hasSuffix("\n"))
    }
}

/// The server's checks on incoming lines, in JSON-RPC's order.
@Suite struct IncomingRequestTests {
    private func rejection(_ text: String) -> IncomingRequest.Rejection? {
        if case .failure(let rejection) = IncomingRequest.parse(Data(text.utf8)) { return rejection }
        return nil
    }

    @Test func notJSONIsAParseError() {
        for text in ["{", "hello", #"{"id":1,"method":"status""#, "\u{FF}"] {
            #expect(rejection(text)?.error.code == .parseError, "\(text)")
            #expect(rejection(text)?.id == nil)
        }
        #expect(rejection(String(decoding: [0xFF, 0xFE], as: UTF8.self))?.error.code == .parseError)
    }

    @Test func jsonThatIsNotARequestIsInvalid() {
        #expect(rejection("[1,2]")?.error.code == .invalidRequest)
        #expect(rejection("[1,2]")?.error.message.contains("batches") == true)
        #expect(rejection("42")?.error.code == .invalidRequest)
        #expect(rejection(#"{"jsonrpc":"2.0","method":"status"}"#)?.error.code == .invalidRequest, "no id: client notifications are not served")
        #expect(rejection(#"{"jsonrpc":"2.0","id":1.5,"method":"status"}"#)?.error.code == .invalidRequest)
        #expect(rejection(#"{"jsonrpc":"2.0","id":null,"method":"status"}"#)?.error.code == .invalidRequest)
        let wrongVersion = rejection(#"{"jsonrpc":"1.0","id":3,"method":"status"}"#)
        #expect(wrongVersion?.error.code == .invalidRequest)
        #expect(wrongVersion?.id == .number(3), "the id is echoed once known")
        #expect(rejection(#"{"jsonrpc":"2.0","id":"q","method":7}"#)?.id == .string("q"))
    }

    @Test func paramsAreCheckedAgainstTheMethodsType() throws {
        let request = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":1,"method":"notes.get","params":{"id":5}}"#.utf8)).get()
        #expect(throws: RPCError.self) { try request.params(NoteGetParams.self) }
        do {
            _ = try request.params(NoteGetParams.self)
        } catch {
            #expect(error.code == .invalidParams)
            #expect(error.message.contains("id must be a string"), "\(error.message)")
        }
        let missing = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":1,"method":"notes.get"}"#.utf8)).get()
        do {
            _ = try missing.params(NoteGetParams.self)
            Issue.record("accepted a missing id")
        } catch {
            #expect(error.message.contains("id is required"), "\(error.message)")
        }
        let badFormat = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":1,"method":"notes.get","params":{"id":"a","format":"pdf"}}"#.utf8)).get()
        #expect(throws: RPCError.self) { try badFormat.params(NoteGetParams.self) }
        let positional = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":1,"method":"notes.get","params":["a"]}"#.utf8)).get()
        #expect(throws: RPCError.self) { try positional.params(NoteGetParams.self) }
    }

    @Test func absentOrNullParamsReadAsEmpty() throws {
        for text in [#"{"jsonrpc":"2.0","id":1,"method":"status"}"#, #"{"jsonrpc":"2.0","id":1,"method":"status","params":null}"#] {
            let request = try IncomingRequest.parse(Data(text.utf8)).get()
            #expect(try request.params(EmptyParams.self) == EmptyParams())
            #expect(try request.params(NotesListParams.self) == NotesListParams())
        }
        let extra = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":1,"method":"notes.list","params":{"future":1,"tag":"t"}}"#.utf8)).get()
        #expect(try extra.params(NotesListParams.self) == NotesListParams(tag: "t"), "unknown keys are ignored")
    }

    @Test func respondTurnsThrownErrorsIntoResponses() throws {
        struct Broken: Error {}
        let request = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":9,"method":"notes.trash","params":{"id":"x"}}"#.utf8)).get()
        let notFound = request.respond(to: ControlMethods.NotesTrash.self) { params in throw RPCError.notFound(.note, params.id) }
        guard case .response(.number(9), .error(let error)) = try IncomingMessage.parse(notFound.dropLast()) else {
            Issue.record("not an error")
            return
        }
        #expect(error.code == .notFound)
        let broken = request.respond(to: ControlMethods.NotesTrash.self) { _ in throw Broken() }
        guard case .response(_, .error(let internalError)) = try IncomingMessage.parse(broken.dropLast()) else {
            Issue.record("not an error")
            return
        }
        #expect(internalError.code == .internalError)
    }

    @Test func completionRespondMatchesSync() throws {
        let request = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":2,"method":"status"}"#.utf8)).get()
        let lines = Mutex<[Data]>([])
        request.respond(to: ControlMethods.Status.self, reply: { line in lines.withLock { $0.append(line) } }) { _, complete in
            complete(.success(Samples.status))
        }
        #expect(lines.withLock { $0 } == [request.respond(to: ControlMethods.Status.self) { _ in Samples.status }])

        let notFound = RPCError.notFound(.note, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
        request.respond(to: ControlMethods.Status.self, reply: { line in lines.withLock { $0.append(line) } }) { _, complete in
            complete(.failure(notFound))
        }
        #expect(lines.withLock { $0.last } == ControlWire.error(id: .number(2), notFound))
    }

    @Test func completionRespondAnswersBadParamsWithoutStarting() throws {
        let request = try IncomingRequest.parse(Data(#"{"jsonrpc":"2.0","id":3,"method":"notes.trash","params":{"id":7}}"#.utf8)).get()
        let lines = Mutex<[Data]>([])
        let started = Mutex(false)
        request.respond(to: ControlMethods.NotesTrash.self, reply: { line in lines.withLock { $0.append(line) } }) { _, _ in
            started.withLock { $0 = true }
        }
        #expect(!started.withLock { $0 })
        let only = try #require(lines.withLock { $0.count == 1 ? $0.first : nil })
        guard case .response(let id, .error(let error)) = try IncomingMessage.parse(only.dropLast()) else {
            Issue.record("not an error")
            return
        }
        #expect(id == .number(3))
        #expect(error.code == .invalidParams)
    }

    @Test func anAnswerOverTheLineCapBecomesAnError() throws {
        let big = Samples.document
        let line = ControlWire.response(id: .number(1), Result<NoteDocument, RPCError>.success(big), maximumLineLength: 100)
        guard case .response(_, .error(let error)) = try IncomingMessage.parse(line.dropLast()) else {
            Issue.record("an over-long answer was sent")
            return
        }
        #expect(error.code == .internalError)
        // It says how to ask for less, not to look in a log that has nothing on it.
        #expect(error.message.contains("over the 100-byte line limit"))
        #expect(error.message.contains("`limit` and `after`"))
        #expect(!error.message.contains("journalctl"))
    }
}
