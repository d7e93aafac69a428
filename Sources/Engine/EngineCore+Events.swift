import Control
import Foundation
import Merge
import Peer

/// A `sync --wait` waiting for every connected peer to catch up.
struct SyncWaiter {
    let deadline: UInt64
    let token: EngineCore.RequestToken
}

/// A `connect` waiting for its handshake.
struct ConnectWaiter {
    let target: String
    let deadline: UInt64
    /// The target was added by this `connect`: forget it if the connection fails.
    let isNew: Bool
    let token: EngineCore.RequestToken
}

extension EngineCore {
    public static let connectTimeout: UInt64 = 15_000

    // MARK: - Events

    func emit(_ payload: ControlEvent.Payload) {
        guard watching else { return }
        actions.append(.emit(ControlEvent(time: Timestamp(millisecondsSince1970: Int64(clamping: now)), payload: payload)))
    }

    /// A title as events carry it: at most 1,000 characters. Events are hints (the note itself
    /// is one `notes.get` away), and a watcher is dropped once 1 MiB of events waits for it.
    public static func eventTitle(_ title: String) -> String {
        title.count <= 1_000 ? title : String(title.prefix(999)) + "…"
    }

    /// Reports what a transaction changed: note events, conflict copies, roster changes.
    func publish(_ changes: Changes, origin: ChangeOrigin, device: DeviceID? = nil, deviceName: String? = nil) {
        // Nobody watching: skip building events (an initial sync changes thousands of notes).
        for (note, change) in watching ? changes.notes.sorted(by: { $0.key < $1.key }) : [] {
            let title = Self.eventTitle((try? replica.noteTitle(note)) ?? "")
            emit(.noteChanged(NoteChangedEvent(
                note: note.description, title: title, change: NoteChangeKind(rawValue: change.rawValue) ?? .edited, origin: origin,
                device: origin == .remote ? device?.description : nil, deviceName: origin == .remote ? deviceName : nil)))
        }
        for copy in changes.conflictCopies {
            counters.conflictCopiesCreated += 1
            log.info("conflict: kept the other version of \"\(copy.title)\" as a copy (\(copy.copy))")
            emit(.conflictCopyCreated(ConflictCopyEvent(note: copy.original.description, copy: copy.copy.description, title: Self.eventTitle(copy.title))))
        }
        if !changes.devices.isEmpty {
            cachedRoster = nil
            if origin == .remote { rosterChanged() }
        }
    }

    // MARK: - Waiters

    /// A sync is finished when no household dial is still in its handshake and every session
    /// is caught up.
    var everyPeerCaughtUp: Bool {
        for link in connections.values {
            switch link.state {
            case .syncing(let session):
                if !session.isCaughtUp(store: replica) { return false }
            case .dialing(.household), .closing:
                // A household dial still in its handshake counts, unless its device is
                // already syncing on another connection.
                if link.direction == .outbound && !(link.device.map(isConnected) ?? false) { return false }
            case .dialing(.join), .admitting, .joining:
                continue
            }
        }
        return true
    }

    func syncResult() -> SyncResult {
        SyncResult(caughtUp: everyPeerCaughtUp, peers: peerStatuses())
    }

    func checkSyncWaiters() {
        guard !syncWaiters.isEmpty, everyPeerCaughtUp else { return }
        let result = syncResult()
        let waiting = syncWaiters
        syncWaiters.removeAll()
        for waiter in waiting { actions.append(.reply(waiter.token, .sync(.success(result)))) }
    }

    func expireWaiters() {
        let expired = syncWaiters.filter { $0.deadline <= now }
        if !expired.isEmpty {
            syncWaiters.removeAll { $0.deadline <= now }
            let result = syncResult()
            for waiter in expired {
                actions.append(.reply(waiter.token, .sync(.failure(RPCError(
                    code: .timeout, message: "not every connected peer caught up in time; see `notesctl status` for who is behind",
                    encoding: result)))))
            }
        }
        for waiter in connectWaiters where waiter.deadline <= now {
            connectWaitersFail(target: waiter.target, reason: "no handshake within \(Self.seconds(Self.connectTimeout))", code: .timeout)
        }
        expireJoins()
    }

    func connectWaitersResolve(device: DeviceID, target: String?) {
        guard let target else { return }
        let ready = connectWaiters.filter { $0.target == target }
        guard !ready.isEmpty else { return }
        connectWaiters.removeAll { $0.target == target }
        do {
            try replica.addStaticPeer(target, now: now)
            updateTarget(target) { if case .discovered = $0.origin { $0.origin = .connected } }
        } catch {
            log.warning("cannot remember static peer \(target): \(error)")
        }
        let status = peerStatus(device: device)
        for waiter in ready { actions.append(.reply(waiter.token, .connect(.success(status)))) }
    }

    /// How a `connect` failed.
    enum ConnectFailure {
        /// Nobody answered, or the name did not resolve.
        case unreachable
        /// Something answered but did not finish a handshake, or refused this device.
        case refused
        /// No handshake within `connectTimeout`.
        case timeout
    }

    func connectWaitersFail(target: String, reason: String, code: ConnectFailure) {
        let failed = connectWaiters.filter { $0.target == target }
        guard !failed.isEmpty else { return }
        connectWaiters.removeAll { $0.target == target }
        let blocked = targets[target]?.blocked == true
        let error: RPCError = switch blocked ? .refused : code {
        case .refused: RPCError(code: .pairingFailed, message: "\(target) refused this device: \(reason)")
        case .timeout: RPCError(code: .timeout, message: "\(target) did not complete a handshake within \(Self.seconds(Self.connectTimeout))")
        case .unreachable: RPCError(code: .peerUnreachable, message: "cannot reach \(target): \(reason)", encoding: UnreachableData(address: target))
        }
        if failed.contains(where: \.isNew) {
            if let connection = connection(forTarget: target) { close(connection, reason: "connect failed") }
            targets[target] = nil
        }
        for waiter in failed { actions.append(.reply(waiter.token, .connect(.failure(error)))) }
    }
}
