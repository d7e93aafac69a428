/// Failed message-1 attempts per source address (docs/security.md, "Cheap refusals"): after
/// `limit` within `window`, connections from the address are refused at accept until the
/// window has room again. Bookkeeping only, given the time, so its rules are tested without
/// waiting on a clock.
struct HandshakeFailures {
    let limit: Int
    let window: Duration
    /// Addresses remembered at most; beyond this the stalest is forgotten.
    let addresses: Int
    /// Per address, when its recent attempts failed (oldest first).
    private var times: [String: [ContinuousClock.Instant]] = [:]
    /// Addresses whose refusal was reported and whose failures have not all aged out since:
    /// an attacker that retries whenever the window has room again is reported once, not
    /// at every room made.
    private var reported: Set<String> = []

    init(limit: Int, window: Duration, addresses: Int) {
        self.limit = limit
        self.window = window
        self.addresses = addresses
    }

    /// Whether `host` used up its attempts within the window at `now` (older ones forgotten).
    mutating func isRefused(_ host: String, now: ContinuousClock.Instant) -> Bool {
        guard var failures = times[host] else { return false }
        let horizon = now.advanced(by: .zero - window)
        failures.removeAll { $0 <= horizon }
        guard !failures.isEmpty else {
            forget(host)
            return false
        }
        times[host] = failures
        return failures.count >= limit
    }

    /// Records that an attempt from `host` failed at `now`; true when this failure starts
    /// refusing it (to be reported: once until all its failures age out).
    mutating func record(_ host: String, now: ContinuousClock.Instant) -> Bool {
        _ = isRefused(host, now: now)
        times[host, default: []].append(now)
        if times.count > addresses, let stalest = times.min(by: { ($0.value.last ?? now) < ($1.value.last ?? now) })?.key {
            forget(stalest)
        }
        guard (times[host]?.count ?? 0) >= limit else { return false }
        return reported.insert(host).inserted
    }

    private mutating func forget(_ host: String) {
        times[host] = nil
        reported.remove(host)
    }
}
