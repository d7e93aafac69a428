import Foundation

/// What every table is printed with: the machine, the date, and the load it ran under
/// (the machine is shared, so the load average says how quiet it was).
enum Conditions {
    static var machine: String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let memory = ProcessInfo.processInfo.physicalMemory / 1_048_576
        return "\(ProcessInfo.processInfo.activeProcessorCount) × \(cpu), \(memory) MiB RAM, Linux \(kernel)"
    }

    static var date: String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: Date())
    }

    static var loadAverage: String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The filesystem that holds `path` (fsync costs differ wildly between a disk and tmpfs).
    static func filesystem(of path: String) -> String {
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        // The mount point that is the longest prefix of the path holds it.
        var holder: (device: String, point: String, type: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count > 2 else { continue }
            let point = fields[1]
            let prefix = point.hasSuffix("/") ? point : point + "/"
            guard resolved == point || resolved.hasPrefix(prefix), point.count >= (holder?.point.count ?? 0) else { continue }
            holder = (fields[0], point, fields[2])
        }
        guard let holder else { return "unknown filesystem" }
        return holder.type == "tmpfs" ? "tmpfs: fsync is free, figures flatter a disk" : "\(holder.type) on \(holder.device)"
    }

    /// Prints the lines every table starts with.
    static func print(_ details: [String]) {
        Swift.print("   machine: \(machine)")
        Swift.print("   date: \(date); load average at start: \(loadAverage)")
        for detail in details { Swift.print("   \(detail)") }
    }
}

/// A target from docs/benchmarks.md and whether a figure met it.
enum Verdict {
    static func of(_ met: Bool) -> String { met ? "PASS" : "MISS" }
}

/// A text table: a header row and rows.
struct Table {
    let columns: [String]
    private(set) var rows: [[String]] = []

    init(_ columns: [String]) { self.columns = columns }

    mutating func add(_ row: [String]) {
        precondition(row.count == columns.count, "a row of \(row.count) cells in a table of \(columns.count) columns")
        rows.append(row)
    }

    /// Columns right-aligned, except the first (names) and the last (free text), left-aligned.
    func print() {
        let widths = columns.indices.map { column in ([columns] + rows).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                switch column {
                case 0: return cell + padding
                case cells.count - 1: return cell
                default: return padding + cell
                }
            }.joined(separator: "   ")
        }
        Swift.print("   " + line(columns))
        Swift.print("   " + line(columns.indices.map { String(repeating: "-", count: widths[$0]) }))
        for row in rows { Swift.print("   " + line(row)) }
    }
}

/// Timing and formatting helpers shared by the benchmarks.
enum Measure {
    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
    }

    /// Milliseconds per run, after `warmUp` runs that are not counted.
    static func repeatedly(runs: Int, warmUp: Int = 3, _ body: () throws -> Void) rethrows -> [Double] {
        for _ in 0..<warmUp { try body() }
        let clock = ContinuousClock()
        return try (0..<runs).map { _ in milliseconds(try clock.measure(body)) }
    }

    /// Milliseconds that `body` took, with its result.
    static func once<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        let start = ContinuousClock.now
        let result = try body()
        return (result, milliseconds(ContinuousClock.now - start))
    }

    /// CPU time this process has used (all threads, user + system), in milliseconds. On a
    /// shared machine wall times swing with the load; CPU time says what the work cost.
    static func processCPUMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1_000 + Double(time.tv_nsec) / 1e6
    }

    /// CPU time of the calling thread (user + system), in milliseconds: one part of the work
    /// alone, whatever else the process does.
    static func threadCPUMilliseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1_000 + Double(time.tv_nsec) / 1e6
    }

    /// The nearest-rank percentile (`fraction` 0…1) of `values`.
    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * fraction).rounded(.up)) - 1))]
    }

    /// `12.34`: two decimals.
    static func decimal(_ value: Double, places: Int = 2) -> String { String(format: "%.\(places)f", value) }

    static func ms(_ value: Double) -> String { value >= 100 ? "\(Int(value.rounded())) ms" : decimal(value) + " ms" }

    static func bytes(_ count: Int) -> String {
        switch count {
        case ..<10_000: "\(count) B"
        case ..<10_000_000: decimal(Double(count) / 1_024, places: 1) + " KiB"
        default: decimal(Double(count) / 1_048_576, places: 1) + " MiB"
        }
    }

    static func count(_ value: Int) -> String {
        let digits = String(value)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return out
    }
}

/// A failure that ends one benchmark with a message saying what went wrong.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
