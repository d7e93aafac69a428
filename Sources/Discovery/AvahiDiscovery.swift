import CAvahi
import Glibc
import Synchronization

/// mDNS discovery through the Avahi daemon (https://avahi.org/doxygen/html/): publishes
/// `_notesd._tcp` with TXT `v=1` and `id=<device id>`, browses and resolves the same type on
/// every interface and IP protocol, and reports what it finds.
///
/// It keeps working on its own when things move underneath it: a taken service name is replaced
/// by Avahi's alternative (`name #2`) and republished; when the Avahi daemon or D-Bus is missing
/// or restarts, the state goes `.unavailable(reason:)`, every peer is `.lost`, and once Avahi is
/// back it browses and publishes again and returns to `.running`; interfaces coming and going
/// are handled by Avahi's browser (a peer seen again after a link flap is `.found` again).
/// Our own service (any service carrying our device id) is never reported.
public final class AvahiDiscovery: PeerSource {
    private let session = Mutex<AvahiSession?>(nil)
    private let delivery = EventDelivery(label: "notesd.discovery.avahi")
    private let log: @Sendable (String) -> Void

    /// - Parameter log: receives diagnostics that are not events (a name taken and replaced, a
    ///   peer that did not answer and is retried), for a debug log. It is called on Avahi's
    ///   thread: it must return quickly and must not call back into this object.
    public init(log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.log = log
    }

    deinit { stop() }

    public func start(advertising advertisement: Advertisement,
                      onEvent handler: @escaping @Sendable (DiscoveryEvent) -> Void) {
        session.withLock { current in
            current?.shutDown()
            let generation = delivery.begin(handler)
            current = AvahiSession.start(advertisement: advertisement, log: log) { [delivery] event in
                delivery.send(event, generation: generation)
            }
        }
    }

    public func stop() {
        session.withLock { current in
            current?.shutDown()
            current = nil
            delivery.cancel()
        }
        delivery.drain()
    }
}

/// Why Avahi cannot be used, as the sentence `notesctl status` shows.
enum AvahiProblem: Hashable {
    case daemonNotRunning
    case busUnreachable(address: String)
    case failed(action: String, code: Int32)
    case noEventThread

    private static let fallback = "peers can still be added with --peer host:port"

    var reason: String {
        switch self {
        case .daemonNotRunning:
            "the Avahi daemon is not running (avahi-daemon); \(Self.fallback)"
        case .busUnreachable(let address):
            "the D-Bus system bus is not reachable (\(address)), so the Avahi daemon cannot be reached; start dbus and avahi-daemon, or add peers with --peer host:port"
        case .failed(let action, let code):
            "Avahi could not \(action): \(String(cString: avahi_strerror(code))) (error \(code)); retrying, and \(Self.fallback)"
        case .noEventThread:
            "could not start the thread that talks to Avahi; \(Self.fallback)"
        }
    }

    /// Why `avahi_client_new` returned no client. With `AVAHI_CLIENT_NO_FAIL` a missing daemon
    /// is not a failure (the client waits in `CONNECTING`), so a "no daemon" or D-Bus error here
    /// means the system bus itself could not be reached.
    static func clientNotCreated(error: Int32) -> AvahiProblem {
        switch error {
        case Int32(AVAHI_ERR_DBUS_ERROR), Int32(AVAHI_ERR_NO_DAEMON): .busUnreachable(address: systemBusAddress)
        default: .failed(action: "connect to the Avahi daemon", code: error)
        }
    }

    /// The address libavahi-client connects to (it honours `DBUS_SYSTEM_BUS_ADDRESS`).
    static var systemBusAddress: String {
        if let address = getenv("DBUS_SYSTEM_BUS_ADDRESS").map({ String(cString: $0) }), !address.isEmpty {
            return address
        }
        return "unix:path=/run/dbus/system_bus_socket"
    }
}

/// One run of mDNS discovery, from `start` to `shutDown`: Avahi's poll thread and every Avahi
/// object, forwarding callbacks to the `PeerTable` and emitting what it returns.
///
/// Threading: every mutable property is touched only while holding the threaded poll's lock —
/// in Avahi callbacks (the poll thread runs them with its lock held), in `start` between
/// `avahi_threaded_poll_lock`/`unlock`, or in `shutDown` after `avahi_threaded_poll_stop` has
/// joined the poll thread. The owning `AvahiDiscovery` keeps the session alive (Avahi holds only
/// an unretained pointer to it as userdata) until `shutDown` has freed every Avahi object.
final class AvahiSession {
    private static let firstRetryMilliseconds: UInt32 = 1000
    private static let maxRetryMilliseconds: UInt32 = 30_000
    private static let maxResolveRetryMilliseconds: UInt32 = 60_000
    /// Renames tried in a row when the name is taken locally before giving up until the retry.
    private static let maxLocalRenames = 20
    /// Longest host or service name accepted from the network (a DNS name is at most 255 bytes).
    private static let maxNameBytes = 255

