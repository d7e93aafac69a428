import Dispatch
import Synchronization

/// Hands a source's events to the user's handler on a private serial queue, so user code never
/// runs on Avahi's thread or under a source's locks, and may call back into the source.
///
/// Each `begin` opens a subscription; events sent for an older one are dropped, so a stopped
/// or restarted source never leaks stale events into the new handler.
final class EventDelivery: Sendable {
    private struct Subscription {
        var generation: UInt64
        var handler: @Sendable (DiscoveryEvent) -> Void
    }

    private let queue: DispatchQueue
    /// Marks `queue`, so `drain` can tell it is being called from a handler.
    private let queueKey = DispatchSpecificKey<Bool>()
    private let subscription = Mutex<(current: Subscription?, lastGeneration: UInt64)>((nil, 0))

    init(label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: queueKey, value: true)
    }

    /// Starts delivering to `handler`; returns the generation to pass to `send`.
    func begin(_ handler: @escaping @Sendable (DiscoveryEvent) -> Void) -> UInt64 {
        subscription.withLock { state in
            state.lastGeneration += 1
            state.current = Subscription(generation: state.lastGeneration, handler: handler)
            return state.lastGeneration
        }
    }

    /// Queues `event` for the handler of `generation`; dropped if that subscription has ended.
    /// Never blocks, so it is safe under any lock.
    func send(_ event: DiscoveryEvent, generation: UInt64) {
        queue.async { [self] in
            let handler = subscription.withLock { state in
                state.current?.generation == generation ? state.current?.handler : nil
            }
            handler?(event)
        }
    }

    /// Ends the current subscription: nothing more is delivered to its handler. Never blocks.
    func cancel() {
        subscription.withLock { $0.current = nil }
    }

    /// Waits until a handler call in progress has returned — unless called from that handler,
    /// which would wait for itself. After `cancel()` then `drain()`, the handler is not running
    /// and will not run again.
    func drain() {
        guard DispatchQueue.getSpecific(key: queueKey) != true else { return }
        queue.sync {}
    }
}
