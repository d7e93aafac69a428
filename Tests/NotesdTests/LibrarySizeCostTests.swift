import Control
@testable import Engine
import EngineHarness
import Foundation
import Merge
import Peer
import Testing
import TestSupport

/// A request costs what it touches, not the library (docs/benchmarks.md, "Cost that grows with
/// the library"). Measured without a clock: SQLite's own count of the virtual-machine steps
/// its statements ran (`Database.statementCounters`), for the same requests on one library at
/// 1,000 notes and again at 10,000. Every row a statement visits costs steps, so a request that
/// read the library (as `notes.create` once did, counting the notes of every folder to name
/// one note's folder) would cost about ten times more at the second size.
@Suite(.serialized) struct LibrarySizeCostTests {
    /// Notes in three folders, like `notesctl import` of three directories.
    static let folderNames = ["Work", "Home", "Archive"]

    /// What each request cost, by name.
    typealias Costs = [(String, Measured)]

    @Test func requestsCostTheSameAt1000And10000Notes() async throws {
        try await offThePool { try self.blockingRequestsCostTheSameAt1000And10000Notes() }
    }

    func blockingRequestsCostTheSameAt1000And10000Notes() throws {
        let device = try LoneDevice(name: "alpha")
        let folders = try device.run { engine in
            try Self.folderNames.map { try engine.foldersCreate(FolderCreateParams(name: $0)).id }
        }
        try grow(device, to: 1_000, folders: folders)
        let small = try measure(device, round: 0)
        let listingSmall = try cost(device) { _ = try $0.replica.listNotes() }
        try grow(device, to: 10_000, folders: folders)
        let large = try measure(device, round: 1)
        let listingLarge = try cost(device) { _ = try $0.replica.listNotes() }

        // The instrument sees library size: a full listing reads every note.
        #expect(listingLarge.total.virtualMachineSteps > 5 * listingSmall.total.virtualMachineSteps, "full listing: \(listingSmall) → \(listingLarge)")
        #expect(small.map(\.0) == large.map(\.0))
        for ((name, before), (_, after)) in zip(small, large) {
            // Equal in principle; the slack covers a tag or folder row more or less.
            let (small, large) = (before.total.virtualMachineSteps, after.total.virtualMachineSteps)
            #expect(large <= small + small / 5 + 20, "\(name) cost \(before) at 1,000 notes and \(after) at 10,000")
            #expect(after.total.sorts <= before.total.sorts, "\(name) sorts more at 10,000 notes: \(before) → \(after)")
        }
        // Counts kept by triggers stay right through creates, moves, trash and restore.
        let infos = try device.run { try $0.folderInfos() }.filter { Self.folderNames.contains($0.name) }
        let counted = try device.run { engine in
            try Self.folderNames.map { name in try engine.notesList(NotesListParams(folder: name)).count }
        }
        #expect(infos.sorted { $0.name < $1.name }.map(\.noteCount) == zip(Self.folderNames, counted).sorted { $0.0 < $1.0 }.map(\.1))
        #expect(try device.run { try $0.status().noteCount } == device.run { try $0.replica.noteIDs().count })
    }

    @Test func notesListPagesAreTheListInPiecesWithTheSameShortIds() async throws {
        try await offThePool { try self.blockingNotesListPagesAreTheListInPiecesWithTheSameShortIds() }
    }

    func blockingNotesListPagesAreTheListInPiecesWithTheSameShortIds() throws {
        let device = try LoneDevice(name: "alpha")
        try device.run { engine in
            _ = try engine.foldersCreate(FolderCreateParams(name: "Work"))
            for index in 0..<25 {
                _ = try engine.notesCreate(NoteCreateParams(title: "Note \(index)", html: "<p>x</p>", folder: index % 2 == 0 ? "Work" : nil, pinned: index % 6 == 0))
            }
        }
        for params in [NotesListParams(), NotesListParams(folder: "Work"), NotesListParams(pinned: false)] {
            let whole = try device.run { try $0.notesList(params) }
            var pages: [Control.NoteSummary] = []
            var request = params
            request.limit = 4
            while true {
                let page = try device.run { try $0.notesList(request) }
                pages += page
                guard page.count == 4, let last = page.last else { break }
                request.after = NotesListAfter(last)
            }
            // Same notes, same order, same short ids and folder paths as the whole list.
            #expect(pages == whole)
        }
        for bad in [NotesListParams(limit: 0), NotesListParams(limit: 10_001), NotesListParams(after: NotesListAfter(pinned: false, modified: Timestamp(rawValue: 0), id: "abcd"))] {
            #expect { try device.run { try $0.notesList(bad) } } throws: { ($0 as? RPCError)?.code == .invalidParams }
        }
    }

    @Test func notesCreateManyCreatesABatchInOneTransaction() async throws {
        try await offThePool { try self.blockingNotesCreateManyCreatesABatchInOneTransaction() }
    }