    private let poll: OpaquePointer
    private let pollAPI: UnsafePointer<AvahiPoll>
    private let advertisement: Advertisement
    private let emit: @Sendable (DiscoveryEvent) -> Void
    private let log: @Sendable (String) -> Void

    /// The name we publish: the requested one, or an alternative after collisions.
    private var serviceName: String
    private var client: OpaquePointer?
    private var group: OpaquePointer?
    private var browser: OpaquePointer?
    private var resolvers: [ServiceInstance: OpaquePointer] = [:]
    private var instanceByResolver: [OpaquePointer: ServiceInstance] = [:]
    /// Resolutions that failed in a row, by instance, and when each is tried again.
    private var resolveFailures: [ServiceInstance: Int] = [:]
    private var resolveRetryDue: [ServiceInstance: timeval] = [:]
    private var resolveRetryTimer: OpaquePointer?
    private var table: PeerTable
    private var lastState: DiscoveryState?
    /// A failure was reported and the client will be replaced when `retryTimer` fires; until
    /// then callbacks from the old client are ignored.
    private var awaitingReconnect = false
    private var retryTimer: OpaquePointer?
    private var retryMilliseconds = firstRetryMilliseconds

    private init(poll: OpaquePointer, advertisement: Advertisement, log: @escaping @Sendable (String) -> Void,
                 emit: @escaping @Sendable (DiscoveryEvent) -> Void) {
        self.poll = poll
        self.pollAPI = avahi_threaded_poll_get(poll)
        self.advertisement = advertisement
        self.log = log
        self.emit = emit
        self.serviceName = advertisement.serviceName
        self.table = PeerTable(ownDeviceID: advertisement.deviceID)
    }

    /// Starts the poll thread and connects; `nil` (after reporting why) if no thread could start.
    static func start(advertisement: Advertisement, log: @escaping @Sendable (String) -> Void,
                      emit: @escaping @Sendable (DiscoveryEvent) -> Void) -> AvahiSession? {
        emit(.state(.starting))
        guard let poll = avahi_threaded_poll_new() else {
            emit(.state(.unavailable(reason: AvahiProblem.noEventThread.reason)))
            return nil
        }
        let session = AvahiSession(poll: poll, advertisement: advertisement, log: log, emit: emit)
        session.lastState = .starting
        guard avahi_threaded_poll_start(poll) == 0 else {
            avahi_threaded_poll_free(poll)
            emit(.state(.unavailable(reason: AvahiProblem.noEventThread.reason)))
            return nil
        }
        avahi_threaded_poll_lock(poll)
        session.connect()
        avahi_threaded_poll_unlock(poll)
        return session
    }

    /// Stops the poll thread, then frees every Avahi object. Call once, never from the poll thread.
    func shutDown() {
        avahi_threaded_poll_stop(poll)
        dropClient()
        for timer in [retryTimer, resolveRetryTimer].compactMap({ $0 }) { pollAPI.pointee.timeout_free(timer) }
        retryTimer = nil
        resolveRetryTimer = nil
        avahi_threaded_poll_free(poll)
    }

    // MARK: Client

