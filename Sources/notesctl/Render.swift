import Control
import Foundation

/// Columns aligned by character count, two spaces apart; the last column is not padded.
struct TextTable {
    var header: [String]
    var rows: [[String]]

    func render() -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.indices.map { column in
                column == row.count - 1 ? row[column] : row[column].padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }
            .joined(separator: "  ")
            .replacing(/\s+$/, with: "")
        }
        .joined(separator: "\n")
    }
}

/// Times for people: relative when recent, the local date otherwise.
struct TimeText {
    var now: Date
    var timeZone: TimeZone = .current

    /// `just now`, `5 min ago`, `3 h ago`, `2 days ago`, then `2024-05-01`; future times as
    /// a local date and time.
    func relative(_ time: Timestamp) -> String {
        let seconds = now.timeIntervalSince(time.date)
        switch seconds {
        case ..<(-60): return local(time)
        case ..<60: return "just now"
        case ..<3600: return "\(Int(seconds / 60)) min ago"
        case ..<86_400: return "\(Int(seconds / 3600)) h ago"
        case ..<(7 * 86_400):
            let days = Int(seconds / 86_400)
            return days == 1 ? "1 day ago" : "\(days) days ago"
        default: return date(time)
        }
    }

    /// `2024-05-01 14:03`.
    func local(_ time: Timestamp) -> String { format(time, "yyyy-MM-dd HH:mm") }

    /// `14:03:07`, for event lines.
    func clock(_ time: Timestamp) -> String { format(time, "HH:mm:ss") }

    func date(_ time: Timestamp) -> String { format(time, "yyyy-MM-dd") }

    private func format(_ time: Timestamp, _ pattern: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = pattern
        return formatter.string(from: time.date)
    }

    /// `in 9 min`, for expiry times.
    func remaining(until time: Timestamp) -> String {
        let seconds = time.date.timeIntervalSince(now)
        if seconds <= 0 { return "expired" }
        if seconds < 60 { return "in \(Int(seconds)) s" }
        return "in \(Int((seconds / 60).rounded())) min"
    }
}

/// Human output for each result. Pure: `time` carries the clock and time zone.
struct Render {
    var time: TimeText

    static func truncate(_ text: String, to length: Int) -> String {
        let single = NoteText.collapsingWhitespace(text)
        return single.count <= length ? single : String(single.prefix(length - 1)) + "…"
    }

    func status(_ status: StatusResult) -> String {
        var lines: [String] = []
        let household = status.household.map { "household \($0.short) (\($0.deviceCount) device\($0.deviceCount == 1 ? "" : "s"))" }
            ?? "no household (removed; run `notesctl join CODE` to join one)"
        lines.append("notesd \(status.version) on \(status.device.name) (\(status.device.short)), \(household)")
        let discovery = status.discovery.state.rawValue + (status.discovery.reason.map { ": \($0)" } ?? "")
        let lag = status.counters.syncLagMs
        let lagText = lag.samples == 0 ? "no samples yet"
            : "p50 \(lag.p50.map(String.init) ?? "-") ms, p95 \(lag.p95.map(String.init) ?? "-") ms (\(lag.samples) sample\(lag.samples == 1 ? "" : "s"))"
        let counters = status.counters
        let details: [(String, String)] = [
            ("device id", status.device.id),
            ("listening", status.listen.isEmpty ? "not listening" : status.listen.joined(separator: ", ")),
            ("socket", status.controlSocket),
            ("data", status.dataDir),
            ("discovery", discovery),
            ("household key", status.household?.key.map(Self.householdKey) ?? "-"),
            ("notes", String(status.noteCount) + (status.notesToIndex.map { ", indexing \($0) for search (search misses them until then)" } ?? "")),
            ("started", time.relative(status.started)),
            ("entries", "\(counters.entriesSent) sent, \(counters.entriesReceived) received"),
            ("conflicts", "\(counters.conflictCopiesCreated) conflict copies created"),
            ("failures", "\(counters.failedConnections) failed connections"),
            ("sync lag", lagText),
            ("web", Self.web(status.web)),
        ]
        let width = details.map(\.0.count).max() ?? 0
        lines += details.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
        lines.append("")
        lines.append(status.peers.isEmpty ? "No peers yet: run `notesctl invite` here and `notesctl join` on another device." : peers(status.peers))
        return lines.joined(separator: "\n")
    }

