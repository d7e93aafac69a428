import Control
import Discovery
import Foundation
import Peer

/// Where peers come from (docs/discovery.md): static addresses (`--peer`, `notesctl connect`) and,
/// unless `--no-mdns`, Avahi. Both are `PeerSource`s; their events land on the engine's queue
/// and become dial targets.
extension Engine {
    enum SourceKind {
        case configured
        case mdns
    }

    /// Starts the static source and, when enabled, Avahi. Runs on `queue`.
    func startSources(mdns: Bool) {
        guard let port = listenPort else { return }
        let advertisement: Advertisement
        do {
            advertisement = try Advertisement(port: port, deviceID: identity.deviceID.short)
        } catch {
            log.error("cannot advertise this device: \(error)")
            return
        }
        var endpoints: [PeerEndpoint] = []
        for text in settings.staticPeers + ((try? replica.staticPeers()) ?? []) {
            do {
                endpoints.append(try PeerEndpoint(parsing: text))
            } catch {
                log.warning("ignoring static peer: \(error)")
            }
        }
        let configured = StaticPeers(endpoints)
        configured.start(advertising: advertisement) { [weak self] event in
            guard let engine = self else { return }
            engine.thread.post { engine.sourceEvent(event, from: .configured) }
        }
        sources.append(configured)
        guard mdns else { return }
        discovery = DiscoveryStatus(state: .starting, reason: nil)
        let avahi = AvahiDiscovery(log: { [log] message in log.debug("discovery: \(message)") })
        avahi.start(advertising: advertisement) { [weak self] event in
            guard let engine = self else { return }
            engine.thread.post { engine.sourceEvent(event, from: .mdns) }
        }
        sources.append(avahi)
    }

    func stopSources() {
        for source in sources { source.stop() }
        sources.removeAll()
    }

    private func sourceEvent(_ event: DiscoveryEvent, from kind: SourceKind) {
        guard !stopped else { return }
        switch event {
        case .state(let state):
            guard kind == .mdns else { return }
            let status: DiscoveryStatus = switch state {
            case .disabled: DiscoveryStatus(state: .disabled, reason: state.description)
            case .starting: DiscoveryStatus(state: .starting, reason: state.description)
            case .running: DiscoveryStatus(state: .running, reason: state.description)
            case .unavailable(let reason): DiscoveryStatus(state: .unavailable, reason: reason)
            }
            if status != discovery { log.info("discovery: \(state.description)") }
            discovery = status
        case .found(let peer):
            switch kind {
            case .configured:
                let address = Peer.PeerAddress(host: peer.hostName, port: peer.port).description
                try? addTarget(address, origin: .configured)
                dialDueTargets()
            case .mdns:
                guard let best = peer.addresses.sorted().first else { return }
                let host = best.interfaceIndex.map { "\(best.ip)%\($0)" } ?? best.ip
                discovered(address: Peer.PeerAddress(host: host, port: peer.port).description, shortID: peer.deviceID, service: peer.serviceName)
                for attempt in joinAttempts.keys { tryNextJoinCandidate(attempt) }
            }
        case .lost(let service):
            if kind == .mdns { lost(service: service) }
        }
        reschedule()
    }
}