    private var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func from(_ userdata: UnsafeMutableRawPointer?) -> AvahiSession {
        Unmanaged<AvahiSession>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// Creates the client. With `AVAHI_CLIENT_NO_FAIL` a missing daemon is not an error: the
    /// client waits in `CONNECTING` and Avahi tells us when the daemon appears. It calls back
    /// from inside `avahi_client_new`, so everything it uses is set up before.
    private func connect() {
        awaitingReconnect = false
        var error: Int32 = 0
        let created = avahi_client_new(pollAPI, AVAHI_CLIENT_NO_FAIL, { client, state, userdata in
            AvahiSession.from(userdata).clientChanged(client, state)
        }, userdata, &error)
        guard let created else {
            fail(.clientNotCreated(error: error), retryAfter: nextBackoff())
            return
        }
        client = created
    }

    /// Frees the client; Avahi frees its entry group, browser and resolvers with it.
    private func dropClient() {
        resolvers = [:]
        instanceByResolver = [:]
        resolveFailures = [:]
        resolveRetryDue = [:]
        armResolveRetryTimer()
        browser = nil
        group = nil
        if let client { avahi_client_free(client) }
        client = nil
    }

    private func clientChanged(_ changed: OpaquePointer?, _ state: AvahiClientState) {
        guard let changed, !awaitingReconnect else { return }
        client = changed
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            startBrowsing(changed)
            publish(changed)
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            // Avahi is (re)registering our host name, after a host name collision for example;
            // withdraw the service and publish it again once the server is running.
            if let group { avahi_entry_group_reset(group) }
            startBrowsing(changed)
            setState(.starting)
        case AVAHI_CLIENT_CONNECTING:
            setState(.unavailable(reason: AvahiProblem.daemonNotRunning.reason))
        case AVAHI_CLIENT_FAILURE:
            // The client is dead (the daemon or the bus went away). It is replaced from a timer,
            // because freeing it inside its own callback is not allowed.
            let error = avahi_client_errno(changed)
            if error == Int32(AVAHI_ERR_DISCONNECTED) {
                fail(.daemonNotRunning, retryAfter: 0)
            } else {
                fail(.failed(action: "talk to the Avahi daemon", code: error), retryAfter: nextBackoff())
            }
        default:
            break
        }
    }

    /// Reports `problem`, forgets every peer, and replaces the client after a delay.
    private func fail(_ problem: AvahiProblem, retryAfter milliseconds: UInt32) {
        awaitingReconnect = true
        emit(table.removeAll())
        setState(.unavailable(reason: problem.reason))
        var when = timeval()
        avahi_elapse_time(&when, milliseconds, 0)
        if let retryTimer {
            pollAPI.pointee.timeout_update(retryTimer, &when)
        } else {
            retryTimer = pollAPI.pointee.timeout_new(pollAPI, &when, { _, userdata in
                AvahiSession.from(userdata).reconnect()
            }, userdata)
        }
    }

    private func reconnect() {
        dropClient()
        connect()
    }

    /// 1 s, 2 s, 4 s … up to 30 s between retries while Avahi keeps failing; reset once published.
    private func nextBackoff() -> UInt32 {
        defer { retryMilliseconds = min(retryMilliseconds * 2, Self.maxRetryMilliseconds) }
        return retryMilliseconds
    }

    // MARK: Publishing

    private func publish(_ client: OpaquePointer) {
        if group == nil {
            group = avahi_entry_group_new(client, { group, state, userdata in
                AvahiSession.from(userdata).groupChanged(group, state)
            }, userdata)
            guard group != nil else {
                fail(.failed(action: "create an entry group", code: avahi_client_errno(client)), retryAfter: nextBackoff())
                return
            }
        }
        guard let group, avahi_entry_group_is_empty(group) != 0 else { return }
        for _ in 0..<Self.maxLocalRenames {
            let added = addService(to: group)
            if added == Int32(AVAHI_ERR_COLLISION) {
                // Another program on this host already uses the name.
                rename()
                continue
            }
            let result = added == 0 ? avahi_entry_group_commit(group) : added
            if result != 0 {
                fail(.failed(action: "publish the service", code: result), retryAfter: nextBackoff())
            }
            return
        }
        fail(.failed(action: "find a free service name", code: Int32(AVAHI_ERR_COLLISION)), retryAfter: nextBackoff())
    }

    private func addService(to group: OpaquePointer) -> Int32 {
        var txt: UnsafeMutablePointer<AvahiStringList>?
        // avahi_string_list_add prepends, so add the entries back to front.
        for entry in advertisement.txtEntries.reversed() { txt = avahi_string_list_add(txt, entry) }
        defer { avahi_string_list_free(txt) }
        return avahi_entry_group_add_service_strlst(
            group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
            serviceName, Advertisement.serviceType, nil, nil, advertisement.port, txt)
    }

    private func groupChanged(_ changed: OpaquePointer?, _ state: AvahiEntryGroupState) {
        guard let changed, !awaitingReconnect else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            retryMilliseconds = Self.firstRetryMilliseconds
            setState(.running(serviceName: serviceName))
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Another host on the network has the name: take the alternative and publish again.
            rename()
            avahi_entry_group_reset(changed)
            setState(.starting)
            if let client { publish(client) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = avahi_client_errno(avahi_entry_group_get_client(changed))
            fail(.failed(action: "publish the service", code: error), retryAfter: nextBackoff())
        default:
            break
        }
    }

