import Control
import Foundation

/// `export` and `import`: notes to and from files, through the control socket.
enum Transfer {
    /// `export --json` result.
    struct ExportReport: Codable, Hashable {
        var directory: String
        /// Files written, relative to `directory`.
        var written: [String]
        /// Files already holding exactly the note, left alone.
        var unchanged: [String]
    }

    /// `import --json` result.
    struct ImportReport: Codable, Hashable {
        struct Imported: Codable, Hashable {
            var file: String
            var id: String
            var title: String
        }

        struct Failed: Codable, Hashable {
            var file: String
            var error: String
        }

        var directory: String
        var imported: [Imported]
        var foldersCreated: [String]
        var failed: [Failed]
    }

    /// Writes every note not in the Trash under `directory`. Checks every target first:
    /// when any existing file differs (and not `force`), nothing is written.
    static func export(to directory: String, markdown: Bool, force: Bool, client: ControlClient) throws(CLIFailure) -> ExportReport {
        let fileManager = FileManager.default
        let notes = try call { () throws(ControlClientError) in try client.listEveryNote(NotesListParams()) }
        let plan = ExportPlan.files(for: notes, fileExtension: markdown ? ".md" : ".html")
        let summaries = Dictionary(notes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var pending: [(relative: String, contents: Data, modified: Date)] = []
        var unchanged: [String] = []
        var differing: [String] = []
        for file in plan {
            let format: NoteFormat = markdown ? .markdown : .html
            let document: NoteDocument
            do {
                document = try client.call(ControlMethods.NotesGet.self, NoteGetParams(id: file.noteID, format: format))
            } catch .server(let error) where error.code == .notFound {
                continue  // purged since the listing
            } catch {
                throw CLIFailure(error)
            }
            let title = document.summary.title
            let text = markdown
                ? "# \(title.isEmpty ? "Untitled" : title)\n\n\(document.body)" + (document.body.hasSuffix("\n") ? "" : "\n")
                : NoteText.document(title: title, body: document.body)
            let contents = Data(text.utf8)
            let relative = file.path.joined(separator: "/")
            let target = directory + "/" + relative
            var isDirectory: ObjCBool = false
            if fileManager.fileExists(atPath: target, isDirectory: &isDirectory) {
                if !isDirectory.boolValue, fileManager.contents(atPath: target) == contents {
                    unchanged.append(relative)
                    continue
                }
                if isDirectory.boolValue || !force { differing.append(relative) }
            }
            pending.append((relative, contents, (summaries[file.noteID]?.modified ?? document.summary.modified).date))
        }
        if !differing.isEmpty {
            let more = differing.count > 1 ? " and \(differing.count - 1) more" : ""
            throw CLIFailure("\(directory)/\(differing[0])\(more) already exist with other contents; nothing was written (use --force to overwrite)")
        }
        for file in pending {
            let target = URL(fileURLWithPath: directory).appendingPathComponent(file.relative)
            do {
                try fileManager.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                try file.contents.write(to: target, options: .atomic)
                try fileManager.setAttributes([.modificationDate: file.modified], ofItemAtPath: target.path)
            } catch {
                throw CLIFailure("cannot write \(target.path): \(error.localizedDescription)")
            }
        }
        return ExportReport(directory: directory, written: pending.map(\.relative), unchanged: unchanged)
    }

    /// Creates a note for every importable file under `directory`, and the folders they sit
    /// in. A file that cannot be read or is refused is reported and skipped.
    static func importFiles(from directory: String, client: ControlClient) throws(CLIFailure) -> ImportReport {
        var report = ImportReport(directory: directory, imported: [], foldersCreated: [], failed: [])
        var knownFolders = Set(try call { () throws(ControlClientError) in try client.call(ControlMethods.FoldersList.self) }.map(\.path))
        var batch: [(file: String, note: NoteCreateParams)] = []
        func flush() throws(CLIFailure) {
            try createNotes(batch, into: &report, client: client)
            batch.removeAll()
        }
        for relative in try importableFiles(in: directory) {
            let components = relative.split(separator: "/").map(String.init)
            guard let kind = ImportPlan.kind(ofFileNamed: components.last ?? ""),
                  let data = FileManager.default.contents(atPath: directory + "/" + relative) else {
                report.failed.append(.init(file: relative, error: "cannot read the file"))
                continue
            }
            guard let contents = String(data: data, encoding: .utf8) else {
                report.failed.append(.init(file: relative, error: "not UTF-8 text"))
                continue
            }
            let note = ImportPlan.note(relativePath: components, contents: contents, kind: kind)
            do {
                if let folder = note.folder {
                    report.foldersCreated += try ensureFolder(folder, known: &knownFolders, client: client)
                }
            } catch .server(let error) {
                report.failed.append(.init(file: relative, error: CLIFailure.message(for: error)))
                continue
            } catch {
                throw CLIFailure(error)
            }
            batch.append((relative, NoteCreateParams(title: note.title, html: note.html, folder: note.folder)))
            if batch.count == importBatchSize { try flush() }
        }
        try flush()
        return report
    }

    /// Notes per `notes.import` request: one transaction each, so 100,000 notes cost 200
    /// commits, not 100,000.
    static let importBatchSize = 500

    /// Creates `batch` in one `notes.import`; when the daemon refuses it (one bad note refuses
    /// all), creates them one by one so each refusal is reported against its file.
    private static func createNotes(_ batch: [(file: String, note: NoteCreateParams)], into report: inout ImportReport, client: ControlClient) throws(CLIFailure) {
        guard !batch.isEmpty else { return }
        do {
            let created = try client.call(ControlMethods.NotesImport.self, NotesImportParams(notes: batch.map(\.note)))
            for (item, summary) in zip(batch, created) { report.imported.append(.init(file: item.file, id: summary.id, title: summary.title)) }
            return
        } catch .server {
            // Retried one by one below.
        } catch {
            throw CLIFailure(error)
        }
        for item in batch {
            do {
                let created = try client.call(ControlMethods.NotesCreate.self, item.note)
                report.imported.append(.init(file: item.file, id: created.id, title: created.title))
            } catch .server(let error) {
                report.failed.append(.init(file: item.file, error: CLIFailure.message(for: error)))
            } catch {
                throw CLIFailure(error)
            }
        }
    }

    /// Creates the folders of `path` that do not exist yet; returns the paths created.
    private static func ensureFolder(_ path: String, known: inout Set<String>, client: ControlClient) throws(ControlClientError) -> [String] {
        let names = FolderPath.components(path)
        var created: [String] = []
        for depth in names.indices {
            let current = names[...depth].joined(separator: "/")
            guard !known.contains(current) else { continue }
            let parent = names[..<depth].joined(separator: "/")
            do {
                _ = try client.call(ControlMethods.FoldersCreate.self, FolderCreateParams(name: names[depth], parent: parent.isEmpty ? nil : parent))
                created.append(current)
            } catch .server(let error) where error.code == .alreadyExists {
                // Created meanwhile (another client, or a sync): use it.
            }
            known.insert(current)
        }
        return created
    }

    /// Regular files under `directory` that `import` reads, as sorted relative paths;
    /// hidden files and directories are skipped.
    private static func importableFiles(in directory: String) throws(CLIFailure) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue,
              let walker = FileManager.default.enumerator(atPath: directory) else {
            throw CLIFailure("\(directory) is not a directory")
        }
        var files: [String] = []
        while let relative = walker.nextObject() as? String {
            let name = (relative as NSString).lastPathComponent
            let type = walker.fileAttributes?[.type] as? FileAttributeType
            if name.hasPrefix(".") {
                if type == .typeDirectory { walker.skipDescendants() }
                continue
            }
            if type == .typeRegular, ImportPlan.kind(ofFileNamed: name) != nil { files.append(relative) }
        }
        return files.sorted()
    }

    private static func call<Value>(_ body: () throws(ControlClientError) -> Value) throws(CLIFailure) -> Value {
        do { return try body() } catch { throw CLIFailure(error) }
    }
}
