extension ControlClient {
    /// Notes per `notes.list` page in `listEveryNote`: an answer of 2,000 summaries stays far
    /// below the line limit (`LineFramer.defaultMaximumLineLength`) even with long titles,
    /// while 100,000 notes in one answer (~30 MB) would not fit.
    public static let notesListPageSize = 2_000

    /// Every note `params` matches, fetched page by page (`limit`, `after`;
    /// docs/control-protocol.md, `notes.list`); `params.limit` and `params.after` are ignored.
    /// Not one snapshot: a note edited while the pages are read moves to the front and may be
    /// missed; one that moves back (unpinned) is listed once.
    public func listEveryNote(_ params: NotesListParams, pageSize: Int = notesListPageSize) throws(ControlClientError) -> [NoteSummary] {
        var request = params
        request.limit = pageSize
        request.after = nil
        var notes: [NoteSummary] = []
        var seen = Set<String>()
        while true {
            let page = try call(ControlMethods.NotesList.self, request)
            let fresh = page.filter { seen.insert($0.id).inserted }
            notes += fresh
            // Fewer than a page: the end. Nothing new: a daemon that ignores `after`.
            guard page.count == pageSize, !fresh.isEmpty, let last = page.last else { return notes }
            request.after = NotesListAfter(last)
        }
    }
}
