import Dispatch
import Glibc
import Synchronization

/// A peer given by hand: `--peer host:port` or `notesctl connect host:port`.
public struct PeerEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Longest host accepted: a DNS name is at most 253 characters as text.
    public static let maxHostLength = 253

    public let host: String
    public let port: UInt16

    /// - Throws: `PeerEndpointError` if `host` is empty, too long, or has spaces or brackets.
    public init(host: String, port: UInt16) throws(PeerEndpointError) {
        let text = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        guard !host.isEmpty else { throw PeerEndpointError(text: text, problem: "the host is empty") }
        guard host.count <= Self.maxHostLength else {
            throw PeerEndpointError(text: text, problem: "the host is longer than \(Self.maxHostLength) characters")
        }
        guard !host.contains(where: { $0.isWhitespace || $0 == "[" || $0 == "]" || $0 == "/" }) else {
            throw PeerEndpointError(text: text, problem: "the host contains a space, a bracket or a slash")
        }
        guard port != 0 else { throw PeerEndpointError(text: text, problem: "the port must be 1 to 65535") }
        self.host = host
        self.port = port
    }

    /// Parses `host:port`, `1.2.3.4:port` or `[ipv6]:port`.
    public init(parsing text: String) throws(PeerEndpointError) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[close...].hasPrefix("]:") else {
                throw PeerEndpointError(text: text, problem: "an IPv6 address must be written [address]:port")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw PeerEndpointError(text: text, problem: "it has no port; write host:port")
            }
            host = text[..<colon]
            guard !host.contains(":") else {
                throw PeerEndpointError(text: text, problem: "an IPv6 address must be written [address]:port")
            }
            portText = text[text.index(after: colon)...]
        }
        guard portText.count <= 5, portText.allSatisfy({ ("0"..."9").contains($0) }), let port = UInt16(portText), port != 0 else {
            throw PeerEndpointError(text: text, problem: "the port must be a number from 1 to 65535")
        }
        try self.init(host: String(host), port: port)
    }

    /// `host:port`, with IPv6 addresses in brackets; parses back to the same endpoint.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// A `host:port` that cannot be used; the message names the text and what to fix.
public struct PeerEndpointError: Error, Hashable, CustomStringConvertible {
    public let text: String
    public let problem: String
    public var description: String { "'\(text)' is not a usable peer address: \(problem)" }
}

/// Peers given by hand, reported as `.found` once each (with the addresses its name resolved to
/// at that moment) and `.lost` when removed. Names are resolved once, off the caller's thread;
/// connecting (and re-resolving when that fails) is the daemon's business.
/// It advertises nothing and sends no `.state` events.
public final class StaticPeers: PeerSource {
    /// Resolves an endpoint's host to addresses; empty when it does not resolve.
    public typealias Resolver = @Sendable (PeerEndpoint) -> [IPAddress]

    private struct Entry {
        var endpoint: PeerEndpoint
        /// Tells a resolution apart from an earlier one for an endpoint removed and re-added.
        var token: UInt64
        var reported: Bool
    }

    private struct State {
        var entries: [Entry]
        var generation: UInt64?
        var lastToken: UInt64 = 0
        var resolutionsInFlight = 0
    }

    private let state: Mutex<State>
    private let delivery = EventDelivery(label: "notesd.discovery.static")
    private let resolve: Resolver

    /// - Parameter resolve: how host names become addresses; `getaddrinfo` by default.
    public init(_ endpoints: [PeerEndpoint] = [], resolve: @escaping Resolver = StaticPeers.systemResolve) {
        var unique: [PeerEndpoint] = []
        for endpoint in endpoints where !unique.contains(endpoint) { unique.append(endpoint) }
        state = Mutex(State(entries: unique.map { Entry(endpoint: $0, token: 0, reported: false) }))
        self.resolve = resolve
    }

    deinit { stop() }

