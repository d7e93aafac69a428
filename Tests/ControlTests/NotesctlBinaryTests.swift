import Control
import Foundation
import Testing
import TestSupport
@testable import notesctl

/// The built `notesctl` executable, run as a user would: exit codes, stderr, and its calls
/// to a daemon played by `TestControlServer`.
@Suite struct NotesctlBinaryTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// `notesctl` next to the test bundle (`.build/<triple>/debug/`), else under the
    /// package's `.build/debug/`.
    static func executable() throws -> URL {
        var candidates: [URL] = []
        if let bundle = Bundle.main.executableURL { candidates.append(bundle.deletingLastPathComponent().appendingPathComponent("notesctl")) }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("notesctl"))
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(package.appendingPathComponent(".build/debug/notesctl"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "notesctl is not built; run swift build --build-tests"])
        }
        return found
    }

    /// Runs notesctl with `arguments`, `input` on stdin (never a terminal), and a clean
    /// environment plus `environment`.
    static func run(_ arguments: [String], input: String = "", environment: [String: String] = [:]) throws -> Run {
        // `env -i` gives the clean environment; `runBlocking` bounds the wait (90 s).
        let variables = ["PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": "/nonexistent-runtime-dir"].merging(environment) { $1 }
        let command = ["/usr/bin/env", "-i"] + variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [try executable().path] + arguments
        let result = try ChildProcess.runBlocking(command, input: input)
        return Run(status: result.status, stdout: result.output, stderr: result.error)
    }

    private static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/notesctl-test-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        return String(cString: created)
    }

    @Test func usageErrorsExit64WithTheUsageLine() throws {
        let run = try Self.run(["ls", "--bogus"])
        #expect(run.status == 64)
        let usage = try #require(CommandSpec.named("ls")).usage
        #expect(run.stderr == "notesctl: unknown option --bogus\nusage: notesctl \(usage)\n")
        #expect(run.stdout.isEmpty)
        let none = try Self.run([])
        #expect(none.status == 64)
        #expect(none.stderr.contains("usage: notesctl"))
    }

    @Test func helpAndVersionExit0() throws {
        let help = try Self.run(["help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("export"))
        #expect(try Self.run(["--version"]).stdout == "notesctl \(NotesVersion.string)\n")
        #expect(try Self.run(["sync", "--help"]).stdout.hasPrefix("usage: notesctl sync"))
    }

    @Test func noDaemonExits2AndSaysHowToStartIt() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/not-there/control.sock"
        let run = try Self.run(["--socket", socket, "status"])
        #expect(run.status == 2)
        #expect(run.stderr.contains(socket))
        #expect(run.stderr.contains("systemctl --user start notesd") && run.stderr.contains("notesd") && run.stderr.contains("make run"))
        #expect(run.stderr.split(separator: "\n").count == 1, "one line")
        // The environment variable is the default when --socket is absent.
        let viaEnvironment = try Self.run(["ls"], environment: ["NOTESD_SOCKET": socket])
        #expect(viaEnvironment.status == 2)
        #expect(viaEnvironment.stderr.contains(socket))
    }

    @Test func listPrintsATableOrJSON() throws {
        let server = try TestControlServer(connections: 2) { request in
            request.respond(to: ControlMethods.NotesList.self) { params in params.tag == "home" ? [Samples.note] : [] }
        }
        let table = try Self.run(["--socket", server.path, "ls", "--tag", "home"])
        #expect(table.status == 0, "\(table.stderr)")
        #expect(table.stdout.hasPrefix("ID "))
        #expect(table.stdout.contains("* Groceries"))
        let json = try Self.run(["ls", "--json", "--tag", "home", "--socket", server.path])
        #expect(json.status == 0)
        #expect(try ControlJSON.decoder().decode([NoteSummary].self, from: Data(json.stdout.utf8)) == [Samples.note])
        #expect(server.waitUntilFinished())
    }

    @Test func serverErrorsExit1WithOneLine() throws {
        let server = try TestControlServer { request in
            ControlWire.error(id: request.id, .ambiguous(.note, "0190", candidates: [.init(id: "0190aaaa", label: "A"), .init(id: "0190bbbb", label: "B")]))
        }
        let run = try Self.run(["--socket", server.path, "show", "0190"])
        #expect(run.status == 1)
        #expect(run.stderr.hasPrefix("notesctl: \"0190\" matches 2 notes"))
        #expect(run.stderr.contains("0190aaaa (A)") && run.stderr.contains("0190bbbb (B)"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test func newSendsPlainTextAsParagraphs() throws {
        let server = try TestControlServer { request in
            request.respond(to: ControlMethods.NotesCreate.self) { _ in Samples.note }
        }
        let run = try Self.run(["--socket", server.path, "new", "--text", "--tag", "a", "--tag", "b", "--folder", "/"], input: "Shopping <list>\nmilk\n\neggs\n")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "Created 0190a1b2  Groceries\n")
        #expect(server.waitUntilFinished())
        let params = try #require(server.incoming.first).params(NoteCreateParams.self)
        #expect(params == NoteCreateParams(title: "Shopping <list>", html: "<p>Shopping &lt;list&gt;<br>milk</p>\n<p>eggs</p>", folder: nil, tags: ["a", "b"]))
    }

    @Test func editReadsStdinAndMoveToRootSendsNull() throws {
        // Two connections: the empty-stdin run fails before it connects.
        let server = try TestControlServer(connections: 2) { request in
            request.respond(to: ControlMethods.NotesUpdate.self) { _ in Samples.note }
        }
        #expect(try Self.run(["--socket", server.path, "edit", "0190"], input: "<html><body>\n<p>new</p>\n</body></html>").status == 0)
        #expect(try Self.run(["--socket", server.path, "mv", "0190", "/"]).status == 0)
        let empty = try Self.run(["--socket", server.path, "edit", "0190"], input: "  \n")
        #expect(empty.status == 1, "an empty stdin never wipes a note")
        #expect(empty.stderr.contains("nothing was saved"))
        #expect(server.waitUntilFinished())
        let lines = server.requests.map { String(decoding: $0, as: UTF8.self) }
        #expect(lines.count == 2)
        #expect(try server.incoming[0].params(NoteUpdateParams.self) == NoteUpdateParams(id: "0190", html: "<p>new</p>"))
        #expect(lines[1].contains(#""folder":null"#))
    }

    @Test func purgeWithoutATerminalNeedsYes() throws {
        let run = try Self.run(["--socket", "/nonexistent/s.sock", "purge", "0190"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("--yes"))
    }

    @Test func watchPrintsJSONLines() throws {
        let server = try TestControlServer { connection in
            guard let request = connection.readRequest() else { return }
            connection.write(request.respond(to: ControlMethods.Watch.self) { _ in WatchResult(events: ControlEvent.knownTypes) })
            for event in Samples.events { connection.write(try! ControlWire.event(event)) }
        }
        let run = try Self.run(["--socket", server.path, "watch", "--json"])
        #expect(run.status == 1, "ends when the daemon goes away")
        #expect(run.stderr.contains("closed the connection"))
        let events = try run.stdout.split(separator: "\n").map { try ControlJSON.decoder().decode(ControlEvent.self, from: Data($0.utf8)) }
        #expect(events == Samples.events)
    }

    @Test func exportWritesFilesAndNeverOverwritesWithoutForce() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var second = Samples.note
        second.id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d"
        second.created = Timestamp(rawValue: Samples.note.created.rawValue + 1)
        let notes = [Samples.note, second]
        let server = try TestControlServer(connections: 3) { request in
            switch request.method {
            case ControlMethods.NotesList.name:
                return request.respond(to: ControlMethods.NotesList.self) { _ in notes }
            default:
                return request.respond(to: ControlMethods.NotesGet.self) { params in
                    guard let note = notes.first(where: { $0.id == params.id }) else { throw RPCError.notFound(.note, params.id) }
                    return NoteDocument(summary: note, format: params.format ?? .html, body: "<p>\(note.id)</p>", heads: [])
                }
            }
        }
        let target = directory + "/out"
        let first = try Self.run(["--socket", server.path, "export", target])
        #expect(first.status == 0, "\(first.stderr)")
        let firstFile = target + "/Home/Lists/Groceries.html", secondFile = target + "/Home/Lists/Groceries (2).html"
        let written = try String(contentsOfFile: firstFile, encoding: .utf8)
        #expect(written.contains("<title>Groceries</title>") && written.contains("<p>\(Samples.note.id)</p>"))
        #expect(FileManager.default.fileExists(atPath: secondFile))

        let again = try Self.run(["--socket", server.path, "--json", "export", target])
        #expect(again.status == 0)
        #expect(again.stdout.contains("\"unchanged\""))

        try "edited by hand".write(toFile: secondFile, atomically: true, encoding: .utf8)
        let refused = try Self.run(["--socket", server.path, "export", target])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("--force"))
        #expect(try String(contentsOfFile: secondFile, encoding: .utf8) == "edited by hand")
        #expect(server.waitUntilFinished())
    }
}