    /// The household key line of `status`: its epoch and where rotation stands.
    static func householdKey(_ key: HouseholdKeyState) -> String {
        "epoch \(key.epoch)" + (key.previousKeysAccepted > 0 ? " (and \(key.previousKeysAccepted) older still accepted)" : "") + ": \(key.message)"
    }

    /// The web server line of `status`: where, and whether the port had to change.
    static func web(_ web: WebStatus?) -> String {
        guard let web, let listen = web.listen else { return "off (notesd runs with --no-web)" }
        var text = "http://\(listen)/"
        if web.fellBack { text += " (\(web.requested) was in use)" }
        text += ", \(web.sessions) session\(web.sessions == 1 ? "" : "s"), run `notesctl ui` to open"
        return text
    }

    func peers(_ peers: [PeerStatus]) -> String {
        TextTable(
            header: ["PEER", "NAME", "ADDRESS", "VERSION", "STATUS", "LAST SYNC", "BEHIND", "RETRIES", "ERROR"],
            rows: peers.map { peer in
                [
                    peer.short ?? "-", peer.name ?? "-", peer.address ?? "-", peer.version ?? "-", peer.status.rawValue,
                    peer.lastSync.map(time.relative) ?? "never", String(peer.entriesBehind), String(peer.retries),
                    peer.lastError.map { error in Self.truncate(error, to: 60) + (peer.lastErrorAt.map { " (\(time.relative($0)))" } ?? "") } ?? "",
                ]
            }
        ).render()
    }

    func devices(_ devices: [DeviceInfo]) -> String {
        TextTable(
            header: ["DEVICE", "NAME", "ADDED", "VERSION", "KEY", "STATE"],
            rows: devices.map { device in
                let state = device.revoked ? "removed" : device.isSelf ? "this device" : device.connected ? "connected" : "not connected"
                return [device.short, device.name, time.relative(device.added), device.version ?? "-", device.keyEpoch.map { "epoch \($0)" } ?? "-", state]
            }
        ).render()
    }

    func invite(_ invite: InviteResult) -> String {
        var lines = [
            "Invite code (valid until \(time.local(invite.expiresAt)), \(time.remaining(until: invite.expiresAt))):",
            "  \(invite.code)",
            "On the new device, run:",
        ]
        if let address = invite.addresses.first {
            lines.append("  notesctl join \(invite.code) --address \(address)")
            lines.append("(or without --address when both devices are on the same network)")
        } else {
            lines.append("  notesctl join \(invite.code)")
        }
        return lines.joined(separator: "\n")
    }

    func joined(_ result: JoinResult) -> String {
        // This device is a member once joined, even before the roster that says so syncs in.
        let names = result.devices.filter { !$0.revoked || $0.isSelf }.map(\.name).joined(separator: ", ")
        let count = result.household.deviceCount
        return "Joined household \(result.household.short) with \(count) device\(count == 1 ? "" : "s"): \(names)."
    }

    func connected(_ peer: PeerStatus) -> String {
        let who = peer.name.map { "\($0) (\(peer.short ?? "?"))" } ?? (peer.address ?? "the peer")
        return "\(who): \(peer.status.rawValue)" + (peer.lastError.map { " — \($0)" } ?? "")
    }

    /// `ls`: pinned notes marked with `*`.
    /// `search`: each hit, its snippet with the matched words in bold on a terminal, else
    /// between `[` `]`.
    func searchHits(_ hits: [SearchHit], bold: Bool = isatty(STDOUT_FILENO) == 1) -> String {
        guard !hits.isEmpty else { return "No notes match." }
        return hits.map { hit in
            let snippet = hit.snippet.replacingOccurrences(of: "\u{2}", with: bold ? "\u{1B}[1m" : "[")
                .replacingOccurrences(of: "\u{3}", with: bold ? "\u{1B}[0m" : "]")
                .replacingOccurrences(of: "\n", with: " ")
            let title = hit.note.title.isEmpty ? "(untitled)" : Self.truncate(hit.note.title, to: 60)
            return "\(hit.note.short)  \(title)\n    \(snippet)"
        }.joined(separator: "\n")
    }

