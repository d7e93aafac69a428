#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control
import Foundation
import Synchronization

/// What the process shell needs from the daemon's core (replica, sessions, network,
/// discovery), which the shell starts after the control socket is claimed and stops last.
protocol DaemonEngine: Sendable {
    /// Answers control requests; the server calls it from its tasks.
    var controlHandler: any ControlRequestHandler { get }
    /// Returns once the engine's own queue has run a block. systemd's watchdog is pinged
    /// only after it returns, so a stuck engine gets the daemon restarted.
    func heartbeat() async
    /// Ends sessions, stops discovery and closes the database. Called once, after the
    /// control server has stopped.
    func shutdown() async
}

/// What the engine is started with.
struct DaemonStartup: Sendable {
    let config: DaemonConfig
    let log: Log
    /// For `STATUS=` updates (`systemctl status` shows the latest).
    let notifier: SystemdNotifier
    /// Sockets systemd passed other than the control socket (e.g. a sync listener named
    /// `sync`); the engine adopts or closes them.
    let otherActivatedSockets: [ActivatedSocket]
}

/// The exit statuses of `notesd`.
enum DaemonExitStatus: Int32 {
    case success = 0
    /// Start-up failed (data directory, socket in use, database), with the reason logged.
    case failure = 1
    /// Bad command line (sysexits' `EX_USAGE`).
    case usage = 64
}

/// The process's life: parse the command line, claim the control socket, start the engine,
/// tell systemd it is ready, serve until SIGTERM/SIGINT, shut down in reverse order.
enum DaemonMain {
    typealias StartEngine = @Sendable (DaemonStartup) async throws -> any DaemonEngine

    /// The whole process, for `main.swift`: never returns.
    static func main(startEngine: StartEngine) async -> Never {
        SignalWatcher.ignoreBrokenPipes()
        let environment = ProcessEnvironment.current()
        switch DaemonArguments.parse(Array(CommandLine.arguments.dropFirst()), environment: environment) {
        case .failure(let error):
            FileHandle.standardError.write(Data("notesd: \(error.message)\n\(DaemonArguments.usage)\n".utf8))
            exit(DaemonExitStatus.usage.rawValue)
        case .success(.help):
            print(DaemonArguments.help)
            exit(DaemonExitStatus.success.rawValue)
        case .success(.version):
            print("notesd \(NotesVersion.string)")
            exit(DaemonExitStatus.success.rawValue)
        case .success(.run(let config)):
            let log = Log.standardError(level: config.logLevel, environment: environment.variables)
            let stop = StopLatch()
            let signals = SignalWatcher(queue: DispatchQueue(label: "notesd.signals"), log: log) { _ in stop.trigger() }
            let status = await serve(config: config, environment: environment.variables, log: log, startEngine: startEngine) {
                await stop.wait()
            }
            signals.cancel()
            exit(status.rawValue)
        }
    }

    /// Runs the daemon with `config` until `waitForStop` returns; then shuts down cleanly.
    /// `environment` supplies the systemd variables (`NOTIFY_SOCKET`, `LISTEN_FDS`, …).
    static func serve(
        config: DaemonConfig, environment: [String: String], log: Log, startEngine: StartEngine,
        waitForStop: @Sendable () async -> Void
    ) async -> DaemonExitStatus {
        do {
            try DataDirectory.prepare(config.dataDirectory)
        } catch {
            log.error(error.description)
            return .failure
        }

        // The control socket is claimed before the engine opens the database, so a second
        // daemon stops here instead of contending for the first one's files.
        let listener: ControlListener
        let otherSockets: [ActivatedSocket]
        do {
            let activated = try SocketActivation.takeFromEnvironment(environment)
            if let control = SocketActivation.controlSocket(among: activated) {
                listener = try ControlListener.adopt(control)
                otherSockets = activated.filter { $0 != control }
                log.info("using the control socket systemd passed (\(listener.path))")
            } else {
                listener = try ControlListener.bind(path: config.socketPath)
                otherSockets = activated
            }
        } catch let error as SocketActivationError {
            log.error("socket activation: \(error)")
            return .failure
        } catch {
            log.error("\(error)")
            return .failure
        }

        let notifier = SystemdNotifier(environment: environment)
        let engine: any DaemonEngine
        do {
            engine = try await startEngine(DaemonStartup(config: config, log: log, notifier: notifier, otherActivatedSockets: otherSockets))
        } catch {
            log.error("cannot start: \(error)")
            listener.close()
            return .failure
        }

        let server: ControlServer
        do {
            server = try ControlServer(listener: listener, handler: engine.controlHandler, log: log)
        } catch {
            log.error("\(error)")
            listener.close()
            await engine.shutdown()
            return .failure
        }

        notify(log) { try notifier.ready(status: "Serving \(server.path)") }
        let watchdog = startWatchdog(notifier: notifier, engine: engine, log: log)

        await waitForStop()

        notify(log) { try notifier.stopping() }
        watchdog?.cancel()
        server.stop()
        await engine.shutdown()
        log.info("stopped")
        return .success
    }

    /// Pings systemd's watchdog at half its timeout, each ping after the engine's queue
    /// answered a heartbeat; `nil` when no watchdog is configured.
    private static func startWatchdog(notifier: SystemdNotifier, engine: any DaemonEngine, log: Log) -> Task<Void, Never>? {
        guard let interval = notifier.watchdogPingInterval else { return nil }
        log.debug("pinging the systemd watchdog every \(interval)")
        return Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                await engine.heartbeat()
                notify(log) { try notifier.watchdog() }
            }
        }
    }

    /// A failed notification is logged: systemd will time the unit out and say so too.
    private static func notify(_ log: Log, _ body: () throws -> Void) {
        do { try body() } catch { log.warning("cannot notify systemd: \(error)") }
    }
}

/// A one-shot stop request: `trigger()` may come before or after `wait()` is called, from
/// any thread, any number of times.
final class StopLatch: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Void, Never>])
        case triggered
    }

    private let state = Mutex(State.waiting([]))

    init() {}

    func trigger() {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .triggered
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                switch state {
                case .triggered:
                    return true
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return false
                }
            }
            if resumeNow { continuation.resume() }
        }
    }
}
