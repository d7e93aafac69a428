// Records golden transcripts of sync protocol 1 from release 0.1.0 (commit 30d5e97).
// Compiled by Tests/Fixtures/protocol-1/record.sh inside a scratch checkout of that commit,
// against that release's own `Peer` module: two replicas (real SQLite files) and two of its
// `SyncSession`s, frames carried between them in memory, every frame written down as the
// bytes `FrameCodec.encode` gave (the plaintext the secure channel would encrypt).
//
// Usage: protocol1-recorder OUTPUT_DIR
//
// Everything is deterministic: replica ids and revision ids come from a seeded SplitMix64 and
// the clock is virtual, so running it again gives the same files.
import Foundation
import Merge
import Peer

let output = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "."
let work = NSTemporaryDirectory() + "protocol1-recorder-\(getpid())"
try? FileManager.default.removeItem(atPath: work)
try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: work) }

final class Seeded: @unchecked Sendable {
    var generator: SplitMix64
    init(_ seed: UInt64) { generator = SplitMix64(seed: seed) }
    func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) } }
}

let randomA = Seeded(0xA1FA), randomB = Seeded(0xB2A0)
var clock: UInt64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z; +7 ms per step

@MainActor func tick() -> UInt64 {
    clock += 7
    return clock
}

let keyA = randomA.bytes(32), keyB = randomB.bytes(32), keyC = Seeded(0xC3A9).bytes(32)

@MainActor final class Side {
    let name: String
    let path: String
    let random: Seeded
    var replica: Replica?

    init(name: String, random: Seeded) throws {
        self.name = name
        self.random = random
        path = work + "/\(name).db"
        try open()
    }

    func open() throws { replica = try Replica(path: path, randomBytes: { [random] in random.bytes($0) }) }
    var store: Replica { replica! }

    /// Closes the database (SQLite folds the WAL back into the file) and copies it.
    func snapshot(to file: String) throws {
        replica = nil
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            throw NSError(domain: "recorder", code: 1, userInfo: [NSLocalizedDescriptionKey: "\(path)\(suffix) survived the close"])
        }
        try? FileManager.default.removeItem(atPath: file)
        try FileManager.default.copyItem(atPath: path, toPath: file)
        try open()
    }
}

let alpha = try Side(name: "alpha", random: randomA)
let bravo = try Side(name: "bravo", random: randomB)

/// One recorded session: frames in the order they were delivered, each with the time it was
/// delivered and who sent it; `#` lines say what happened locally in between.
@MainActor final class Session {
    let name: String
    var lines: [String] = []
    var sessionA: SyncSession
    var sessionB: SyncSession
    var toB: [Frame] = [], toA: [Frame] = []

    init(_ name: String) {
        self.name = name
        let (a, outA) = SyncSession.start(configuration: .init(deviceName: alpha.name), store: alpha.store, now: tick())
        let (b, outB) = SyncSession.start(configuration: .init(deviceName: bravo.name), store: bravo.store, now: tick())
        sessionA = a
        sessionB = b
        toB = outA.frames
        toA = outB.frames
        lines.append("# session \(name): alpha and bravo start; each sends its hello")
    }

    func note(_ text: String) { lines.append("# " + text) }

    /// Delivers frames both ways, one at a time, until neither side has anything to say.
    func settle() {
        while !toA.isEmpty || !toB.isEmpty {
            if let frame = toB.first {
                toB.removeFirst()
                let now = tick()
                lines.append("\(now) alpha \(hex(FrameCodec.encode(frame)))")
                let out = sessionB.receive(frame, store: bravo.store, now: now)
                toA += out.frames
                check(out, "bravo")
            }
            if let frame = toA.first {
                toA.removeFirst()
                let now = tick()
                lines.append("\(now) bravo \(hex(FrameCodec.encode(frame)))")
                let out = sessionA.receive(frame, store: alpha.store, now: now)
                toB += out.frames
                check(out, "alpha")
            }
        }
        // Nothing more to say: both hold the same entries. (Release 0.1's `isCaughtUp` can stay
        // false here: it does not count what the peer sent us as held by the peer.)
        precondition(alpha.store.vector == bravo.store.vector, "session \(name) ended with alpha and bravo apart")
    }

