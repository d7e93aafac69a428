import Control
import Discovery
import Engine
import Foundation
import Peer

/// Where peers come from (docs/discovery.md): static addresses (`--peer`, `notesctl connect`)
/// and, unless `--no-mdns`, Avahi. Both are `PeerSource`s; their events reach the engine's
/// queue through `thread` and go to the core as discovery inputs.
extension EngineShell {
    enum SourceKind {
        case configured
        case mdns
    }

    /// Starts the static source and, when enabled, Avahi. Runs on `queue`.
    func startSources(mdns: Bool) {
        guard let port = core.listenPort else { return }
        let advertisement: Advertisement
        do {
            advertisement = try Advertisement(port: port, deviceID: core.identity.deviceID.short)
        } catch {
            log.error("cannot advertise this device: \(error)")
            return
        }
        var endpoints: [PeerEndpoint] = []
        for text in core.staticPeerAddresses(configured: settings.staticPeers) {
            do {
                endpoints.append(try PeerEndpoint(parsing: text))
            } catch {
                log.warning("ignoring static peer: \(error)")
            }
        }
        let configured = StaticPeers(endpoints)
        configured.start(advertising: advertisement) { [weak self] event in
            guard let shell = self else { return }
            shell.thread.post { shell.sourceEvent(event, from: .configured) }
        }
        sources.append(configured)
        guard mdns else { return }
        input { $0.discoveryStateChanged(DiscoveryStatus(state: .starting, reason: nil), now: $1) }
        let avahi = AvahiDiscovery(log: { [log] message in log.debug("discovery: \(message)") })
        avahi.start(advertising: advertisement) { [weak self] event in
            guard let shell = self else { return }
            shell.thread.post { shell.sourceEvent(event, from: .mdns) }
        }
        sources.append(avahi)
    }

    func stopSources() {
        for source in sources { source.stop() }
        sources.removeAll()
    }

    private func sourceEvent(_ event: DiscoveryEvent, from kind: SourceKind) {
        switch event {
        case .state(let state):
            guard kind == .mdns else { return }
            let status: DiscoveryStatus = switch state {
            case .disabled: DiscoveryStatus(state: .disabled, reason: state.description)
            case .starting: DiscoveryStatus(state: .starting, reason: state.description)
            case .running: DiscoveryStatus(state: .running, reason: state.description)
            case .unavailable(let reason): DiscoveryStatus(state: .unavailable, reason: reason)
            }
            input { $0.discoveryStateChanged(status, now: $1) }
        case .found(let peer):
            switch kind {
            case .configured:
                let address = Peer.PeerAddress(host: peer.hostName, port: peer.port).description
                input { $0.staticPeerFound(address, now: $1) }
            case .mdns:
                guard let best = peer.addresses.sorted().first else { return }
                let host = best.interfaceIndex.map { "\(best.ip)%\($0)" } ?? best.ip
                let address = Peer.PeerAddress(host: host, port: peer.port).description
                input { $0.serviceAppeared(address: address, shortID: peer.deviceID, service: peer.serviceName, now: $1) }
            }
        case .lost(let service):
            guard kind == .mdns else { return }
            input { $0.serviceGone(service, now: $1) }
        }
    }
}
