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
    /// Answers control requests; the server calls it on each connection's queue.
    var controlHandler: any ControlRequestHandler { get }
    /// Blocks until the engine's own queue has run a block. systemd's watchdog is pinged
    /// only after it returns, so a stuck engine gets the daemon restarted.
    func heartbeat()
    /// Ends sessions, stops discovery and closes the database; blocks until that is done.
    /// Called once, after the control server has stopped.
    func shutdown()
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
    /// The web server, bound but not serving yet; the engine attaches to it. `nil` with `--no-web`.
    var web: WebControl? = nil
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
///
/// The daemon runs only on threads it owns (main, control server, network, engine, watchdog,
/// Avahi) and on labelled serial dispatch queues — no `async`/`await`, no `Task`, no
/// `DispatchQueue.global()` or concurrent queue. On Linux, libdispatch's first use of a
/// global (root) queue, which is also where Swift concurrency runs tasks, starts a timer that
/// wakes the process every second for as long as it lives; docs/benchmarks.md allows an idle daemon
/// one wake-up per 30 s (docs/architecture.md, "The daemon's threads").
enum DaemonMain {
    typealias StartEngine = @Sendable (DaemonStartup) throws -> any DaemonEngine

    /// The whole process, for `main.swift`: never returns. The main thread waits in
    /// `serve` for the stop signal, which a signal source on a serial queue delivers.
    static func main(startEngine: StartEngine) -> Never {
        SignalWatcher.ignoreBrokenPipes()
        // Every file and directory notesd creates (database, WAL, shared memory, keys,
        // backups) is private to its user whatever umask it was started with; SQLite creates
        // its -wal and -shm files with the database's mode, so this covers them too. The
        // control socket's mode is set explicitly (ControlListener).
        umask(0o077)
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
        case .success(.restoreBackup(let file, let directory)):
            exit(RestoreBackupCommand.run(file: file, dataDirectory: directory).rawValue)
        case .success(.run(let config)):
            let log = Log.standardError(level: config.logLevel, environment: environment.variables)
            let stop = StopLatch()
            let signals = SignalWatcher(queue: DispatchQueue(label: "notesd.signals"), log: log) { _ in stop.trigger() }
            let status = serve(config: config, environment: environment.variables, log: log, startEngine: startEngine) {
                stop.wait()
            }
            signals.cancel()
            exit(status.rawValue)
        }
    }

    /// Runs the daemon with `config` until `waitForStop` returns (blocking the calling
    /// thread); then shuts down cleanly. `environment` supplies the systemd variables
    /// (`NOTIFY_SOCKET`, `LISTEN_FDS`, …).
    static func serve(
        config: DaemonConfig, environment: [String: String], log: Log, startEngine: StartEngine,
        waitForStop: () -> Void
    ) -> DaemonExitStatus {
        do {
            if let warning = try DataDirectory.prepare(config.dataDirectory) { log.warning(warning) }
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

        // The web port is bound before the engine too, so `status` knows it from the start.
        let web: WebControl?
        do {
            web = try config.web.map { try WebControl.bind($0, log: log) }
        } catch {
            log.error("\(error)")
            listener.close()
            return .failure
        }

        let notifier = SystemdNotifier(environment: environment)
        let engine: any DaemonEngine
        do {
            engine = try startEngine(DaemonStartup(config: config, log: log, notifier: notifier, otherActivatedSockets: otherSockets, web: web))
        } catch {
            log.error("cannot start: \(error)")
            listener.close()
            if let web { close(web.listener.fileDescriptor) }
            return .failure
        }

        let server: ControlServer
        do {
            server = try ControlServer(listener: listener, handler: engine.controlHandler, log: log)
        } catch {
            log.error("\(error)")
            listener.close()
            engine.shutdown()
            return .failure
        }

        if let web {
            do {
                try web.start(handler: engine.controlHandler)
            } catch {
                log.error("\(error)")
                server.stop()
                engine.shutdown()
                return .failure
            }
        }

        notify(log) { try notifier.ready(status: "Serving \(server.path)" + (web.map { ", web app on \($0.url)" } ?? "")) }
        let watchdog = Watchdog.start(notifier: notifier, engine: engine, log: log)

        waitForStop()

        // The watchdog first, so that no ping follows STOPPING=1.
        watchdog?.stop()
        notify(log) { try notifier.stopping() }
        web?.stop()
        server.stop()
        engine.shutdown()
        log.info("stopped")
        return .success
    }

    /// A failed notification is logged: systemd will time the unit out and say so too.
    static func notify(_ log: Log, _ body: () throws -> Void) {
        do { try body() } catch { log.warning("cannot notify systemd: \(error)") }
    }
}

/// Pings systemd's watchdog at half its timeout, each ping after the engine's queue answered
/// a heartbeat, from a thread of its own that sleeps in between. Not a dispatch timer: that
/// runs its handler on a libdispatch worker thread, which exits 5 s later, one more wake-up
/// per ping (docs/benchmarks.md).
final class Watchdog: Sendable {
    private let stopRequested = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    private init(interval: Duration, notifier: SystemdNotifier, engine: any DaemonEngine, log: Log) {
        let nanoseconds = Int(clamping: interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
        let thread = Thread { [stopRequested, finished] in
            while stopRequested.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
                engine.heartbeat()
                DaemonMain.notify(log) { try notifier.watchdog() }
            }
            finished.signal()
        }
        thread.name = "notesd-watchdog"
        thread.start()
    }

    /// `nil` when no watchdog is configured (`WATCHDOG_USEC` unset or for another process).
    static func start(notifier: SystemdNotifier, engine: any DaemonEngine, log: Log) -> Watchdog? {
        guard let interval = notifier.watchdogPingInterval else { return nil }
        log.debug("pinging the systemd watchdog every \(interval)")
        return Watchdog(interval: interval, notifier: notifier, engine: engine, log: log)
    }

    /// No ping starts after this, and a ping in progress has been sent when it returns.
    /// Call it once.
    func stop() {
        stopRequested.signal()
        finished.wait()
    }
}

/// A one-shot stop request: `trigger()` may come before or after `wait()` is called, from
/// any thread, any number of times.
final class StopLatch: Sendable {
    private let triggered = Atomic<Bool>(false)
    /// Signalled by the first `trigger()`; each waiter passes the signal on to the next.
    private let released = DispatchSemaphore(value: 0)

    init() {}

    func trigger() {
        guard !triggered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        released.signal()
    }

    /// Blocks the calling thread until `trigger()` has been called.
    func wait() {
        released.wait()
        released.signal()
    }
}