    func blockingNotesCreateManyCreatesABatchInOneTransaction() throws {
        let device = try LoneDevice(name: "alpha")
        _ = try device.run { try $0.foldersCreate(FolderCreateParams(name: "Work")) }
        let notes = (0..<30).map { NoteCreateParams(title: "Imported \($0)", html: "<p>\($0)</p>", folder: $0 % 2 == 0 ? "Work" : nil, tags: ["batch"]) }
        let created = try device.run { try $0.notesCreateMany(NotesCreateManyParams(notes: notes)) }.compactMap(\.note)
        #expect(created.map(\.title) == notes.map(\.title))
        #expect(created.map(\.folderPath) == notes.map { $0.folder ?? "" })
        // The answer's summaries are what the list shows.
        let listed = try device.run { try $0.notesList(NotesListParams(tag: "batch")) }
        #expect(Set(listed) == Set(created))
        #expect(try device.run { try $0.folderInfos() }.first { $0.name == "Work" }?.noteCount == 15)

        // A refused note gets its error; the others are created.
        let mixed = [NoteCreateParams(title: "fine", html: "")] + [NoteCreateParams(title: "lost", html: "", folder: "No such folder")]
        let outcomes = try device.run { try $0.notesCreateMany(NotesCreateManyParams(notes: mixed)) }
        #expect(outcomes.map { $0.note?.title } == ["fine", nil])
        #expect(outcomes[1].error?.code == .notFound)
        #expect(try device.run { try $0.status().noteCount } == 31)
    }

    /// Adds generated notes, spread over `folders`, in one transaction (outside any measure).
    private func grow(_ device: LoneDevice, to count: Int, folders: [String]) throws {
        try device.run { engine in
            let ids = folders.compactMap { RecordID($0) }
            let start = try engine.replica.noteCount
            try engine.replica.inOneTransaction {
                for index in start..<count {
                    _ = try engine.replica.createNote(
                        title: "Note \(index)", body: HTMLBlocks.split("<p>Body of note \(index)</p><p>second paragraph</p>"),
                        folder: ids[index % ids.count], tags: index % 10 == 0 ? ["tenth"] : [], now: 1_700_000_000_000 + UInt64(index))
                }
            }
        }
    }

    /// What `body` cost, and the statements that scanned a whole table or index (for the
    /// failure message: which query read the library).
    private func cost(_ device: LoneDevice, _ body: (EngineCore) throws -> Void) throws -> Measured {
        try device.run { engine in
            let before = engine.replica.database.statementCountersBySQL
            try body(engine)
            var measured = Measured()
            for (sql, after) in engine.replica.database.statementCountersBySQL {
                let spent = after - (before[sql] ?? StatementCounters())
                measured.total = measured.total + spent
                if spent.fullScanSteps > 0 { measured.scans.append("\(spent.fullScanSteps) × \(sql)") }
            }
            return measured
        }
    }

    struct Measured: CustomStringConvertible {
        var total = StatementCounters()
        var scans: [String] = []
        var description: String { "\(total)" + (scans.isEmpty ? "" : "; full scans: " + scans.sorted().joined(separator: " | ")) }
    }

    /// The requests a client makes one note at a time, each measured alone.
    private func measure(_ device: LoneDevice, round: Int) throws -> Costs {
        var costs: Costs = []
        func record(_ name: String, _ body: (EngineCore) throws -> Void) throws {
            costs.append((name, try cost(device, body)))
        }
        var created: Control.NoteSummary?
        try record("notes.create in a folder by path") { engine in
            created = try engine.notesCreate(NoteCreateParams(title: "New \(round)", html: "<p>text</p>", folder: "Work", tags: ["new"]))
        }
        let short = try #require(created).short
        try record("notes.update by short id") { engine in
            _ = try engine.notesUpdate(NoteUpdateParams(id: short, title: "Renamed \(round)", folder: .set("Home")))
        }
        try record("notes.get by short id") { _ = try $0.notesGet(NoteGetParams(id: short)) }
        try record("notes.trash") { _ = try $0.notesTrash(NoteReference(id: short), trashed: true) }
        try record("notes.restore") { _ = try $0.notesTrash(NoteReference(id: short), trashed: false) }
        try record("notes.list, first page of 50") { _ = try $0.notesList(NotesListParams(limit: 50)) }
        try record("notes.list, a page of a folder") { _ = try $0.notesList(NotesListParams(folder: "Work", limit: 50)) }
        try record("folders.create") { _ = try $0.foldersCreate(FolderCreateParams(name: "Sub \(round)", parent: "Work")) }
        try record("folders.rename") { _ = try $0.foldersRename(FolderRenameParams(folder: "Work/Sub \(round)", name: "Renamed \(round)")) }
        try record("status") { _ = try $0.status() }
        try record("notes.list of the empty Trash") { _ = try $0.notesList(NotesListParams(trashed: true)) }
        return costs
    }
}
