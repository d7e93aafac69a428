import Control
import Foundation
import Synchronization

/// Where the engine sends `watch` events for one connection. Safe from any thread; never
/// blocks: events queue on the connection, and a client more than
/// `ControlServerLimits.maximumUnsentEventBytes` behind is disconnected (protocol spec,
/// "Server guarantees" 5). Once `isClosed`, drop the sink.
final class WatchSink: Sendable {
    private let mailbox: ConnectionMailbox

    init(mailbox: ConnectionMailbox) { self.mailbox = mailbox }

    var connectionID: ControlConnectionID { mailbox.id }

    /// The client disconnected, fell too far behind, or the server stopped.
    var isClosed: Bool { mailbox.isClosed }

    /// Queues `event`; `false` when the sink is closed (or the event could not be encoded).
    @discardableResult
    func send(_ event: ControlEvent) -> Bool {
        guard let line = try? ControlWire.event(event) else { return false }
        return send(line: line)
    }

    /// Queues an already encoded notification line (`ControlWire.event`), for sending one
    /// encoding to many watchers; `false` when the sink is closed.
    @discardableResult
    func send(line: Data) -> Bool { mailbox.sendEvent(line) }
}

/// Every connection that called `watch`, for the engine to broadcast to: each event is
/// encoded once, and closed sinks are dropped as they are found.
final class ControlWatchers: Sendable {
    private let sinks = Mutex<[ControlConnectionID: WatchSink]>([:])
    /// Watchers that are not control connections (the web server's event streams): each
    /// says whether it wants events now, and takes them as values.
    private let taps = Mutex<[EventTap]>([])

    struct EventTap: Sendable {
        let isListening: @Sendable () -> Bool
        let receive: @Sendable (ControlEvent) -> Void
    }

    init() {}

    /// Adds a watcher that is not a control connection, for the life of the process.
    func addTap(isListening: @escaping @Sendable () -> Bool, receive: @escaping @Sendable (ControlEvent) -> Void) {
        taps.withLock { $0.append(EventTap(isListening: isListening, receive: receive)) }
    }

    private var listeningTaps: [EventTap] { taps.withLock { $0 }.filter { $0.isListening() } }

    /// Adds `sink`; adding the same connection's sink again changes nothing.
    func add(_ sink: WatchSink) {
        sinks.withLock { $0[sink.connectionID] = sink }
    }

    /// Open sinks (closed ones are counted until the next broadcast drops them).
    var count: Int { sinks.withLock { $0.count } + listeningTaps.count }

    /// Sends `event` to every open sink. Events that cannot be encoded are dropped (events
    /// are hints for displays, never the only copy of anything).
    func broadcast(_ event: ControlEvent) {
        for tap in listeningTaps { tap.receive(event) }
        let current = sinks.withLock { sinks in
            sinks = sinks.filter { !$0.value.isClosed }
            return Array(sinks.values)
        }
        guard !current.isEmpty, let line = try? ControlWire.event(event) else { return }
        var closed: [ControlConnectionID] = []
        for sink in current where !sink.send(line: line) { closed.append(sink.connectionID) }
        if !closed.isEmpty { sinks.withLock { for id in closed { $0[id] = nil } } }
    }
}