    /// `ui --sessions`.
    func webSessions(_ sessions: [WebSessionInfo]) -> String {
        guard !sessions.isEmpty else { return "No browser is signed in; run `notesctl ui` to sign one in." }
        return TextTable(
            header: ["SESSION", "SIGNED IN", "LAST USED", "EXPIRES"],
            rows: sessions.map { [$0.id, time.relative($0.created), time.relative($0.lastUsed), time.relative($0.expires)] }
        ).render()
    }

    func notes(_ notes: [NoteSummary]) -> String {
        guard !notes.isEmpty else { return "No notes." }
        return TextTable(
            header: ["ID", "TITLE", "FOLDER", "TAGS", "MODIFIED"],
            rows: notes.map { note in
                [
                    note.short, (note.pinned ? "* " : "") + Self.truncate(note.title.isEmpty ? "(untitled)" : note.title, to: 50),
                    note.folderPath.isEmpty ? "-" : Self.truncate(note.folderPath, to: 30),
                    Self.truncate(note.tags.joined(separator: ","), to: 30), time.relative(note.modified),
                ]
            }
        ).render()
    }

    /// `conflicts`: each copy with the note it is the other version of.
    func conflicts(_ copies: [NoteSummary], originals: [String: NoteSummary]) -> String {
        guard !copies.isEmpty else { return "No conflict copies." }
        return TextTable(
            header: ["COPY", "TITLE", "OTHER VERSION OF", "CREATED"],
            rows: copies.map { copy in
                let original = copy.conflictOf.map { id in originals[id].map { "\($0.short) \(Self.truncate($0.title, to: 40))" } ?? id } ?? "-"
                return [copy.short, Self.truncate(copy.title, to: 50), original, time.relative(copy.created)]
            }
        ).render()
    }

    /// One changed note, e.g. after `new` or `pin`.
    func noteLine(_ verb: String, _ note: NoteSummary) -> String {
        "\(verb) \(note.short)  \(note.title.isEmpty ? "(untitled)" : note.title)"
    }

    func tags(_ note: NoteSummary) -> String {
        note.tags.isEmpty ? "\(note.short) has no tags." : "\(note.short)  \(note.tags.joined(separator: ", "))"
    }

    /// `show` without a format flag: details, a blank line, the text.
    func document(_ document: NoteDocument, atRevision revision: String? = nil) -> String {
        let note = document.summary
        var fields: [(String, String)] = [
            ("title", note.title),
            ("id", note.id),
        ]
        if let revision { fields.append(("revision", "\(revision) (`notesctl restore \(note.short) --to \(revision.prefix(12))` brings this version back)")) }
        fields += [
            ("folder", note.folderPath.isEmpty ? "Uncategorized" : note.folderPath),
        ]
        if !note.tags.isEmpty { fields.append(("tags", note.tags.joined(separator: ", "))) }
        if note.pinned { fields.append(("pinned", "yes")) }
        if let color = note.color { fields.append(("color", color)) }
        if note.trashed { fields.append(("trashed", "yes (notesctl restore \(note.short))")) }
        if let original = note.conflictOf { fields.append(("other version of", original)) }
        fields.append(("created", time.local(note.created)))
        fields.append(("modified", time.local(note.modified)))
        let width = fields.map(\.0.count).max() ?? 0
        let header = fields.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
        return (header + ["", document.body]).joined(separator: "\n")
    }

    func history(_ entries: [HistoryEntry]) -> String {
        guard !entries.isEmpty else { return "No history." }
        return TextTable(
            header: ["TIME", "DEVICE", "REVISION", "CHANGES", "TITLE"],
            rows: entries.map { entry in
                [
                    time.local(entry.time), entry.deviceName ?? entry.deviceShort ?? "unknown", String(entry.revision.prefix(12)),
                    Self.changeSummary(entry), entry.erased ? "(erased by a permanent delete)" : Self.truncate(entry.title, to: 40),
                ]
            }
        ).render()
    }

    /// The CHANGES column: what changed, and where a restore brought the content from.
    static func changeSummary(_ entry: HistoryEntry) -> String {
        let changes = entry.changes.map(\.rawValue).joined(separator: ",")
        guard let source = entry.restoredFrom else { return changes }
        return "restored from \(source.prefix(12))"
    }