    /// The configured endpoints, in the order they were added.
    public var endpoints: [PeerEndpoint] {
        state.withLock { $0.entries.map(\.endpoint) }
    }

    /// Name lookups started and not yet reported or dropped (tests wait for it to reach zero).
    var resolutionsInFlight: Int {
        state.withLock { $0.resolutionsInFlight }
    }

    /// Adds an endpoint (reported as `.found` once resolved, if started). Returns `false` if it
    /// is already there.
    @discardableResult
    public func add(_ endpoint: PeerEndpoint) -> Bool {
        state.withLock { state in
            guard !state.entries.contains(where: { $0.endpoint == endpoint }) else { return false }
            state.lastToken += 1
            state.entries.append(Entry(endpoint: endpoint, token: state.lastToken, reported: false))
            if let generation = state.generation {
                state.resolutionsInFlight += 1
                resolveInBackground(endpoint, token: state.lastToken, generation: generation)
            }
            return true
        }
    }

    /// Removes an endpoint (reported as `.lost` if it had been found). Returns `false` if it
    /// was not there.
    @discardableResult
    public func remove(_ endpoint: PeerEndpoint) -> Bool {
        state.withLock { state in
            guard let index = state.entries.firstIndex(where: { $0.endpoint == endpoint }) else { return false }
            let removed = state.entries.remove(at: index)
            if removed.reported, let generation = state.generation {
                delivery.send(.lost(serviceName: endpoint.description), generation: generation)
            }
            return true
        }
    }

    public func start(advertising _: Advertisement, onEvent handler: @escaping @Sendable (DiscoveryEvent) -> Void) {
        state.withLock { state in
            let generation = delivery.begin(handler)
            state.generation = generation
            for index in state.entries.indices {
                state.lastToken += 1
                state.entries[index].token = state.lastToken
                state.entries[index].reported = false
                state.resolutionsInFlight += 1
                resolveInBackground(state.entries[index].endpoint, token: state.lastToken, generation: generation)
            }
        }
    }

    public func stop() {
        state.withLock { state in
            state.generation = nil
            delivery.cancel()
        }
        delivery.drain()
    }

    /// Resolves on a serial queue of its own (so a slow name server delays no other lookup),
    /// then reports under the lock — only if the endpoint is still there (same token) and the
    /// source still runs, so `.found` never follows its `.lost`. Called with the state locked,
    /// after counting the lookup in `resolutionsInFlight`.
    ///
    /// Never a global or concurrent queue: on Linux their first use starts a libdispatch
    /// timer that wakes the daemon every second for good (docs/benchmarks.md).
    private func resolveInBackground(_ endpoint: PeerEndpoint, token: UInt64, generation: UInt64) {
        DispatchQueue(label: "notesd.discovery.resolve").async { [self] in
            let addresses = resolve(endpoint)
            state.withLock { state in
                state.resolutionsInFlight -= 1
                guard state.generation == generation,
                      let index = state.entries.firstIndex(where: { $0.endpoint == endpoint && $0.token == token })
                else { return }
                state.entries[index].reported = true
                let peer = DiscoveredPeer(serviceName: endpoint.description, deviceID: nil, protocolVersion: nil,
                                          hostName: endpoint.host, addresses: addresses, port: endpoint.port)
                delivery.send(.found(peer), generation: generation)
            }
        }
    }

    /// Most addresses kept for one name.
    static let maxAddresses = 16

    /// `getaddrinfo` for TCP, numeric results deduplicated, IPv4 first; empty on failure.
    public static let systemResolve: Resolver = { endpoint in
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(endpoint.host, String(endpoint.port), &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses = Set<IPAddress>()
        var node = list
        while let current = node, addresses.count < maxAddresses {
            if let socketAddress = current.pointee.ai_addr, let address = IPAddress(socketAddress: socketAddress) {
                addresses.insert(address)
            }
            node = current.pointee.ai_next
        }
        return addresses.sorted()
    }
}
