import Control

/// Safe, unique file names for `export`, and what `import` makes of files. Pure functions of
/// the names, tested without touching a disk.
enum FileNaming {
    /// Room for a ` (123)` suffix and an extension within the 255-byte name limit.
    static let maximumNameBytes = 200

    /// Characters that are path separators, or forbidden or troublesome on common file
    /// systems (FAT, NTFS, SMB shares), replaced by `_`.
    private static let unsafeCharacters: Set<Character> = ["/", "\\", ":", "*", "?", "\"", "<", ">", "|"]
    /// Names Windows reserves whatever the extension; a USB stick may end up there.
    private static let reservedNames = Set(["CON", "PRN", "AUX", "NUL"] + (1...9).flatMap { ["COM\($0)", "LPT\($0)"] })

    /// A title as a file or directory name (without extension): unsafe and control characters
    /// become `_`, white space runs one space, no leading dots (hidden files) or trailing dots
    /// and spaces, at most `maximumNameBytes` of UTF-8; `Untitled` when nothing is left.
    static func safeName(_ title: String) -> String {
        var name = ""
        for character in title {
            if character.isNewline || character.isWhitespace {
                name.append(" ")
            } else if unsafeCharacters.contains(character) || character.unicodeScalars.contains(where: isControl) {
                name.append("_")
            } else {
                name.append(character)
            }
        }
        name = name.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        name = trimmed(String(name.drop { $0 == "." || $0 == " " }))
        while name.utf8.count > maximumNameBytes { name.removeLast() }
        name = trimmed(name)
        if name.isEmpty { return "Untitled" }
        if reservedNames.contains(name.uppercased()) { name += "_" }
        return name
    }

    private static func trimmed(_ name: String) -> String {
        var name = name
        while let last = name.last, last == "." || last == " " { name.removeLast() }
        return name
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `base.ext`, or `base (2).ext`, `base (3).ext`… — the first not in `taken`, compared
    /// without case (so the export also works on case-insensitive file systems). Adds the
    /// chosen name to `taken`.
    static func uniqueName(base: String, extension fileExtension: String, taken: inout Set<String>) -> String {
        var candidate = base + fileExtension
        var number = 2
        while taken.contains(candidate.lowercased()) {
            candidate = "\(base) (\(number))\(fileExtension)"
            number += 1
        }
        taken.insert(candidate.lowercased())
        return candidate
    }
}

/// Where `export` writes each note: folders as directories, one file per note.
enum ExportPlan {
    struct File: Hashable, Sendable {
        let noteID: String
        /// Directory names then the file name, relative to the export directory.
        let path: [String]
    }

    /// One file per note, in a stable order (created, then id) so exporting the same library
    /// twice gives the same names. Folders whose safe names differ only in case share one
    /// directory (spelled as first seen); a note's file name never equals a sibling
    /// directory's name.
    static func files(for notes: [NoteSummary], fileExtension: String) -> [File] {
        let ordered = notes.sorted { ($0.created, $0.id) < ($1.created, $1.id) }
        var spelling: [String: String] = [:]  // lowercased directory path → first spelling
        func directory(of note: NoteSummary) -> [String] {
            var path: [String] = []
            for name in FolderPath.components(note.folderPath).map(FileNaming.safeName) {
                let key = (path + [name]).joined(separator: "/").lowercased()
                let spelled = spelling[key] ?? name
                spelling[key] = spelled
                path.append(spelled)
            }
            return path
        }
        let directories = ordered.map(directory)
        // Every directory's names are taken by its subdirectories first.
        var taken: [String: Set<String>] = [:]
        for path in directories {
            for depth in path.indices {
                taken[path[..<depth].joined(separator: "/").lowercased(), default: []].insert(path[depth].lowercased())
            }
        }
        return zip(ordered, directories).map { note, path in
            let key = path.joined(separator: "/").lowercased()
            let name = FileNaming.uniqueName(base: FileNaming.safeName(note.title), extension: fileExtension, taken: &taken[key, default: []])
            return File(noteID: note.id, path: path + [name])
        }
    }
}

/// What `import` makes of one file.
enum ImportPlan {
    enum Kind: Hashable, Sendable {
        case html
        case text
        /// Markdown, converted by the daemon; may carry front matter and a `# Title` first line.
        case markdown
        /// An Evernote export: many notes, in a folder named after the file (its notebook).
        case enex
    }

