import Control
import Enex
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

        /// Something of an imported file that the note does not keep (front matter keys,
        /// missing attachments); the note was still created.
        struct Warning: Codable, Hashable {
            var file: String
            var warning: String
        }

        var directory: String
        var imported: [Imported]
        var foldersCreated: [String]
        var failed: [Failed]
        var warnings: [Warning] = []
    }

    /// Files larger than this are refused: a note is something a person reads, and the
    /// control protocol carries a body in one line (docs/control-protocol.md, "Framing").
    static let maximumImportBytes = 8 * 1024 * 1024
    /// An Evernote export carries its attachments inline (base64), so it may be much larger.
    static let maximumEnexBytes = 512 * 1024 * 1024

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
                ? MarkdownFile.text(summary: summaries[file.noteID] ?? document.summary, body: document.body)
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
        var batch = CreateBatch()
        let files = try importableFiles(in: directory)
        let names = Set(files.map { ($0 as NSString).lastPathComponent })
        /// Front matter read ahead, 200 files per `markdown.parseMany`, by relative path.
        var frontMatter: [String: MarkdownParseOutcome] = [:]
        for (position, relative) in files.enumerated() {
            if position % 200 == 0 {
                frontMatter = try readFrontMatter(of: files[position..<min(position + 200, files.count)], in: directory, client: client)
            }
            let components = relative.split(separator: "/").map(String.init)
            let path = directory + "/" + relative
            guard let kind = ImportPlan.kind(ofFileNamed: components.last ?? "") else { continue }
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            let limit = kind == .enex ? maximumEnexBytes : maximumImportBytes
            if let size = (attributes?[.size] as? NSNumber)?.intValue, size > limit {
                report.failed.append(.init(file: relative, error: "too large (\(megabytes(size)); notesctl imports files up to \(megabytes(limit)))"))
                continue
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                report.failed.append(.init(file: relative, error: "cannot read the file"))
                continue
            }
            if kind == .enex {
                try importEnex(data, relative: relative, components: components, report: &report, knownFolders: &knownFolders, batch: &batch, client: client)
                continue
            }
            if let zero = data.firstIndex(of: 0) {
                report.failed.append(.init(file: relative, error: "a binary file, not text (a NUL byte at offset \(zero - data.startIndex))"))
                continue
            }
            guard let contents = String(data: data, encoding: .utf8) else {
                report.failed.append(.init(file: relative, error: "not UTF-8 text (convert it, e.g. with iconv -t UTF-8)"))
                continue
            }
            let modified = (attributes?[.modificationDate] as? Date).map(Timestamp.init)
            do {
                var params: NoteCreateParams
                var folder: String?
                if kind == .markdown {
                    // Only a file that starts with `---` can have front matter; the rest need no round trip.
                    if let error = frontMatter[relative]?.error {
                        report.failed.append(.init(file: relative, error: CLIFailure.message(for: error)))
                        continue
                    }
                    let parsed = frontMatter[relative]?.result ?? MarkdownParseResult(hasFrontMatter: false, body: contents)
                    let note = ImportPlan.note(relativePath: components, contents: parsed.body, kind: .markdown)
                    folder = parsed.folder.map { FolderPath.components($0).joined(separator: "/") }.flatMap { $0.isEmpty ? nil : $0 } ?? note.folder
                    let changed = parsed.modified ?? modified
                    let created = parsed.created ?? changed
                    params = NoteCreateParams(
                        title: parsed.title ?? note.title, body: parsed.title == nil ? note.markdown : parsed.body, format: .markdown,
                        tags: parsed.tags, pinned: parsed.pinned, color: parsed.color?.isEmpty == true ? nil : parsed.color,
                        created: created, modified: changed.map { max($0, created ?? $0) })
                    if !parsed.unknownKeys.isEmpty {
                        report.warnings.append(.init(file: relative, warning: "front matter keys notesd keeps no field for, left out: " + parsed.unknownKeys.joined(separator: ", ")))
                    }
                    let base = (path as NSString).deletingLastPathComponent
                    for target in ImportPlan.referencedFiles(in: parsed.body) {
                        let decoded = target.removingPercentEncoding ?? target
                        let file = decoded.split(separator: "#").first.map(String.init) ?? decoded
                        let exists = file.hasPrefix("/") ? FileManager.default.fileExists(atPath: file)
                            : FileManager.default.fileExists(atPath: base + "/" + file) || names.contains((file as NSString).lastPathComponent)
                        if !exists { report.warnings.append(.init(file: relative, warning: "references \(target), which is not there (the link is kept as text)")) }
                    }
                } else {
                    let note = ImportPlan.note(relativePath: components, contents: contents, kind: kind)
                    folder = note.folder
                    params = NoteCreateParams(title: note.title, html: note.html ?? "", created: modified, modified: modified)
                }
                if let folder {
                    report.foldersCreated += try ensureFolder(folder, known: &knownFolders, client: client)
                }
                params.folder = folder
                try batch.add(file: relative, params, report: &report, client: client)
            } catch .server(let error) {
                report.failed.append(.init(file: relative, error: CLIFailure.message(for: error)))
            } catch {
                throw CLIFailure(error)
            }
        }
        do { try batch.flush(report: &report, client: client) } catch { throw CLIFailure(error) }
        return report
    }

    /// The front matter of the Markdown files among `files` that start with `---` (only those
    /// can have one), read by the daemon in one request.
    private static func readFrontMatter(of files: ArraySlice<String>, in directory: String, client: ControlClient) throws(CLIFailure) -> [String: MarkdownParseOutcome] {
        var paths: [String] = [], texts: [String] = []
        for relative in files where ImportPlan.kind(ofFileNamed: (relative as NSString).lastPathComponent) == .markdown {
            let path = directory + "/" + relative
            guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber, size.intValue <= maximumImportBytes,
                  let data = FileManager.default.contents(atPath: path), !data.contains(0), let text = String(data: data, encoding: .utf8),
                  text.hasPrefix("---") || text.hasPrefix("\u{FEFF}---") else { continue }
            paths.append(relative)
            texts.append(text)
        }
        guard !texts.isEmpty else { return [:] }
        let outcomes = try call { () throws(ControlClientError) in try client.call(ControlMethods.MarkdownParseMany.self, MarkdownParseManyParams(texts: texts)) }
        return Dictionary(zip(paths, outcomes), uniquingKeysWith: { first, _ in first })
    }

    /// Notes waiting to be created, sent as `notes.createMany` (one transaction on the daemon)
    /// every 500 notes or 4 MB: an import costs a few commits, not one per file.
    struct CreateBatch {
        var pending: [(file: String, params: NoteCreateParams, warnings: [String])] = []
        var bytes = 0
        static let maximumNotes = 500
        static let maximumBytes = 4 * 1024 * 1024

        mutating func add(
            file: String, _ params: NoteCreateParams, warnings: [String] = [], report: inout ImportReport, client: ControlClient
        ) throws(ControlClientError) {
            let size = (params.html?.utf8.count ?? 0) + (params.body?.utf8.count ?? 0) + params.title.utf8.count
            if !pending.isEmpty, pending.count >= Self.maximumNotes || bytes + size > Self.maximumBytes {
                try flush(report: &report, client: client)
            }
            pending.append((file, params, warnings))
            bytes += size
        }

        mutating func flush(report: inout ImportReport, client: ControlClient) throws(ControlClientError) {
            guard !pending.isEmpty else { return }
            let outcomes: [NoteCreateOutcome]
            do {
                outcomes = try client.call(ControlMethods.NotesCreateMany.self, NotesCreateManyParams(notes: pending.map(\.params)))
            } catch .server(let error) {
                for entry in pending { report.failed.append(.init(file: entry.file, error: CLIFailure.message(for: error))) }
                pending = []
                bytes = 0
                return
            }
            for (entry, outcome) in zip(pending, outcomes) {
                if let note = outcome.note {
                    report.imported.append(.init(file: entry.file, id: note.id, title: note.title))
                    for warning in entry.warnings { report.warnings.append(.init(file: entry.file, warning: warning)) }
                } else {
                    report.failed.append(.init(file: entry.file, error: outcome.error.map(CLIFailure.message(for:)) ?? "not created"))
                }
            }
            pending = []
            bytes = 0
        }
    }

    /// The notes of an Evernote export, in a folder named after the file; a file that is not
    /// a well-formed export fails as a whole (nothing of it is imported).
    private static func importEnex(
        _ data: Data, relative: String, components: [String], report: inout ImportReport, knownFolders: inout Set<String>,
        batch: inout CreateBatch, client: ControlClient
    ) throws(CLIFailure) {
        let notes: [Enex.Note]
        do { notes = try Enex.notes(in: [UInt8](data)) } catch {
            report.failed.append(.init(file: relative, error: error.description))
            return
        }
        let folder = ImportPlan.note(relativePath: components, contents: "", kind: .enex).folder
        do {
            if let folder, !notes.isEmpty { report.foldersCreated += try ensureFolder(folder, known: &knownFolders, client: client) }
        } catch .server(let error) {
            report.failed.append(.init(file: relative, error: CLIFailure.message(for: error)))
            return
        } catch {
            throw CLIFailure(error)
        }
        for (index, note) in notes.enumerated() {
            let title = note.title.isEmpty ? "Untitled" : note.title
            let label = "\(relative) note \(index + 1) \"\(title)\""
            let updated = note.updated ?? note.created
            let params = NoteCreateParams(
                title: title, html: note.html, folder: folder, tags: note.tags.isEmpty ? nil : note.tags,
                created: note.created.map(Timestamp.init(millisecondsSince1970:)),
                modified: updated.map { Timestamp(millisecondsSince1970: max($0, note.created ?? $0)) })
            do {
                try batch.add(file: label, params, warnings: note.notKept.map { "not kept: " + $0 }, report: &report, client: client)
            } catch {
                throw CLIFailure(error)
            }
        }
    }

    private static func megabytes(_ bytes: Int) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_048_576)
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
