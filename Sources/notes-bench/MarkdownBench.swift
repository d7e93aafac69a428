import Control
import Foundation
import Markup

/// `notes-bench markdown`: `notesctl import` of a folder of 10,000 Markdown notes (20
/// folders; headings, nested lists, checklists, code, quotes, tables; a third with front
/// matter) into a real release notesd, timed from the command's start to its exit, against
/// the target of docs/benchmarks.md (≤ 5 s). Also the conversion alone, in-process.
enum MarkdownBench {
    static let noteCount = 10_000

    static func run() throws {
        let scratch = try ScratchDirectory("notes-bench-markdown")
        let folder = try scratch.directory("vault")
        var bytes = 0
        var texts: [String] = []
        for index in 0..<noteCount {
            let text = note(index)
            texts.append(text)
            bytes += text.utf8.count
            let directory = folder + "/Folder \(index % 20)"
            if index < 20 { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
            try text.write(toFile: directory + "/note \(index).md", atomically: false, encoding: .utf8)
        }

        let (_, conversion) = Measure.once { for text in texts { _ = MarkdownImport.blocks(FrontMatterBlock.split(text).body) } }

        let daemon = try BenchDaemon(name: "importer", in: scratch, binary: try notesdBinary())
        try daemon.start()
        defer { daemon.stop() }
        let notesctl = URL(fileURLWithPath: try notesdBinary()).deletingLastPathComponent().appendingPathComponent("notesctl").path
        guard FileManager.default.isExecutableFile(atPath: notesctl) else {
            throw BenchError("no notesctl next to notes-bench; build it with `swift build -c release --product notesctl`")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: notesctl)
        process.arguments = ["--socket", daemon.socketPath, "--json", "import", folder]
        let output = Pipe()
        process.standardOutput = output
        let daemonCPUBefore = ProcessProbe.cpuMilliseconds(daemon.pid)
        var before = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &before)
        let started = ContinuousClock.now
        try process.run()
        let report = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let elapsed = Measure.milliseconds(ContinuousClock.now - started)
        let daemonCPU = ProcessProbe.cpuMilliseconds(daemon.pid) - daemonCPUBefore
        var after = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &after)
        func milliseconds(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        // The daemon is a child too, but it has not exited, so only notesctl is counted here.
        let notesctlCPU = milliseconds(after.ru_utime) + milliseconds(after.ru_stime) - milliseconds(before.ru_utime) - milliseconds(before.ru_stime)
        guard process.terminationStatus == 0 else { throw BenchError("notesctl import exited \(process.terminationStatus)") }
        let imported = (try? JSONSerialization.jsonObject(with: report) as? [String: Any])?["imported"] as? [Any]
        let count = try daemon.client().call(ControlMethods.Status.self).noteCount

        Conditions.print([
            "data: \(Measure.count(noteCount)) Markdown files, \(Measure.bytes(bytes)), 20 folders; \(Conditions.filesystem(of: scratch.path))",
            "the machine is shared with other builds and tests: see the load average",
        ])
        var table = Table(["measure", "figure", "target", "verdict"])
        table.add(["notesctl import of \(Measure.count(noteCount)) notes", Measure.ms(elapsed), "≤ 5 s", Verdict.of(elapsed <= 5_000)])
        table.add(["notes per second", Measure.count(Int(Double(noteCount) / (elapsed / 1000))), "", ""])
        table.add(["CPU time: notesctl + notesd (load-independent)", "\(Measure.ms(notesctlCPU)) + \(Measure.ms(daemonCPU))", "", ""])
        table.add(["cmark-gfm + block split alone (in-process)", Measure.ms(conversion), "", ""])
        table.add(["notes in the library afterwards", Measure.count(count), Measure.count(noteCount), Verdict.of(count == noteCount && imported?.count == noteCount)])
        table.print()
    }

    /// A note like the ones people keep: most plain, some long, a third with front matter.
    static func note(_ index: Int) -> String {
        var text = ""
        if index % 3 == 0 {
            text += "---\ntitle: Note \(index)\ntags: [bench, group\(index % 7)]\ncreated: 2024-05-06T09:30:00Z\n---\n"
        } else {
            text += "# Note \(index)\n\n"
        }
        text += "Some *emphasis*, **strong** text, a [link](https://example.org/\(index)) and `code`.\n\n"
        text += "- [ ] first task \(index)\n- [x] done task\n  - nested item\n    1. deeper\n\n"
        if index % 4 == 0 { text += "```swift\nlet value = \(index)\nprint(value)\n```\n\n" }
        if index % 5 == 0 { text += "> A quote\n> over two lines\n\n| a | b |\n|---|---|\n| \(index) | x |\n\n" }
        if index % 10 == 0 {
            for paragraph in 0..<20 { text += "Paragraph \(paragraph) of a longer note, with words enough to look like prose.\n\n" }
        }
        return text
    }
}
