#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Leveled logging to stderr, in the form journald reads (docs/systemd.md). Safe to use from any
/// thread: whole lines are written under a lock, so lines from threads never interleave.
final class Log: Sendable {
    /// How each line starts.
    enum Style: Hashable, Sendable {
        /// `<6>message`: the syslog priority as sd-daemon.h's `SD_INFO` prefix; journald
        /// strips it, stores the priority and adds its own timestamp.
        case journal
        /// `2024-05-06T14:03:07.123+02:00 info: message`, for a terminal or a file.
        case timestamped

        /// `.journal` when stderr is the stream systemd connected to the journal:
        /// `$JOURNAL_STREAM` is `DEVICE:INODE` of that stream, and it must match stderr's, or
        /// stderr was redirected elsewhere by a child of the service (systemd.exec(5)).
        static func detect(journalStream: String?, standardError: (device: UInt64, inode: UInt64)?) -> Style {
            guard let journalStream, let standardError else { return .timestamped }
            let parts = journalStream.split(separator: ":")
            guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .timestamped }
            return (device, inode) == standardError ? .journal : .timestamped
        }
    }

    let level: LogLevel
    let style: Style
    private let output: Mutex<@Sendable (String) -> Void>

    /// `output` receives whole lines, each ending in `\n`, one call at a time.
    init(level: LogLevel, style: Style, output: @escaping @Sendable (String) -> Void) {
        self.level = level
        self.style = style
        self.output = Mutex(output)
    }

    /// A log on file descriptor 2, in the style `$JOURNAL_STREAM` calls for.
    static func standardError(level: LogLevel, environment: [String: String]) -> Log {
        var status = stat()
        let identity = fstat(2, &status) == 0 ? (device: UInt64(status.st_dev), inode: UInt64(status.st_ino)) : nil
        let style = Style.detect(journalStream: environment["JOURNAL_STREAM"], standardError: identity)
        return Log(level: level, style: style) { line in writeAll(line, to: 2) }
    }

    func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// Writes `message` when `level` is enabled; `message` is not evaluated otherwise.
    func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        guard isEnabled(level) else { return }
        let text = Self.format(message(), level: level, style: style, timestamp: style == .journal ? "" : Self.localTimestamp())
        output.withLock { $0(text) }
    }

    func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    func notice(_ message: @autoclosure () -> String) { log(.notice, message()) }
    func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    func error(_ message: @autoclosure () -> String) { log(.error, message()) }

    /// The text written for `message`: every line of it prefixed (journald splits entries
    /// at newlines, so a multi-line message keeps its priority on each), ending in `\n`.
    static func format(_ message: String, level: LogLevel, style: Style, timestamp: String) -> String {
        let prefix = switch style {
        case .journal: "<\(level.syslogPriority)>"
        case .timestamped: "\(timestamp) \(level.rawValue): "
        }
        var text = ""
        for line in message.split(separator: "\n", omittingEmptySubsequences: false) {
            text += prefix + line + "\n"
        }
        return text
    }

    /// ISO 8601 local time with milliseconds and the UTC offset: `2024-05-06T14:03:07.123+02:00`.
    static func localTimestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var local = tm()
        var seconds = now.tv_sec
        localtime_r(&seconds, &local)
        return formatTimestamp(local, milliseconds: Int(now.tv_nsec / 1_000_000))
    }

    static func formatTimestamp(_ time: tm, milliseconds: Int) -> String {
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let offset = time.tm_gmtoff / 60
        let sign = offset < 0 ? "-" : "+"
        return "\(pad(Int(time.tm_year) + 1900, 4))-\(pad(Int(time.tm_mon) + 1, 2))-\(pad(Int(time.tm_mday), 2))"
            + "T\(pad(Int(time.tm_hour), 2)):\(pad(Int(time.tm_min), 2)):\(pad(Int(time.tm_sec), 2)).\(pad(milliseconds, 3))"
            + "\(sign)\(pad(abs(offset) / 60, 2)):\(pad(abs(offset) % 60, 2))"
    }

    /// `write(2)` until all of `text` is out; a full or closed stderr drops the rest
    /// (logging must never stop the daemon).
    private static func writeAll(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
