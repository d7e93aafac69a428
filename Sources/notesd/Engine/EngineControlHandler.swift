import Control
import Engine
import Foundation
import Peer

/// Answers control requests by running them on the engine's queue (one at a time with
/// everything else the engine does), through the core; waits (`sync --wait`, `join`,
/// `connect`) park a completion in the shell, which the core answers later by token, and do
/// not hold the queue. Params are decoded, and answers
/// encoded, on the connection's queue, so the engine's queue does only the engine's work.
struct EngineControlHandler: ControlRequestHandler {
    let engine: EngineShell
    /// The web server, for `status` and the `web.*` methods (EngineShell+Web.swift).
    var web: WebControl? = nil

    /// Decodes `M`'s params, runs `start` on the engine's queue, and encodes what it
    /// completes with back on the connection's queue.
    private func answer<M: ControlMethod>(
        _ method: M.Type, _ request: IncomingRequest, _ context: ControlContext, _ reply: @escaping @Sendable (Data) -> Void,
        start: @escaping @Sendable (EngineShell, M.Params, _ complete: @escaping @Sendable (Result<M.Result, RPCError>) -> Void) -> Void
    ) {
        let engine = engine
        request.respond(to: method, reply: reply) { params, complete in
            engine.queue.async {
                start(engine, params) { outcome in context.queue.async { complete(outcome) } }
            }
        }
    }

    /// `answer` for work the engine finishes at once, turning any failure into the
    /// protocol's error.
    private func run<M: ControlMethod>(
        _ method: M.Type, _ request: IncomingRequest, _ context: ControlContext, _ reply: @escaping @Sendable (Data) -> Void,
        _ body: @escaping @Sendable (EngineCore, M.Params) throws -> M.Result
    ) {
        answer(method, request, context, reply) { engine, params, complete in
            let result = engine.request { core in Result { try body(core, params) }.mapError { core.rpcError($0) } }
            complete(result)
        }
    }

    /// An answer at least this large (every note of a large library, say) was built from many
    /// small allocations — summaries, JSON values, strings — that leave the heap large and
    /// fragmented once freed: the heap is trimmed right after, on the connection's queue, once
    /// what built the answer is released. No timer: an idle daemon gains no wake-up.
    static let largeAnswerBytes = 256 * 1024

    func handle(_ request: IncomingRequest, context: ControlContext, reply sendReply: @escaping @Sendable (Data) -> Void) {
        let reply: @Sendable (Data) -> Void = { data in
            sendReply(data)
            if data.count >= Self.largeAnswerBytes { context.queue.async { Replica.releaseFreeHeap() } }
        }
        typealias M = ControlMethods
        switch request.method {
        case M.Status.name:
            run(M.Status.self, request, context, reply) { [web] engine, _ in try engine.status().withWeb(web) }
        case M.DevicesList.name:
            run(M.DevicesList.self, request, context, reply) { engine, _ in engine.deviceInfos() }
        case M.DevicesRemove.name:
            run(M.DevicesRemove.self, request, context, reply) { engine, params in try engine.devicesRemove(params) }
        case M.Invite.name:
            run(M.Invite.self, request, context, reply) { engine, _ in try engine.invite() }
        case M.Join.name:
            answer(M.Join.self, request, context, reply) { engine, params, complete in
                let token = engine.park(complete) { if case .join(let result) = $0 { result } else { nil } }
                engine.request { $0.startJoin(params, token: token) }
            }
        case M.Connect.name:
            answer(M.Connect.self, request, context, reply) { engine, params, complete in
                let token = engine.park(complete) { if case .connect(let result) = $0 { result } else { nil } }
                engine.request { $0.startConnect(params, token: token) }
            }
        case M.NotesList.name:
            run(M.NotesList.self, request, context, reply) { engine, params in try engine.notesList(params) }
        case M.NotesGet.name:
            run(M.NotesGet.self, request, context, reply) { engine, params in try engine.notesGet(params) }
        case M.NotesCreate.name:
            run(M.NotesCreate.self, request, context, reply) { engine, params in try engine.notesCreate(params) }
        case M.NotesUpdate.name:
            run(M.NotesUpdate.self, request, context, reply) { engine, params in try engine.notesUpdate(params) }
        case M.NotesTrash.name:
            run(M.NotesTrash.self, request, context, reply) { engine, params in try engine.notesTrash(params, trashed: true) }
        case M.NotesRestore.name:
            run(M.NotesRestore.self, request, context, reply) { engine, params in try engine.notesTrash(params, trashed: false) }
        case M.NotesPurge.name:
            run(M.NotesPurge.self, request, context, reply) { engine, params in try engine.notesPurge(params) }
        case M.NotesHistory.name:
            run(M.NotesHistory.self, request, context, reply) { engine, params in try engine.notesHistory(params) }
        case M.NotesGetRevision.name:
            run(M.NotesGetRevision.self, request, context, reply) { engine, params in try engine.notesGetRevision(params) }
        case M.NotesRestoreRevision.name:
            run(M.NotesRestoreRevision.self, request, context, reply) { engine, params in try engine.notesRestoreRevision(params) }
        case M.FoldersList.name:
            run(M.FoldersList.self, request, context, reply) { engine, _ in try engine.folderInfos() }
        case M.FoldersCreate.name:
            run(M.FoldersCreate.self, request, context, reply) { engine, params in try engine.foldersCreate(params) }
        case M.FoldersRename.name:
            run(M.FoldersRename.self, request, context, reply) { engine, params in try engine.foldersRename(params) }
        case M.FoldersMove.name:
            run(M.FoldersMove.self, request, context, reply) { engine, params in try engine.foldersMove(params) }
        case M.FoldersDelete.name:
            run(M.FoldersDelete.self, request, context, reply) { engine, params in try engine.foldersDelete(params) }
        case M.MarkdownParse.name:
            run(M.MarkdownParse.self, request, context, reply) { _, params in try EngineCore.markdownParse(params) }
        case M.MarkdownParseMany.name:
            run(M.MarkdownParseMany.self, request, context, reply) { engine, params in
                params.texts.map { text in
                    do { return MarkdownParseOutcome(result: try EngineCore.markdownParse(MarkdownParseParams(text: text))) } catch {
                        return MarkdownParseOutcome(error: engine.rpcError(error))
                    }
                }
            }
        case M.NotesCreateMany.name:
            run(M.NotesCreateMany.self, request, context, reply) { engine, params in try engine.notesCreateMany(params) }
        case M.Sync.name:
            answer(M.Sync.self, request, context, reply) { engine, params, complete in
                let token = engine.park(complete) { if case .sync(let result) = $0 { result } else { nil } }
                engine.request { $0.startSync(context.transport.capping(params), token: token) }
            }
        case M.Backup.name:
            let descriptor = context.descriptors.take()
            answer(M.Backup.self, request, context, reply) { engine, params, complete in
                engine.startBackup(params, descriptor: descriptor, complete: complete)
            }
        case M.Watch.name:
            let sink = context.startWatch()
            answer(M.Watch.self, request, context, reply) { engine, _, complete in
                engine.watchers.add(sink)
                complete(.success(WatchResult(events: ControlEvent.knownTypes)))
            }
        case M.NotesSearch.name:
            run(M.NotesSearch.self, request, context, reply) { engine, params in try engine.notesSearch(params) }
        case M.WebLoginToken.name, M.WebSessions.name, M.WebLogoutAll.name:
            handleWeb(request, context: context, reply: reply)
        default:
            reply(ControlWire.error(id: request.id, .methodNotFound(request.method)))
        }
    }
}

