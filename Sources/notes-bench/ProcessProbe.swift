import Foundation

/// What /proc says about a running process: memory, context switches and CPU time.
enum ProcessProbe {
    /// Resident memory from /proc/PID/status, in bytes.
    struct Memory {
        /// `VmRSS`: every resident page, shared library code included.
        var resident = 0
        /// `RssAnon`: heap, stacks, SQLite's page cache — memory this process alone costs.
        var anonymous = 0
        /// `RssFile`: resident pages of mapped files, mostly shared libraries' code.
        var file = 0
        /// `VmHWM`: the peak of `VmRSS`.
        var peak = 0
    }

    static func memory(_ pid: Int32) -> Memory {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func kibibytes(_ key: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
            return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0) * 1_024
        }
        return Memory(resident: kibibytes("VmRSS"), anonymous: kibibytes("RssAnon"), file: kibibytes("RssFile"), peak: kibibytes("VmHWM"))
    }

    /// What a process wrote, from /proc/PID/io.
    struct Writes {
        /// `wchar`: bytes handed to write system calls (the WAL, the database, sockets).
        var bytes = 0
        /// `syscw`: write system calls.
        var calls = 0
    }

    /// `pid` nil: this process.
    static func writes(_ pid: Int32? = nil) -> Writes {
        let io = (try? String(contentsOfFile: "/proc/\(pid.map(String.init) ?? "self")/io", encoding: .utf8)) ?? ""
        func value(_ key: String) -> Int {
            Int(io.split(separator: "\n").first { $0.hasPrefix(key + ": ") }?.split(separator: " ").last ?? "") ?? 0
        }
        return Writes(bytes: value("wchar"), calls: value("syscw"))
    }

    /// Voluntary context switches per thread: each is one time the thread went to sleep, so
    /// over a window the difference counts the thread's wake-ups (a thread that never wakes
    /// adds nothing).
    static func voluntarySwitches(_ pid: Int32) -> [Int32: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var result: [Int32: Int] = [:]
        for task in tasks {
            guard let tid = Int32(task),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
                  let count = Int(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "")
            else { continue }
            result[tid] = count
        }
        return result
    }

    /// User + system CPU time in milliseconds (fields 14 and 15 of /proc/PID/stat).
    static func cpuMilliseconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name, which may contain spaces: state is field 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks * 1_000 / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Wake-ups seen by counting voluntary context switches over `seconds`, summed over the
    /// threads alive at both ends (threads born or gone in between are reported apart).
    struct SwitchWindow {
        let wakeUps: Int
        let threads: Int
        let threadsChanged: Int
        let cpuMilliseconds: Double
    }

    static func countWakeUps(_ pids: [Int32], seconds: Int) -> [SwitchWindow] {
        let before = pids.map { (voluntarySwitches($0), cpuMilliseconds($0)) }
        sleep(UInt32(seconds))
        return zip(pids, before).map { pid, start in
            let after = voluntarySwitches(pid)
            let common = Set(start.0.keys).intersection(after.keys)
            let wakeUps = common.reduce(0) { $0 + after[$1]! - start.0[$1]! }
            return SwitchWindow(
                wakeUps: wakeUps, threads: after.count,
                threadsChanged: Set(start.0.keys).symmetricDifference(after.keys).count,
                cpuMilliseconds: cpuMilliseconds(pid) - start.1)
        }
    }

    /// Wake-ups seen by `strace -f -tt` attached for `seconds`: every system call a thread of
    /// the process makes is a line; lines closer than 50 ms together are one wake-up episode.
    struct TraceWindow {
        /// Seconds from the start of the window at which each episode began.
        let episodeStarts: [Double]
        /// The system calls of the busiest episode, for telling what woke.
        let sampleCalls: [String]

        var intervals: [Double] { zip(episodeStarts.dropFirst(), episodeStarts).map { $0 - $1 } }

        var shortestInterval: Double? { intervals.min() }

        /// The most common intervals, rounded to 0.1 s: "1.0 s × 58, 4.8 s × 2".
        var intervalSummary: String {
            let rounded = Dictionary(grouping: intervals) { ($0 * 10).rounded() / 10 }
            return rounded.sorted { ($0.value.count, $1.key) > ($1.value.count, $0.key) }.prefix(4)
                .map { "\(Measure.decimal($0.key, places: 1)) s × \($0.value.count)" }.joined(separator: ", ")
        }
    }

    /// Nil when strace could not attach (not installed, or ptrace not permitted: run as root
    /// or with kernel.yama.ptrace_scope=0).
    static func trace(_ pid: Int32, seconds: Int, output: String) throws -> TraceWindow? {
        let strace = Process()
        strace.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
        strace.arguments = ["-f", "-qq", "-tt", "-o", output, "-p", "\(pid)"]
        strace.standardError = FileHandle.nullDevice
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else { return nil }
        try strace.run()
        // Attaching stops every thread once; what it prints in the first half second is that.
        let settle = 0.5
        usleep(UInt32(settle * 1_000_000))
        let start = Date()
        sleep(UInt32(seconds))
        guard strace.isRunning else { return nil }
        strace.interrupt()
        strace.waitUntilExit()
        guard let text = try? String(contentsOfFile: output, encoding: .utf8), !text.isEmpty else { return nil }
        let midnight = Calendar.current.startOfDay(for: start).timeIntervalSince1970
        let windowStart = start.timeIntervalSince1970 - midnight
        var calls: [(time: Double, call: String)] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            guard fields.count == 3 else { continue }
            let clock = fields[1].split(separator: ":").compactMap { Double($0) }
            guard clock.count == 3 else { continue }
            let time = clock[0] * 3_600 + clock[1] * 60 + clock[2] - windowStart
            guard time >= 0, time <= Double(seconds) else { continue }
            // "<... epoll_wait resumed>": the call that returned is the second word.
            let text = fields[2].hasPrefix("<... ") ? fields[2].dropFirst(5) : fields[2]
            calls.append((time, String(text.prefix { $0 != "(" && $0 != " " })))
        }
        calls.sort { $0.time < $1.time }
        var starts: [Double] = []
        var episodes: [[String]] = []
        var last = -1.0
        for call in calls {
            if starts.isEmpty || call.time - last > 0.05 {
                starts.append(call.time)
                episodes.append([])
            }
            episodes[episodes.count - 1].append(call.call)
            last = call.time
        }
        let busiest = episodes.max { $0.count < $1.count } ?? []
        return TraceWindow(episodeStarts: starts, sampleCalls: busiest)
    }
}
