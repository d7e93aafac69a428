import Control
import Engine
import Foundation
import Merge
import Peer

/// The engine as the process shell runs it: started after the control socket is claimed,
/// pinged by the watchdog, shut down last.
final class EngineDaemon: DaemonEngine {
    let engine: EngineShell
    let controlHandler: any ControlRequestHandler

    init(engine: EngineShell, web: WebControl? = nil) {
        self.engine = engine
        controlHandler = EngineControlHandler(engine: engine, web: web)
    }

    /// Opens the data directory's replica and keys and starts serving devices.
    static func start(_ startup: DaemonStartup) throws -> any DaemonEngine {
        let config = startup.config
        let log = startup.log
        Replica.tuneHeapForDaemon()
        let databasePath = config.dataDirectory + "/notes.db"
        if let stored = Replica.schemaVersion(ofDatabaseAt: databasePath), stored > 0, stored < Replica.schemaVersion {
            // Some upgrades rewrite a table (schema 10 re-keys every block: 13.7 s to ready for
            // 100,000 notes, the start-up check included), and nobody is answered until then.
            log.info("upgrading the library's storage from schema \(stored) to \(Replica.schemaVersion); a large library takes a while")
        }
        // A start that skipped the whole-file check can still meet damage in the pages it
        // reads: said as the check would say it (the next start checks the file first).
        let (replica, identity, engine) = try reportingDamage(in: databasePath) {
            let replica = try Replica(path: databasePath, check: .afterUncleanShutdown)
            replica.checkpointBesideBulkWrites()
            let identity = try DeviceIdentity.loadOrCreate(inDirectory: config.dataDirectory)
            let household = try HouseholdKey(directory: config.dataDirectory)
            for socket in startup.otherActivatedSockets { close(socket.fileDescriptor) }
            let settings = EngineShell.Settings(
                core: EngineCore.Settings(dataDirectory: config.dataDirectory, deviceName: config.name, controlSocket: config.socketPath),
                listen: PeerAddress(host: config.listen.host, port: config.listen.port),
                staticPeers: config.staticPeers.map(\.description), mdns: config.mdnsEnabled)
            let engine = try EngineShell(
                settings: settings, replica: replica, identity: identity, household: household,
                log: EngineCore.Logger(
                    debug: { log.debug($0) }, info: { log.info($0) }, warning: { log.warning($0) }, error: { log.error($0) }))
            try engine.start()
            return (replica, identity, engine)
        }
        let notes = engine.queue.sync { (try? engine.replica.noteCount) ?? 0 }
        log.info("device \(identity.deviceID.short) (\(config.name)), \(notes) notes, data in \(config.dataDirectory)")
        if let web = startup.web { engine.attachWeb(web) }
        if !replica.checkedAtOpen { checkInBackground(databasePath, engine: engine, log: engine.log) }
        return EngineDaemon(engine: engine, web: startup.web)
    }

    static func reportingDamage<T>(in path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError where error.isCorrupt {
            throw ReplicaError.corrupt(path: path, problems: [error.message])
        }
    }

    /// The whole-file check a clean start skipped (`Replica.OpeningCheck`), run beside the
    /// engine through a read-only connection. Damage stops the daemon as a failed start would
    /// (the next start checks the file and refuses it, saying what to do); the engine is
    /// stopped first, so nothing more is synced from the damaged file.
    static func checkInBackground(_ path: String, engine: EngineShell, log: EngineCore.Logger) {
        DispatchQueue(label: "notesd.startup-check").async {
            let started = ContinuousClock.now
            let problems: [String]
            do {
                // The check's connection and a bulk write's commits must not wait for each other.
                try engine.queue.sync { try engine.replica.connectionBesideOpening() }
                defer { engine.queue.async { engine.replica.connectionBesideClosed() } }
                problems = try Replica.quickCheck(path: path)
            } catch {
                log.warning("cannot check \(path) beside the engine (\(error)); it is checked at the next start instead")
                engine.queue.sync { try? engine.replica.requireCheckAtNextOpen() }
                return
            }
            guard !problems.isEmpty else {
                log.debug("quick_check of \(path): ok, \(started.duration(to: .now))")
                return
            }
            engine.queue.sync {
                engine.stop()
                try? engine.replica.requireCheckAtNextOpen()
            }
            log.error(ReplicaError.corrupt(path: path, problems: problems).description)
            exit(DaemonExitStatus.failure.rawValue)
        }
    }

    func heartbeat() {
        engine.queue.sync {
            // A trivial read proves the database answers, not only the queue.
            _ = try? engine.replica.database.first("SELECT 1") { $0.int(0) }
        }
    }

    func shutdown() {
        engine.queue.sync {
            engine.stop()
            // Last of all, so the next start may skip the whole-file check (Replica.OpeningCheck).
            do { try engine.replica.markClosedCleanly() } catch { engine.log.warning("cannot record the clean shutdown (\(error)); the next start checks the whole database") }
        }
    }
}