    func localChangeA() { toB += sessionA.localChange(store: alpha.store, now: tick()).frames }
    func localChangeB() { toA += sessionB.localChange(store: bravo.store, now: tick()).frames }

    func check(_ out: SyncSession.Output, _ side: String) {
        for case .closed(let reason) in out.events { fatalError("\(side) closed session \(name): \(reason)") }
    }

    func write() throws {
        let header = """
            # Sync protocol 1 as release 0.1.0 (commit 30d5e97) speaks it: session "\(name)".
            # Recorded by Tests/Fixtures/protocol-1/record.sh; do not edit.
            # Each frame line: delivery time (Unix ms), sender (alpha or bravo), the frame's
            # plaintext bytes in hex (FrameCodec.encode; the secure channel encrypts exactly these).

            """
        try (header + lines.joined(separator: "\n") + "\n").write(toFile: output + "/\(name).transcript", atomically: true, encoding: .utf8)
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func html(_ text: String) -> [Block] { HTMLBlocks.split(text) }

/// What a side holds, in a form that does not depend on ids or times: what the replay test
/// compares against.
@MainActor func state(of replica: Replica) throws -> String {
    var lines: [String] = []
    let folders = try replica.listFolders()
    for folder in folders.sorted(by: { $0.path.joined(separator: "/") < $1.path.joined(separator: "/") }) {
        lines.append("folder \(folder.path.joined(separator: "/"))")
    }
    let path = { (id: FolderID?) -> String in
        guard let id, let folder = folders.first(where: { $0.id == id }) else { return "-" }
        return folder.path.joined(separator: "/")
    }
    var notes: [String] = []
    for trashed in [false, true] {
        for summary in try replica.listNotes(NoteFilter(trashed: trashed)) {
            guard let note = try replica.note(summary.id) else { continue }
            notes.append([
                "note", summary.title.debugDescription, "folder=\(path(summary.folder))", "trashed=\(summary.trashed)",
                "pinned=\(summary.pinned)", "color=\(summary.color ?? "-")", "tags=\(summary.tags.sorted().joined(separator: ","))",
                "conflictCopy=\(summary.conflictOf != nil)", "body=\(HTMLBlocks.join(note.body).debugDescription)",
            ].joined(separator: " "))
        }
    }
    lines += notes.sorted()
    for entry in try replica.listDevices().sorted(by: { $0.device.name < $1.device.name }) {
        lines.append("device \(entry.device.name) revoked=\(entry.device.revoked)")
    }
    return lines.joined(separator: "\n") + "\n"
}

@MainActor func writeState(_ side: Side, after session: String) throws {
    try state(of: side.store).write(toFile: output + "/\(session).\(side.name).state", atomically: true, encoding: .utf8)
}

// Each device starts with itself on its roster; alpha, which made the household, also lists
// bravo and charlie (as pairing would have).
try alpha.store.addDevice(publicKey: keyA, name: "alpha", now: tick())
try bravo.store.addDevice(publicKey: keyB, name: "bravo", now: tick())
try alpha.store.addDevice(publicKey: keyB, name: "bravo", now: tick())
try alpha.store.addDevice(publicKey: keyC, name: "charlie", now: tick())

// Alpha's library before the first sync.
let work1 = try alpha.store.createFolder(name: "Work", now: tick())
let projects = try alpha.store.createFolder(name: "Projects", parent: work1, now: tick())
let home = try alpha.store.createFolder(name: "Home", now: tick())
_ = try alpha.store.createNote(
    title: "Groceries",
    body: html("<h1>Groceries</h1>\n<ul data-type=\"checklist\"><li data-checked=\"true\">eggs</li><li data-checked=\"false\">milk</li></ul>\n<p>From the <b>market</b>, not the shop.</p>"),
    folder: home, tags: ["home", "weekly"], pinned: true, color: "yellow", now: tick())
let plan = try alpha.store.createNote(
    title: "Project plan", body: html("<h2>Plan</h2>\n<p>First step.</p>\n<ol><li>design</li><li>build</li></ol>\n<pre><code>make test</code></pre>"),
    folder: projects, tags: ["work"], now: tick())
let trip = try alpha.store.createNote(
    title: "Trip", body: html("<p>Leave Friday at six.</p>\n<blockquote><p>Pack light.</p></blockquote>\n<hr>\n<p>Passport.</p>"), now: tick())
let scratch = try alpha.store.createNote(title: "Scratch", body: html("<p>An old idea.</p>"), now: tick())
let gone = try alpha.store.createNote(title: "Gone", body: html("<p>To be deleted for good.</p>"), now: tick())
// A body large enough to travel as several blocks, some shared with another note.
let long = (1...40).map { "<p>Paragraph \($0) of the long note, with some words to fill it out.</p>" }.joined(separator: "\n")
let longNote = try alpha.store.createNote(title: "Long", body: html(long), now: tick())

// 1. Initial sync: bravo has only itself; alpha sends everything.
try alpha.snapshot(to: output + "/initial-sync.alpha.db")
try bravo.snapshot(to: output + "/initial-sync.bravo.db")
let initial = Session("initial-sync")
initial.settle()
try initial.write()
try writeState(alpha, after: "initial-sync")
try writeState(bravo, after: "initial-sync")

// 2. Live edits: while connected, alpha edits two notes (a small change: a body delta),
// tags one and creates one; each goes out as it is committed.
try bravo.snapshot(to: output + "/live-edits.bravo.db")
let live = Session("live-edits")
live.settle()
live.note("alpha edits \"Project plan\" (one paragraph)")
try alpha.store.editNote(plan, NoteEdit(body: html("<h2>Plan</h2>\n<p>First step, agreed.</p>\n<ol><li>design</li><li>build</li></ol>\n<pre><code>make test</code></pre>")), now: tick())
live.localChangeA()
live.settle()
live.note("alpha edits \"Long\" (paragraph 20) and tags it")
let longEdited = long.replacingOccurrences(of: "Paragraph 20 of", with: "Paragraph twenty of")
try alpha.store.editNote(longNote, NoteEdit(body: html(longEdited), addTags: ["long"]), now: tick())
live.localChangeA()
live.settle()
live.note("alpha creates \"Call the plumber\"")
_ = try alpha.store.createNote(title: "Call the plumber", body: html("<p>Tuesday, before noon.</p>"), folder: home, now: tick())
live.localChangeA()
live.settle()
try live.write()
try writeState(bravo, after: "live-edits")

// 3. A conflict: apart, alpha and bravo change the same paragraph of "Trip"; bravo also
// edits "Project plan" elsewhere (merged, no conflict). Then they connect.
try alpha.store.editNote(trip, NoteEdit(body: html("<p>Leave Friday at five.</p>\n<blockquote><p>Pack light.</p></blockquote>\n<hr>\n<p>Passport.</p>")), now: tick())
try bravo.store.editNote(trip, NoteEdit(body: html("<p>Leave Saturday at six.</p>\n<blockquote><p>Pack light.</p></blockquote>\n<hr>\n<p>Passport.</p>")), now: tick())
try bravo.store.editNote(plan, NoteEdit(body: html("<h2>Plan</h2>\n<p>First step, agreed.</p>\n<ol><li>design</li><li>build</li><li>ship</li></ol>\n<pre><code>make test</code></pre>"), addTags: ["release"]), now: tick())
try alpha.snapshot(to: output + "/conflict.alpha.db")
try bravo.snapshot(to: output + "/conflict.bravo.db")
let conflict = Session("conflict")
conflict.note("before this session, apart: alpha and bravo changed the same paragraph of \"Trip\"; bravo edited \"Project plan\"")
conflict.settle()
try conflict.write()
try writeState(alpha, after: "conflict")
try writeState(bravo, after: "conflict")

// 4. A removal: while connected, alpha trashes "Scratch", purges "Gone" (a tombstone) and
// removes charlie from the roster.
try bravo.snapshot(to: output + "/removal.bravo.db")
let removal = Session("removal")
removal.settle()
removal.note("alpha trashes \"Scratch\"")
try alpha.store.trashNote(scratch, now: tick())
removal.localChangeA()
removal.settle()
removal.note("alpha purges \"Gone\"")
try alpha.store.purgeNote(gone, now: tick())
removal.localChangeA()
removal.settle()
removal.note("alpha removes charlie from the household")
try alpha.store.revokeDevice(Replica.deviceRecordID(publicKey: keyC), now: tick())
removal.localChangeA()
removal.settle()
try removal.write()
try writeState(bravo, after: "removal")
try writeState(alpha, after: "removal")
print("recorded 4 sessions into \(output)")