    /// `name` → `name #2` → `name #3` …, as Avahi proposes (it keeps the label within 63 bytes).
    private func rename() {
        guard let alternative = avahi_alternative_service_name(serviceName) else { return }
        let taken = serviceName
        serviceName = String(cString: alternative)
        avahi_free(alternative)
        log("the service name \"\(taken)\" is already used on the network; publishing as \"\(serviceName)\"")
    }

    // MARK: Browsing

    private func startBrowsing(_ client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi_service_browser_new(
            client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), Advertisement.serviceType,
            nil, AvahiLookupFlags(0), { _, interface, ipProtocol, event, name, _, domain, _, userdata in
                AvahiSession.from(userdata).browserEvent(interface, ipProtocol, event, name, domain)
            }, userdata)
        if browser == nil {
            fail(.failed(action: "browse for peers", code: avahi_client_errno(client)), retryAfter: nextBackoff())
        }
    }

    private func browserEvent(_ interface: AvahiIfIndex, _ ipProtocol: AvahiProtocol, _ event: AvahiBrowserEvent,
                              _ name: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?) {
        guard !awaitingReconnect, let client else { return }
        switch event {
        case AVAHI_BROWSER_NEW:
            // Our own service is recognised by its TXT device id (in `PeerTable`), not by
            // AVAHI_LOOKUP_RESULT_OUR_OWN: that flag is decided once, by name, so during a name
            // collision it also marks the other device's service and we would never see it.
            guard let instance = Self.instance(interface, ipProtocol, name, domain),
                  table.appeared(instance) else { return }
            startResolving(instance)
        case AVAHI_BROWSER_REMOVE:
            guard let instance = Self.instance(interface, ipProtocol, name, domain) else { return }
            stopResolving(instance)
            emit(table.disappeared(instance))
        case AVAHI_BROWSER_FAILURE:
            fail(.failed(action: "browse for peers", code: avahi_client_errno(client)), retryAfter: nextBackoff())
        default:
            break
        }
    }

    /// Opens a resolver for `instance`. Kept open, it reports again whenever the service's data
    /// changes; if it gives up, it is retried later (see `resolverEvent`).
    ///
    /// The address family asked for is the instance's own: IPv4 sightings resolve to the A record
    /// and IPv6 ones to the AAAA record, so a peer gets both. (Asking for either would return
    /// whichever record came first: Avahi also publishes AAAA records over IPv4.)
    private func startResolving(_ instance: ServiceInstance) {
        guard let client else { return }
        let resolver = instance.name.withCString { name in
            instance.domain.withCString { domain in
                avahi_service_resolver_new(
                    client, instance.interface, instance.ipProtocol, name, Advertisement.serviceType, domain,
                    instance.ipProtocol, AvahiLookupFlags(0),
                    { resolver, _, _, event, _, _, _, host, address, port, txt, _, userdata in
                        AvahiSession.from(userdata).resolverEvent(resolver, event, host, address, port, txt)
                    }, userdata)
            }
        }
        guard let resolver else {
            retryResolvingLater(instance)
            return
        }
        resolvers[instance] = resolver
        instanceByResolver[resolver] = instance
    }

    private func stopResolving(_ instance: ServiceInstance) {
        if let resolver = resolvers.removeValue(forKey: instance) {
            instanceByResolver[resolver] = nil
            avahi_service_resolver_free(resolver)
        }
        resolveFailures[instance] = nil
        resolveRetryDue[instance] = nil
        armResolveRetryTimer()
    }

    private func resolverEvent(_ resolver: OpaquePointer?, _ event: AvahiResolverEvent,
                               _ host: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?,
                               _ port: UInt16, _ txt: UnsafeMutablePointer<AvahiStringList>?) {
        guard !awaitingReconnect, let resolver, let instance = instanceByResolver[resolver] else { return }
        switch event {
        case AVAHI_RESOLVER_FOUND:
            resolveFailures[instance] = nil
            let resolution = Resolution(
                hostName: Self.boundedString(host) ?? "", address: Self.peerAddress(address, interface: instance.interface),
                port: port, txt: TXTRecord(entries: Self.txtEntries(txt)))
            emit(table.resolved(instance, resolution))
        default:
            // AVAHI_RESOLVER_FAILURE, usually a timeout: the host did not answer (lost packets,
            // a link that just came up). The browser still lists the service, so try again
            // later. Freeing a resolver from its own callback is Avahi's documented use.
            let error = client.map { String(cString: avahi_strerror(avahi_client_errno($0))) } ?? "unknown error"
            resolvers[instance] = nil
            instanceByResolver[resolver] = nil
            avahi_service_resolver_free(resolver)
            emit(table.failedToResolve(instance))
            let delay = retryResolvingLater(instance)
            log("could not resolve \"\(instance.name)\" (interface \(instance.interface), \(Self.protocolName(instance.ipProtocol))): \(error); retrying in \(delay / 1000) s")
        }
    }

    /// 1 s, 2 s, 4 s … up to a minute after each failure in a row, while the browser lists it.
    /// Returns the delay in milliseconds.
    @discardableResult
    private func retryResolvingLater(_ instance: ServiceInstance) -> UInt32 {
        let failures = (resolveFailures[instance] ?? 0) + 1
        resolveFailures[instance] = failures
        let delay = min(Self.firstRetryMilliseconds << min(failures - 1, 6), Self.maxResolveRetryMilliseconds)
        var due = timeval()
        avahi_elapse_time(&due, delay, 0)
        resolveRetryDue[instance] = due
        armResolveRetryTimer()
        return delay
    }

    /// Points the one resolve-retry timer at the earliest due retry, or disarms it.
    private func armResolveRetryTimer() {
        var earliest = resolveRetryDue.values.min { first, second in
            var (first, second) = (first, second)
            return avahi_timeval_compare(&first, &second) < 0
        }
        if let resolveRetryTimer {
            if earliest == nil {
                pollAPI.pointee.timeout_update(resolveRetryTimer, nil)
            } else {
                pollAPI.pointee.timeout_update(resolveRetryTimer, &earliest!)
            }
        } else if earliest != nil {
            resolveRetryTimer = pollAPI.pointee.timeout_new(pollAPI, &earliest!, { _, userdata in
                AvahiSession.from(userdata).resolveRetryTimerFired()
            }, userdata)
        }
    }

    private func resolveRetryTimerFired() {
        guard !awaitingReconnect else { return }
        let due = resolveRetryDue.filter { _, when in
            var when = when
            return avahi_age(&when) >= 0
        }.keys
        for instance in due {
            resolveRetryDue[instance] = nil
            startResolving(instance)
        }
        armResolveRetryTimer()
    }

    // MARK: Reporting

    private func emit(_ events: [DiscoveryEvent]) {
        for event in events { emit(event) }
    }

    private func setState(_ state: DiscoveryState) {
        guard state != lastState else { return }
        lastState = state
        emit(.state(state))
    }

    // MARK: Reading untrusted data from the network

    private static func protocolName(_ ipProtocol: AvahiProtocol) -> String {
        ipProtocol == AvahiProtocol(AVAHI_PROTO_INET6) ? "IPv6" : "IPv4"
    }

    private static func instance(_ interface: AvahiIfIndex, _ ipProtocol: AvahiProtocol,
                                 _ name: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?) -> ServiceInstance? {
        guard let name = boundedString(name), let domain = boundedString(domain) else { return nil }
        return ServiceInstance(interface: interface, ipProtocol: ipProtocol, name: name, domain: domain)
    }

    /// The C string as UTF-8 (invalid bytes repaired); `nil` if absent or longer than a DNS name.
    private static func boundedString(_ text: UnsafePointer<CChar>?) -> String? {
        guard let text else { return nil }
        let length = strnlen(text, maxNameBytes + 1)
        guard length <= maxNameBytes else { return nil }
        return text.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }

    private static func peerAddress(_ address: UnsafePointer<AvahiAddress>?, interface: AvahiIfIndex) -> IPAddress? {
        guard let address else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        guard avahi_address_snprint(&buffer, buffer.count, address) != nil else { return nil }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return IPAddress(numeric: text, interfaceIndex: interface)
    }

    /// At most `TXTRecord.maxEntries` raw strings, each at most 255 bytes (longer ones dropped).
    private static func txtEntries(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var entries: [[UInt8]] = []
        var node = list
        while let current = node, entries.count < TXTRecord.maxEntries {
            let size = avahi_string_list_get_size(current)
            if size <= TXTRecord.maxEntryBytes, let text = avahi_string_list_get_text(current) {
                entries.append(Array(UnsafeBufferPointer(start: text, count: size)))
            }
            node = avahi_string_list_get_next(current)
        }
        return entries
    }
}