    struct Note: Hashable, Sendable {
        let title: String
        /// The body for `html`/`text` files.
        var html: String?
        /// The body for Markdown files (front matter already taken off).
        var markdown: String?
        /// The folder path (`A/B`) from the file's directories; `nil` at the top.
        let folder: String?
    }

    /// The kind for a file name, by extension (any case); `nil`: not imported.
    static func kind(ofFileNamed name: String) -> Kind? {
        guard !name.hasPrefix("."), let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "html", "htm": return .html
        case "md", "markdown": return .markdown
        case "txt": return .text
        case "enex": return .enex
        default: return nil
        }
    }

    /// The note for a file at `relativePath` (directories then file name) with `contents`.
    static func note(relativePath: [String], contents: String, kind: Kind) -> Note {
        let fileName = relativePath.last ?? ""
        let stem = fileName.lastIndex(of: ".").map { String(fileName[..<$0]) } ?? fileName
        let folders = relativePath.dropLast().map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let folder = folders.isEmpty ? nil : folders.joined(separator: "/")
        let fallback = NoteText.collapsingWhitespace(stem).isEmpty ? "Untitled" : NoteText.collapsingWhitespace(stem)
        switch kind {
        case .html:
            return Note(title: NoteText.title(fromHTML: contents) ?? fallback, html: NoteText.bodyFragment(ofHTML: contents), folder: folder)
        case .text:
            return Note(title: fallback, html: NoteText.paragraphs(fromPlainText: contents), folder: folder)
        case .markdown:
            let (title, body) = NoteText.splitMarkdownTitle(contents)
            return Note(title: title ?? fallback, markdown: title == nil ? contents : body, folder: folder)
        case .enex:
            // The notebook's folder; the notes themselves come from `Enex.notes`.
            return Note(title: fallback, folder: (folders + [fallback]).joined(separator: "/"))
        }
    }

    /// Local files a Markdown text links or embeds (`[x](a.pdf)`, `![x](img/a.png)`,
    /// Obsidian's `![[a.png]]`), as written; web links, anchors and `[[wiki links]]` aside.
    /// A plain scan: it runs on every imported file.
    static func referencedFiles(in markdown: String) -> [String] {
        var found: [String] = []
        let characters = Array(markdown.unicodeScalars)
        var index = 0
        while index < characters.count {
            if characters[index] == "!", index + 2 < characters.count, characters[index + 1] == "[", characters[index + 2] == "[" {
                var end = index + 3
                while end < characters.count, !"]|#\n".unicodeScalars.contains(characters[end]) { end += 1 }
                let name = String(String.UnicodeScalarView(characters[(index + 3)..<end])).trimmingCharacters(in: .whitespaces)
                if !name.isEmpty { found.append(name) }
                index = end
                continue
            }
            if characters[index] == "]", index + 1 < characters.count, characters[index + 1] == "(" {
                var start = index + 2
                while start < characters.count, characters[start] == " " { start += 1 }
                var end = start
                let angled = start < characters.count && characters[start] == "<"
                if angled {
                    start += 1
                    end = start
                    while end < characters.count, characters[end] != ">", characters[end] != "\n" { end += 1 }
                } else {
                    while end < characters.count, !")\n\t ".unicodeScalars.contains(characters[end]) { end += 1 }
                }
                let target = String(String.UnicodeScalarView(characters[start..<end]))
                if !target.isEmpty, !target.hasPrefix("#"), !target.contains(":") { found.append(target) }
                index = end
                continue
            }
            index += 1
        }
        return found
    }
}

import Foundation
