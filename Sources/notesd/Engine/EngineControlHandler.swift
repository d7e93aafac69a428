import Control
import Foundation
import Peer

/// Answers control requests by running them on the engine's queue (one at a time with
/// everything else the engine does); waits (`sync --wait`, `join`, `connect`) park a
/// completion in the engine and do not hold the queue. Params are decoded, and answers
/// encoded, on the connection's queue, so the engine's queue does only the engine's work.
struct EngineControlHandler: ControlRequestHandler {
    let engine: Engine

    /// Decodes `M`'s params, runs `start` on the engine's queue, and encodes what it
    /// completes with back on the connection's queue.
    private func answer<M: ControlMethod>(
        _ method: M.Type, _ request: IncomingRequest, _ context: ControlContext, _ reply: @escaping @Sendable (Data) -> Void,
        start: @escaping @Sendable (Engine, M.Params, _ complete: @escaping @Sendable (Result<M.Result, RPCError>) -> Void) -> Void
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
        _ body: @escaping @Sendable (Engine, M.Params) throws -> M.Result
    ) {
        answer(method, request, context, reply) { engine, params, complete in
            complete(Result { try body(engine, params) }.mapError { engine.rpcError($0) })
        }
    }

    func handle(_ request: IncomingRequest, context: ControlContext, reply: @escaping @Sendable (Data) -> Void) {
        typealias M = ControlMethods
        switch request.method {
        case M.Status.name:
            run(M.Status.self, request, context, reply) { engine, _ in try engine.status() }
        case M.DevicesList.name:
            run(M.DevicesList.self, request, context, reply) { engine, _ in engine.deviceInfos() }
        case M.DevicesRemove.name:
            run(M.DevicesRemove.self, request, context, reply) { engine, params in try engine.devicesRemove(params) }
        case M.Invite.name:
            run(M.Invite.self, request, context, reply) { engine, _ in try engine.invite() }
        case M.Join.name:
            answer(M.Join.self, request, context, reply) { engine, params, complete in engine.startJoin(params, complete: complete) }
        case M.Connect.name:
            answer(M.Connect.self, request, context, reply) { engine, params, complete in engine.startConnect(params, complete: complete) }
        case M.NotesList.name:
            run(M.NotesList.self, request, context, reply) { engine, params in try engine.notesList(params) }
        case M.NotesGet.name:
            run(M.NotesGet.self, request, context, reply) { engine, params in try engine.notesGet(params) }
        case M.NotesCreate.name:
            run(M.NotesCreate.self, request, context, reply) { engine, params in try engine.notesCreate(params) }
        case M.NotesImport.name:
            run(M.NotesImport.self, request, context, reply) { engine, params in try engine.notesImport(params) }
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
        case M.Sync.name:
            answer(M.Sync.self, request, context, reply) { engine, params, complete in engine.startSync(params, complete: complete) }
        case M.Watch.name:
            let sink = context.startWatch()
            run(M.Watch.self, request, context, reply) { engine, _ in engine.watch(sink) }
        default:
            reply(ControlWire.error(id: request.id, .methodNotFound(request.method)))
        }
    }
}
