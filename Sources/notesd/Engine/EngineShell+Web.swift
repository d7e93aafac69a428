import Control
import Engine
import Foundation
import Peer
import Web

/// The shell's side of the web server (docs/web.md): sessions persist in the replica's
/// database, events come from the same broadcast as `watch`, and the `web.*` methods.
extension EngineShell {
    /// Gives `web` its session storage and the event feed. Called once, at start.
    func attachWeb(_ web: WebControl) {
        web.attach(store: EngineWebSessions(engine: self), tap: watchers.addTap)
    }
}

/// Sessions in the replica's `web_sessions` table, through the engine's queue: loaded once
/// at start; writes are queued (the web thread never waits for the disk).
struct EngineWebSessions: WebSessionStore {
    let engine: EngineShell

    func loadSessions() -> [WebSessionRecord] {
        engine.queue.sync {
            do {
                return try engine.replica.webSessions().map { WebSessionRecord(hash: $0.hash, created: $0.created, lastUsed: $0.lastUsed) }
            } catch {
                engine.log.error("cannot read the web sessions: \(error); every browser must sign in again")
                return []
            }
        }
    }

    func saveSession(_ record: WebSessionRecord) {
        let engine = engine
        engine.queue.async {
            do {
                try engine.replica.saveWebSession(StoredWebSession(hash: record.hash, created: record.created, lastUsed: record.lastUsed))
            } catch {
                engine.log.warning("cannot save a web session: \(error); it lasts until the daemon stops")
            }
        }
    }

    func deleteSessions(hashes: [String]) {
        let engine = engine
        engine.queue.async {
            do {
                try engine.replica.deleteWebSessions(hashes)
            } catch {
                engine.log.warning("cannot delete \(hashes.count) web session(s): \(error)")
            }
        }
    }
}

extension EngineControlHandler {
    /// `web.loginToken`, `web.sessions`, `web.logoutAll`: the web server's own state, no
    /// engine queue needed.
    func handleWeb(_ request: IncomingRequest, context: ControlContext, reply: @escaping @Sendable (Data) -> Void) {
        typealias M = ControlMethods
        guard let web else {
            return reply(ControlWire.error(id: request.id, RPCError(
                code: .invalidOperation, message: "the web server is off (notesd runs with --no-web); restart notesd without it")))
        }
        switch request.method {
        case M.WebLoginToken.name:
            // The router refuses it over HTTP already; the transport check keeps that true
            // for any other caller of this dispatch.
            guard context.transport == .unixSocket else {
                return reply(ControlWire.error(id: request.id, RPCError(code: .methodNotFound, message: "web.loginToken is served only on the control socket; run notesctl ui")))
            }
            reply(request.respond(to: M.WebLoginToken.self) { _ in web.loginToken() })
        case M.WebSessions.name:
            reply(request.respond(to: M.WebSessions.self) { _ in web.sessions() })
        case M.WebLogoutAll.name:
            reply(request.respond(to: M.WebLogoutAll.self) { _ in web.logoutAll() })
        default:
            reply(ControlWire.error(id: request.id, .methodNotFound(request.method)))
        }
    }
}

extension StatusResult {
    func withWeb(_ web: WebControl?) -> StatusResult {
        var status = self
        status.web = web?.status
        return status
    }
}
