import Foundation
import Testing
import TestSupport

/// docs/web.md, "Threads and idle": after serving requests and an event stream, a daemon
/// with the web server on and no browser connected arms no timer and every thread waiting in
/// `epoll_wait` (libmicrohttpd's, libdispatch's) waits without a timeout: nothing wakes it.
@Suite(.serialized) struct WebIdleTests {
    @Test func aServedWebServerSleepsWithoutATimeout() async throws {
        try await offThePool {
            let scratch = try TemporaryDirectory()
            let daemon = try WebDaemon(name: "idle", root: scratch.path)
            try daemon.start()
            defer { daemon.stop() }
            let session = try daemon.login()
            _ = try daemon.rpc(session, "notes.create", ["title": "Quiet", "html": "<p>idle</p>"])
            _ = try daemon.rpc(session, "notes.search", ["query": "quie"])
            _ = try daemon.request("POST", "/api/rpc", body: "{}", session: "bad")
            _ = try daemon.request("GET", "/")
            do {
                let stream = try Connection(port: daemon.webPort)
                try stream.send(WebDaemon.requestText("GET", "/api/events", body: nil, session: session, host: "127.0.0.1:\(daemon.webPort)", origin: nil))
                #expect(try stream.readHead().status == 200)
                _ = try stream.nextChunk()
            }
            let pid = try #require(daemon.process?.pid)
            // The closed connections are noticed at once; wait for that (bounded), then check.
            let asleep = poll(seconds: 20, every: 50_000) { (try? Self.epollWaits(of: pid))?.allSatisfy { $0.timeout == -1 } == true }
            let waits = try Self.epollWaits(of: pid)
            #expect(asleep, "epoll_wait timeouts: \(waits)")
            #expect(!waits.isEmpty, "no thread waits in epoll_wait")
            #expect(try Self.armedTimers(of: pid).isEmpty)
            // The request-deadline thread has no request to wait for: it sleeps on its
            // semaphore without a timeout.
            let deadlineThreadAsleep = poll(seconds: 20, every: 50_000) { (try? Self.futexTimeout(of: pid, thread: "web-deadlines")) == 0 }
            #expect(deadlineThreadAsleep, "deadline thread futex timeout: \(String(describing: try? Self.futexTimeout(of: pid, thread: "web-deadlines")))")
        }
    }

    /// The timeout argument (a pointer; 0 for none) of the futex wait the thread named
    /// `thread` (its 15-character comm) is blocked in, or nil if it is not in one (x86-64
    /// futex is 202, the timeout its fourth argument).
    static func futexTimeout(of pid: pid_t, thread name: String) throws -> UInt64? {
        for thread in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .newlines) == name else { continue }
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/syscall", encoding: .utf8) else { return nil }
            let fields = text.split(separator: " ")
            guard fields.first == "202", fields.count > 4 else { return nil }
            return UInt64(fields[4].dropFirst(2), radix: 16)
        }
        return nil
    }

    /// Threads blocked in `epoll_wait`/`epoll_pwait` (x86-64 numbers 232 and 281) and their
    /// timeout argument, from /proc/PID/task/TID/syscall (proc(5)).
    static func epollWaits(of pid: pid_t) throws -> [(thread: String, timeout: Int32)] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { thread in
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/syscall", encoding: .utf8) else { return nil }
            let fields = text.split(separator: " ")
            guard let number = fields.first.flatMap({ Int($0) }), number == 232 || number == 281, fields.count > 4,
                  let raw = UInt64(fields[4].dropFirst(2), radix: 16) else { return nil }
            return (thread, Int32(truncatingIfNeeded: raw))
        }
    }

    static func armedTimers(of pid: pid_t) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { descriptor in
            guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")) == "anon_inode:[timerfd]" else { return nil }
            let info = try String(contentsOfFile: "/proc/\(pid)/fdinfo/\(descriptor)", encoding: .utf8)
            let value = info.split(separator: "\n").first { $0.hasPrefix("it_value:") }
            return value == "it_value: (0, 0)" ? nil : "fd \(descriptor): \(value ?? "no it_value")"
        }
    }
}
