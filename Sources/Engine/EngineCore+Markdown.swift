import Control
import Markup
import Merge
import Peer

/// Bodies sent and read in Markdown or text (docs/control-protocol.md, "Body formats";
/// docs/markdown.md). The handlers in EngineCore+Control call only these.
extension EngineCore {
    /// A `notes.create` body: `html`, or `body` in `format`.
    static func createBody(_ params: NoteCreateParams) throws -> [Block] {
        try checkBodyMembers(html: params.html, body: params.body, format: params.format)
        guard let body = params.body else { return HTMLBlocks.split(params.html ?? "") }
        return convert(body, format: params.format ?? .html)
    }

    /// A `notes.update` body, or nil when it leaves the body alone. A Markdown edit is compared
    /// with the Markdown of the note at `baseHeads` (absent: now), block by block
    /// (`MarkdownEdit`), so blocks the person did not change keep their HTML exactly.
    func updateBody(_ params: NoteUpdateParams, id: NoteID, baseHeads: [RevisionID]?) throws -> [Block]? {
        try Self.checkBodyMembers(html: params.html, body: params.body, format: params.format)
        guard let body = params.body else { return params.html.map(HTMLBlocks.split) }
        switch params.format ?? .html {
        case .markdown:
            guard let base = try replica.note(id, atHeads: baseHeads ?? []) else {
                throw RPCError.invalidParams("params.baseHeads names a revision this note does not have; read the note again and retry")
            }
            return MarkdownEdit.apply(body, to: base.body)
        case .html, .text:
            return Self.convert(body, format: params.format ?? .html)
        }
    }

    /// A body as `notes.get` answers it.
    static func render(_ blocks: [Block], format: NoteFormat) -> String {
        switch format {
        case .html: HTMLBlocks.join(blocks)
        case .text: blocks.map(\.text).joined(separator: "\n\n")
        case .markdown: MarkdownExport.markdown(blocks)
        }
    }

    /// `created`/`modified` of a `notes.create`, as the store keeps them.
    static func createTimes(_ params: NoteCreateParams) throws -> (created: UInt64?, modified: UInt64?) {
        for (name, value) in [("created", params.created), ("modified", params.modified)] {
            if let value, value.rawValue < 0 { throw RPCError.invalidParams("params.\(name) must be milliseconds since 1970, not negative") }
        }
        if let created = params.created, let modified = params.modified, modified < created {
            throw RPCError.invalidParams("params.modified is before params.created")
        }
        return (params.created.map { UInt64($0.rawValue) }, params.modified.map { UInt64($0.rawValue) })
    }

    private static func checkBodyMembers(html: String?, body: String?, format: NoteFormat?) throws {
        if html != nil, body != nil { throw RPCError.invalidParams("give the body as params.html or as params.body with params.format, not both") }
        if format != nil, format != .html, html != nil {
            throw RPCError.invalidParams("params.format is \(format!.rawValue): send the body in params.body (params.html is always HTML)")
        }
    }

    private static func convert(_ body: String, format: NoteFormat) -> [Block] {
        switch format {
        case .html: HTMLBlocks.split(body)
        case .markdown: MarkdownImport.blocks(body)
        case .text: paragraphs(fromText: body)
        }
    }

    /// Plain text as paragraphs: blank lines separate them, a line break inside one is `<br>`
    /// (the inverse of the `text` format, as `notesctl edit --text` does it).
    static func paragraphs(fromText text: String) -> [Block] {
        MarkdownImport.normalized(text).split(separator: "\n\n", omittingEmptySubsequences: true).compactMap { chunk in
            let lines = chunk.split(separator: "\n").map { String($0) }.filter { !$0.allSatisfy(\.isWhitespace) }
            guard !lines.isEmpty else { return nil }
            return HTMLBlocks.split("<p>" + lines.map { Block.paragraph($0).content }.joined(separator: "<br>") + "</p>").first
        }
    }

    /// `markdown.parse`: the front matter of a Markdown file, read with libyaml. Touches no
    /// state; a malformed front matter is `invalidParams` naming the line and the problem.
    public static func markdownParse(_ params: MarkdownParseParams) throws -> MarkdownParseResult {
        let (yaml, body) = FrontMatterBlock.split(params.text)
        guard let yaml else { return MarkdownParseResult(hasFrontMatter: false, body: body) }
        let fields: FrontMatter
        do { fields = try FrontMatter.parse(yaml) } catch { throw RPCError.invalidParams(error.description) }
        return MarkdownParseResult(
            title: fields.title, tags: fields.tags, created: fields.created.map(Timestamp.init(millisecondsSince1970:)),
            modified: fields.modified.map(Timestamp.init(millisecondsSince1970:)), pinned: fields.pinned, color: fields.color,
            folder: fields.folder, id: fields.id, unknownKeys: fields.unknownKeys, hasFrontMatter: true, body: body)
    }

    /// How long the bulk settings of an import outlast its last large batch: `notesctl import`
    /// sends the next batch within milliseconds, so a pause this long means it ended.
    static let bulkImportSettleInterval: UInt64 = 2_000

    /// `notes.createMany`: every note checked and converted first (a bad one gets its error,
    /// the rest go ahead), then all created in one transaction, one commit, one push.
    public func notesCreateMany(_ params: NotesCreateManyParams) throws -> [NoteCreateOutcome] {
        typealias Prepared = (index: Int, body: [Block], folder: FolderID?, tags: Set<String>, created: UInt64?, modified: UInt64?)
        var outcomes = [NoteCreateOutcome](repeating: NoteCreateOutcome(), count: params.notes.count)
        var prepared: [Prepared] = []
        var folders: [String: FolderID?] = [:]
        for (index, note) in params.notes.enumerated() {
            do {
                let reference = note.folder ?? ""
                let folder = try folders[reference] ?? resolveFolder(note.folder)
                folders[reference] = folder
                if let color = note.color, color.isEmpty { throw RPCError.invalidParams("params.color must not be empty (leave it out for no colour)") }
                let times = try Self.createTimes(note)
                prepared.append((index, try Self.createBody(note), folder, try Self.cleanTags(note.tags), times.created, times.modified))
            } catch {
                outcomes[index].error = rpcError(error)
            }
        }
        // A batch as large as a catch-up's is a bulk write (Replica.enterBulkWrite), in the log:
        // a larger page cache, fewer checkpoints, its notes indexed for search after it, in
        // steps (EngineCore+SearchIndex), so an import pays for its notes, not their index.
        // The settings last while batches keep coming (`bulkImportSettles`).
        let now = self.now
        if prepared.count >= Replica.bulkBatchThreshold {
            try replica.enterBulkWrite(.import)
            bulkImportSettles = now + Self.bulkImportSettleInterval
        }
        let ids = try replica.inOneTransaction {
            try prepared.map { entry in
                let note = params.notes[entry.index]
                return try replica.createNote(
                    title: note.title, body: entry.body, folder: entry.folder, tags: entry.tags, pinned: note.pinned ?? false,
                    color: note.color, created: entry.created, modified: entry.modified, now: now)
            }
        }
        if !ids.isEmpty { committed(.local) }
        // Each summary costs what it touches (its id's neighbours, its folder's path), not the
        // library (docs/benchmarks.md, "Cost that grows with the library").
        let stored = try ids.map { id in
            guard let summary = try replica.noteSummary(id) else { throw RPCError.notFound(.note, id.description) }
            return summary
        }
        let summaries = try pagedNoteSummaries(stored)
        for (entry, summary) in zip(prepared, summaries) { outcomes[entry.index].note = summary }
        return outcomes
    }
}
