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
        Replica.keepLargeBuffersMapped()
        let replica = try Replica(path: config.dataDirectory + "/notes.db")
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
        let notes = engine.queue.sync { (try? engine.replica.noteCount) ?? 0 }
        log.info("device \(identity.deviceID.short) (\(config.name)), \(notes) notes, data in \(config.dataDirectory)")
        if let web = startup.web { engine.attachWeb(web) }
        return EngineDaemon(engine: engine, web: startup.web)
    }

    func heartbeat() {
        engine.queue.sync {
            // A trivial read proves the database answers, not only the queue.
            _ = try? engine.replica.database.first("SELECT 1") { $0.int(0) }
        }
    }

    func shutdown() {
        engine.queue.sync { engine.stop() }
    }
}
