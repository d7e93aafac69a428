import Control

/// What a body read from a file or stdin is written in, and the note it makes. Markdown goes
/// to the daemon as it is (`notes.create {format: "markdown"}`): notesd converts it, so the web
/// app and notesctl read Markdown the same way.
enum BodyInput {
    /// The format: the flag given; else the file's extension (`.md`/`.markdown`, `.html`/`.htm`,
    /// `.txt`); else HTML when the text starts with `<` (after blanks), Markdown otherwise.
    static func format(flag: NoteFormat?, path: String?, text: String) -> NoteFormat {
        if let flag { return flag }
        if let path, path != "-", let dot = path.lastIndex(of: "."), !path[dot...].contains("/") {
            switch path[path.index(after: dot)...].lowercased() {
            case "md", "markdown": return .markdown
            case "html", "htm": return .html
            case "txt": return .text
            default: break
            }
        }
        let start = text.drop(while: { $0.isWhitespace || $0 == "\u{FEFF}" })
        return start.hasPrefix("<") ? .html : .markdown
    }

    /// The title and body members of a new note made of `text` in `format`. A Markdown text's
    /// first line `# Title` is the title (taken out of the body), as `import` reads it.
    static func note(_ text: String, format: NoteFormat) -> (title: String?, params: (html: String?, body: String?, format: NoteFormat?)) {
        switch format {
        case .markdown:
            let (title, body) = NoteText.splitMarkdownTitle(text)
            return (title, (nil, title == nil ? text : body, .markdown))
        case .text:
            return (NoteText.title(fromPlainText: text), (NoteText.paragraphs(fromPlainText: text), nil, nil))
        case .html:
            return (NoteText.title(fromHTML: text), (NoteText.bodyFragment(ofHTML: text), nil, nil))
        }
    }
}
