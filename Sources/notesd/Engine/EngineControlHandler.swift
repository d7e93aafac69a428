import Control
import Foundation
import Peer

/// Answers control requests by running them on the engine's queue (one at a time with
/// everything else the engine does); waits (`sync --wait`, `join`, `connect`) park a
/// completion in the engine and do not hold the queue.
struct EngineControlHandler: ControlRequestHandler {
    let engine: Engine

    /// Runs `body` on the engine's queue, turning any failure into the protocol's error.
    private func onEngine<T: Sendable>(_ body: @escaping @Sendable (Engine) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            engine.queue.async {
                do {
                    continuation.resume(returning: try body(engine))
                } catch {
                    continuation.resume(throwing: engine.rpcError(error))
                }
            }
        }
    }

    /// Starts an operation that answers later through a completion.
    private func waiting<T: Sendable>(
        _ start: @escaping @Sendable (Engine, @escaping @Sendable (Result<T, RPCError>) -> Void) -> Void
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            engine.queue.async {
                start(engine) { result in continuation.resume(with: result) }
            }
        }
    }

    func handle(_ request: IncomingRequest, context: ControlContext) async -> Data {
        typealias M = ControlMethods
        switch request.method {
        case M.Status.name:
            return await request.respond(to: M.Status.self) { _ in try await onEngine { try $0.status() } }
        case M.DevicesList.name:
            return await request.respond(to: M.DevicesList.self) { _ in try await onEngine { $0.deviceInfos() } }
        case M.DevicesRemove.name:
            return await request.respond(to: M.DevicesRemove.self) { params in try await onEngine { try $0.devicesRemove(params) } }
        case M.Invite.name:
            return await request.respond(to: M.Invite.self) { _ in try await onEngine { try $0.invite() } }
        case M.Join.name:
            return await request.respond(to: M.Join.self) { params in try await waiting { $0.startJoin(params, complete: $1) } }
        case M.Connect.name:
            return await request.respond(to: M.Connect.self) { params in try await waiting { $0.startConnect(params, complete: $1) } }
        case M.NotesList.name:
            return await request.respond(to: M.NotesList.self) { params in try await onEngine { try $0.notesList(params) } }
        case M.NotesGet.name:
            return await request.respond(to: M.NotesGet.self) { params in try await onEngine { try $0.notesGet(params) } }
        case M.NotesCreate.name:
            return await request.respond(to: M.NotesCreate.self) { params in try await onEngine { try $0.notesCreate(params) } }
        case M.NotesUpdate.name:
            return await request.respond(to: M.NotesUpdate.self) { params in try await onEngine { try $0.notesUpdate(params) } }
        case M.NotesTrash.name:
            return await request.respond(to: M.NotesTrash.self) { params in try await onEngine { try $0.notesTrash(params, trashed: true) } }
        case M.NotesRestore.name:
            return await request.respond(to: M.NotesRestore.self) { params in try await onEngine { try $0.notesTrash(params, trashed: false) } }
        case M.NotesPurge.name:
            return await request.respond(to: M.NotesPurge.self) { params in try await onEngine { try $0.notesPurge(params) } }
        case M.NotesHistory.name:
            return await request.respond(to: M.NotesHistory.self) { params in try await onEngine { try $0.notesHistory(params) } }
        case M.FoldersList.name:
            return await request.respond(to: M.FoldersList.self) { _ in try await onEngine { try $0.folderInfos() } }
        case M.FoldersCreate.name:
            return await request.respond(to: M.FoldersCreate.self) { params in try await onEngine { try $0.foldersCreate(params) } }
        case M.FoldersRename.name:
            return await request.respond(to: M.FoldersRename.self) { params in try await onEngine { try $0.foldersRename(params) } }
        case M.FoldersMove.name:
            return await request.respond(to: M.FoldersMove.self) { params in try await onEngine { try $0.foldersMove(params) } }
        case M.FoldersDelete.name:
            return await request.respond(to: M.FoldersDelete.self) { params in try await onEngine { try $0.foldersDelete(params) } }
        case M.Sync.name:
            return await request.respond(to: M.Sync.self) { params in try await waiting { $0.startSync(params, complete: $1) } }
        case M.Watch.name:
            let sink = context.startWatch()
            return await request.respond(to: M.Watch.self) { _ in try await onEngine { $0.watch(sink) } }
        default:
            return ControlWire.error(id: request.id, .methodNotFound(request.method))
        }
    }
}
