#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Synchronization

/// Turns the stop signals (SIGTERM from systemd, SIGINT from a terminal) into one call of a
/// handler, for a clean shutdown; SIGHUP is logged and otherwise ignored (notesd has no
/// configuration file to reload). Dispatch signal sources install their own handler, so a
/// signal never runs the default action (termination) once the watcher is set up.
///
/// `@unchecked Sendable`: `sources` is never mutated after `init`, and a Dispatch source's
/// `cancel()` may be called from any thread (Dispatch's documented contract); the handlers
/// capture only Sendable values.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    /// Starts watching. `onTerminate` runs once, on `queue`, with the first stop signal;
    /// later ones are only logged. `terminating` and `logged` exist for tests, which use
    /// signals nobody else sends.
    init(
        terminating: [Int32] = [SIGTERM, SIGINT], logged: [Int32] = [SIGHUP],
        queue: DispatchQueue, log: Log, onTerminate: @escaping @Sendable (Int32) -> Void
    ) {
        let fired = Atomic<Bool>(false)
        var sources: [any DispatchSourceSignal] = []
        for signal in terminating {
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler {
                if fired.exchange(true, ordering: .acquiringAndReleasing) {
                    log.notice("\(Self.name(signal)) received again; already stopping")
                } else {
                    log.info("\(Self.name(signal)) received; stopping")
                    onTerminate(signal)
                }
            }
            sources.append(source)
        }
        for signal in logged {
            let source = DispatchSource.makeSignalSource(signal: signal, queue: queue)
            source.setEventHandler { log.notice("\(Self.name(signal)) received and ignored: notesd has no configuration to reload") }
            sources.append(source)
        }
        self.sources = sources
        for source in sources { source.resume() }
    }

    /// Stops watching; the signals' dispositions stay as Dispatch left them.
    func cancel() {
        for source in sources { source.cancel() }
    }

    /// A write to a closed socket or pipe returns `EPIPE` instead of killing the process.
    /// Process-wide, so it is set once at start-up, before any socket exists.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        default: "signal \(signal)"
        }
    }
}