    /// `log --patch`: each revision, then its blocks added (`+`) and removed (`-`), one line
    /// per line of block text.
    func historyWithPatches(_ entries: [HistoryEntry]) -> String {
        guard !entries.isEmpty else { return "No history." }
        return entries.map { entry in
            var lines = [
                "revision \(entry.revision)",
                "Date:   \(time.local(entry.time))  on \(entry.deviceName ?? entry.deviceShort ?? "an unknown device")",
                "Change: \(Self.changeSummary(entry))" + (entry.title.isEmpty ? "" : "  \"\(entry.title)\""),
            ]
            if entry.erased {
                lines.append("  (content erased by a permanent delete)")
            } else {
                for change in entry.patch ?? [] {
                    let text = change.text.isEmpty ? change.html : change.text
                    lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { "\(change.op.rawValue) \($0)" }
                }
            }
            return lines.joined(separator: "\n")
        }.joined(separator: "\n\n")
    }

    func backup(_ result: BackupResult, file: String?) -> String {
        let size = ByteCountFormatter.string(fromByteCount: result.bytes, countStyle: .file)
        var text = "Backed up to \(file ?? result.path ?? "?") (\(size), household \(result.household.prefix(8)), checked with integrity_check)."
        if !result.removed.isEmpty { text += "\nRemoved \(result.removed.count) older backup\(result.removed.count == 1 ? "" : "s")." }
        return text + "\nRestore it with notesd stopped: notesd --restore-backup \(file ?? result.path ?? "FILE")"
    }

    /// A purge the daemon refused because the note changed after it was read.
    func keptPurge(_ result: PurgeResult, note: NoteSummary) -> String {
        let devices = Array(Set(result.unseen.map { $0.deviceName ?? $0.deviceShort ?? "another device" })).sorted()
        let names = devices.isEmpty ? "another device" : devices.joined(separator: ", ")
        return "Kept \(note.short) \"\(note.title)\": it was changed on \(names) after you opened it. Nothing was deleted; look at `notesctl show \(note.short)` and purge again if you still want it gone."
    }

    func folders(_ folders: [FolderInfo]) -> String {
        guard !folders.isEmpty else { return "No folders." }
        return TextTable(
            header: ["FOLDER", "NOTES", "ID"],
            rows: folders.sorted { $0.path < $1.path }.map { [$0.path, String($0.noteCount), $0.short] }
        ).render()
    }

    func sync(_ result: SyncResult, waited: Bool) -> String {
        let connected = result.peers.filter(\.connected).count
        let summary = if result.peers.isEmpty {
            "No peers to sync with."
        } else if waited {
            result.caughtUp ? "Caught up with \(connected) connected peer\(connected == 1 ? "" : "s")." : "Not caught up yet."
        } else {
            "Sync requested with \(result.peers.count) peer\(result.peers.count == 1 ? "" : "s") (\(connected) connected)."
        }
        return result.peers.isEmpty ? summary : summary + "\n" + peers(result.peers)
    }

    /// One `watch` line: the time, what happened, and to what.
    func event(_ event: ControlEvent) -> String {
        let what = switch event.payload {
        case .noteChanged(let change):
            "note \(change.change.rawValue)  \(String(change.note.prefix(8)))  \(Self.truncate(change.title, to: 50))"
                + (change.origin == .remote ? "  (from \(change.deviceName ?? change.device.map { String($0.prefix(8)) } ?? "a peer"))" : "")
        case .peerConnected(let peer):
            "peer connected  \(peerName(peer.peer))"
        case .peerDisconnected(let peer):
            "peer disconnected  \(peerName(peer.peer))" + (peer.reason.map { "  (\($0))" } ?? "")
        case .syncProgress(let progress):
            "sync  \(progress.name) (\(progress.short))  \(progress.entriesBehind) behind, \(progress.entriesReceived) received, \(progress.entriesSent) sent"
        case .conflictCopyCreated(let copy):
            "conflict copy  \(String(copy.copy.prefix(8)))  \(Self.truncate(copy.title, to: 50))  of \(String(copy.note.prefix(8)))"
        case .unknown(let type):
            type
        }
        return time.clock(event.time) + "  " + what
    }

    private func peerName(_ peer: PeerStatus) -> String {
        [peer.name, peer.short.map { "(\($0))" }, peer.address.map { "at \($0)" }].compactMap { $0 }.joined(separator: " ")
    }
}
