import Control
import Foundation

/// A 100,000-note library on one real release daemon, built the way a person would build it:
/// `notesctl import` of generated `.html` files (docs/benchmarks.md, "`library`"). Then what
/// must not grow with it: listing, start-up, idle memory; and the initial sync of the whole
/// library to an empty device paired beforehand (issue 18 sets its target).
enum LibraryBench {
    enum Target {
        static let importTotal = 60_000.0
        /// "The last 10,000 no slower than the first", with room for the shared machine's noise.
        static let importGrowth = 1.10
        static let list = 50.0
        /// notes.search with 100,000 notes (issue 14).
        static let search = 30.0
        static let ready = 300.0
        static let idleResident = 40 * 1_000_000
    }

    static let notes = 100_000
    static let partSize = 10_000
    static let pageSize = 100

    static func run() throws {
        let binary = try notesdBinary()
        let notesctl = URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("notesctl").path
        guard FileManager.default.isExecutableFile(atPath: notesctl) else {
            throw BenchError("no notesctl next to notes-bench (\(notesctl)); build it with `swift build -c release --product notesctl`")
        }
        let temporary = NSTemporaryDirectory()
        Conditions.print([
            "one release notesd (\(binary)), --no-mdns, log level info; a second one paired with it beforehand, for the initial sync",
            "data directories under \(temporary) (\(Conditions.filesystem(of: temporary))); synchronous=FULL",
            "library: \(Measure.count(notes)) generated notes (~1.5 KB of HTML each) as .html files in \(notes / partSize) folders of \(Measure.count(partSize)), imported with `notesctl import`, one folder per run",
        ])
        var table = Table(["figure", "value", "target", "verdict", "how / detail"])
        let scratch = try ScratchDirectory("notes-bench-library")
        let alpha = try BenchDaemon(name: "alpha", in: scratch, binary: binary)
        let bravo = try BenchDaemon(name: "bravo", in: scratch, binary: binary)
        let proxy = try ByteCountingProxy(targetPort: alpha.port)
        defer {
            bravo.stop()
            alpha.stop()
            proxy.stop()
        }

        progress("pairing two empty devices")
        try alpha.start()
        try bravo.start()
        let invite = try alpha.client().call(ControlMethods.Invite.self)
        _ = try bravo.client().call(ControlMethods.Join.self, JoinParams(code: invite.code, address: proxy.address), timeout: .seconds(70))
        try Household.waitCaughtUp(bravo)
        bravo.stop()

        progress("writing \(Measure.count(notes)) notes as files")
        let files = try scratch.directory("files")
        let htmlBytes = try writeLibrary(into: files)

        // MARK: import, one folder of 10,000 per notesctl run
        var partTimes: [Double] = []
        var partCPU: [Double] = []
        for part in 0..<(notes / partSize) {
            progress("notesctl import, part \(part + 1) of \(notes / partSize) (load \(Conditions.loadAverage))")
            let cpuBefore = ProcessProbe.cpuMilliseconds(alpha.pid)
            let (_, elapsed) = try Measure.once { try runNotesctl(notesctl, socket: alpha.socketPath, ["import", files + "/" + partName(part)]) }
            partTimes.append(elapsed)
            partCPU.append(ProcessProbe.cpuMilliseconds(alpha.pid) - cpuBefore)
        }
        // The import leaves its notes to the search index, filled right after it ends.
        let importEnded = ContinuousClock.now
        let indexCPUBefore = ProcessProbe.cpuMilliseconds(alpha.pid)
        let indexed = try Household.waitIndexed(alpha)
        let indexCPU = ProcessProbe.cpuMilliseconds(alpha.pid) - indexCPUBefore
        let held = try alpha.client().call(ControlMethods.Status.self).noteCount
        guard held == notes else { throw BenchError("after the import alpha holds \(held) notes, not \(notes)") }
        let total = partTimes.reduce(0, +)
        let growth = partTimes[partTimes.count - 1] / partTimes[0]
        table.add([
            "notesctl import, \(Measure.count(notes)) notes", Measure.ms(total), "≤ 60 s", Verdict.of(total <= Target.importTotal),
            "\(Measure.bytes(htmlBytes)) HTML; \(Measure.count(Int(Double(notes) / total * 1_000))) notes/s; notesctl sends notes.createMany batches, one transaction each; daemon CPU \(Measure.ms(partCPU.reduce(0, +)))",
        ])
        table.add([
            "import, last 10,000 ÷ first 10,000", Measure.decimal(growth) + "×", "≤ 1×", Verdict.of(growth <= Target.importGrowth),
            "per 10,000 (wall): \(partTimes.map { Measure.ms($0) }.joined(separator: ", ")); daemon CPU per 10,000: \(partCPU.map { Measure.ms($0) }.joined(separator: ", ")) (≤ \(Measure.decimal(Target.importGrowth))× counts as no slower: the machine is shared)",
        ])

        table.add([
            "import's end → all searchable", Measure.ms(Measure.milliseconds(indexed - importEnded)), "", "",
            "status polled until notesToIndex is gone: the notes an import leaves to the search index, indexed in steps after it (daemon CPU \(Measure.ms(indexCPU))); search below runs on the whole index",
        ])

        // MARK: listing
        progress("listing")
        let client = try alpha.client()
        var pageCount = 0
        let pageTimes = try Measure.repeatedly(runs: 20) {
            pageCount = try client.call(ControlMethods.NotesList.self, NotesListParams(limit: pageSize)).count
        }
        let page = Measure.percentile(pageTimes, 0.5)
        table.add([
            "notes.list, first page of \(pageSize)", Measure.ms(page), "≤ 50 ms", Verdict.of(page <= Target.list && pageCount == pageSize),
            "median of 20, p95 \(Measure.ms(Measure.percentile(pageTimes, 0.95))); ControlClient call → decoded answer; `limit` (and `after` for the next page) walk the list-order index",
        ])
        var nextCount = 0
        let nextTimes = try Measure.repeatedly(runs: 10) {
            let first = try client.call(ControlMethods.NotesList.self, NotesListParams(folder: "Folder 05", limit: pageSize))
            nextCount = try client.call(ControlMethods.NotesList.self, NotesListParams(folder: "Folder 05", limit: pageSize, after: first.last.map(NotesListAfter.init))).count
        }
        table.add([
            "notes.list, 2 pages of \(pageSize) of one folder", Measure.ms(Measure.percentile(nextTimes, 0.5)), "", "",
            "median of 10; folder \"Folder 05\" (10,000 notes), first page and the page after it (\(nextCount) notes)",
        ])
        var fullCount = 0
        let fullTimes = try Measure.repeatedly(runs: 3, warmUp: 0) {
            fullCount = try client.listEveryNote(NotesListParams()).count
        }
        table.add([
            "notes.list, every note, pages of \(Measure.count(ControlClient.notesListPageSize))", Measure.ms(Measure.percentile(fullTimes, 0.5)), "", "",
            "median of 3 (\(fullTimes.map { Measure.ms($0) }.joined(separator: ", "))); \(Measure.count(fullCount)) summaries (ControlClient.listEveryNote, as notesctl ls): grows with the library by nature",
        ])
        do {
            let (notes, elapsed) = try Measure.once { try client.call(ControlMethods.NotesList.self, NotesListParams(), timeout: .seconds(120)) }
            table.add(["notes.list, every note in one answer", Measure.ms(elapsed), "", "", "\(Measure.count(notes.count)) summaries, once"])
        } catch {
            table.add(["notes.list, every note in one answer", "fails", "", "", "\(error)"])
        }
        let lsTimes = try Measure.repeatedly(runs: 1, warmUp: 0) {
            try runNotesctl(notesctl, socket: alpha.socketPath, ["ls", "--json"])
        }
        table.add([
            "notesctl ls --json", Measure.ms(Measure.percentile(lsTimes, 0.5)), "", "",
            "once, process spawn → exit, output to /dev/null; every note (issue 12 measured 755 ms at 30,000 before)",
        ])
        // MARK: search
        progress("search")
        let web = try WebClient.signIn(to: alpha)
        var query = 0
        let searchTimes = try Measure.repeatedly(runs: 80) {
            query += 1
            _ = try web.rpc("notes.search", #"{"query":"\#(WebBench.searchQueries[query % WebBench.searchQueries.count])","limit":50}"#)
        }
        web.close()
        let search = Measure.percentile(searchTimes, 0.5)
        table.add([
            "notes.search over HTTP (limit 50)", Measure.ms(search), "≤ 30 ms", Verdict.of(search <= Target.search),
            "median of 80, p95 \(Measure.ms(Measure.percentile(searchTimes, 0.95))); the web benchmark's \(WebBench.searchQueries.count) queries in turn (common words: a third of the notes match most)",
        ])
        let statusTimes = try Measure.repeatedly(runs: 20) { _ = try client.call(ControlMethods.Status.self) }
        table.add(["status", Measure.ms(Measure.percentile(statusTimes, 0.5)), "", "", "median of 20; noteCount is kept as notes are written, not counted"])
        var createSummary: NoteSummary?
        let createTimes = try Measure.repeatedly(runs: 50) {
            createSummary = try client.call(ControlMethods.NotesCreate.self, NoteCreateParams(title: "One more", html: "<p>text</p>", folder: "Folder 09"))
        }
        table.add([
            "notes.create at \(Measure.count(notes)) notes", Measure.ms(Measure.percentile(createTimes, 0.5)), "", "",
            "median of 50 (+3 warm-up), p95 \(Measure.ms(Measure.percentile(createTimes, 0.95))); into a folder by path, answered with its summary (\(createSummary?.folderPath ?? "?"))",
        ])

        // MARK: start-up and idle memory
        progress("restarts")
        var readies: [Double] = []
        for _ in 0..<5 {
            alpha.stop()
            readies.append(try alpha.start())
        }
        let ready = Measure.percentile(readies, 0.5)
        table.add([
            "start → READY, \(Measure.count(notes)) notes", Measure.ms(ready), "≤ 300 ms", Verdict.of(ready <= Target.ready),
            "median of 5 restarts (\(readies.map { Measure.ms($0) }.joined(separator: ", "))); spawn → READY=1 on NOTIFY_SOCKET",
        ])
        sleep(3)
        let memory = ProcessProbe.memory(alpha.pid)
        table.add([
            "idle RSS, restarted, 3 s after READY", Measure.bytes(memory.resident), "≤ 40 MB", Verdict.of(memory.resident <= Target.idleResident),
            "VmRSS: \(Measure.bytes(memory.anonymous)) anonymous (heap, page cache), \(Measure.bytes(memory.file)) mapped files; peak \(Measure.bytes(memory.peak))",
        ])

        // MARK: initial sync to the empty device
        progress("initial sync of \(Measure.count(notes)) notes to the paired empty device (load \(Conditions.loadAverage))")
        let expected = try alpha.client().call(ControlMethods.Status.self).noteCount
        proxy.resetCounts()
        let alphaCPU = ProcessProbe.cpuMilliseconds(alpha.pid)
        let spawned = ContinuousClock.now
        let bravoReady = try bravo.start()
        let done = try Household.waitCaughtUp(bravo, notes: expected, timeout: .seconds(900))
        let sync = Measure.milliseconds(done - spawned) - bravoReady
        let counts = proxy.counts
        let bravoMemory = ProcessProbe.memory(bravo.pid)
        table.add([
            "initial sync, \(Measure.count(expected)) notes", Measure.ms(sync), "issue 18", "",
            "bravo READY → holds all; CPU bravo \(Measure.ms(ProcessProbe.cpuMilliseconds(bravo.pid))), alpha \(Measure.ms(ProcessProbe.cpuMilliseconds(alpha.pid) - alphaCPU)); \(Measure.bytes(counts.toTarget + counts.fromTarget)) on the wire; bravo wrote \(Measure.bytes(ProcessProbe.writes(bravo.pid).bytes)); bravo's peak RSS \(Measure.bytes(bravoMemory.peak))",
        ])
        table.print()
        print("   load average at the end: \(Conditions.loadAverage)")
    }

    static func partName(_ part: Int) -> String { String(format: "part-%02d", part) }

    /// Writes the library as `part-NN/Folder NN/NNNNNN.html`: importing `part-NN` makes one
    /// folder of 10,000 notes. Returns the bytes of HTML and titles.
    private static func writeLibrary(into directory: String) throws -> Int {
        var bytes = 0
        for part in 0..<(notes / partSize) {
            let folder = directory + "/" + partName(part) + String(format: "/Folder %02d", part)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for (index, note) in LibraryGenerator.notes(partSize, seed: 1_000 + UInt64(part)).enumerated() {
                bytes += note.html.utf8.count + note.title.utf8.count
                let title = note.title.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                let page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>\(title)</title></head><body>\(note.html)</body></html>\n"
                let path = folder + String(format: "/%06d.html", part * partSize + index)
                guard FileManager.default.createFile(atPath: path, contents: Data(page.utf8)) else { throw BenchError("cannot write \(path)") }
            }
        }
        return bytes
    }

    /// Runs notesctl against `socket` with its output discarded; throws when it fails.
    private static func runNotesctl(_ binary: String, socket: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTESD_SOCKET"] = socket
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("notesctl \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)") }
    }
}

extension LibraryBench {
    /// Progress goes to stderr, so stdout holds only the table.
    private static func progress(_ message: String) {
        FileHandle.standardError.write(Data("   … \(message)\n".utf8))
    }
}
