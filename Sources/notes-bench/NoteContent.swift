import Merge

extension SplitMix64 {
    /// A number in `0..<bound`, for picking among a few items (the modulo bias is harmless
    /// here and keeps every run's choices identical).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// Note bodies shaped like what a rich-text editor writes: mostly paragraphs with some inline
/// markup and links, headings, nested bullet lists, checklists (the TipTap task-list markup)
/// and code blocks. Words come from a vocabulary at random, so no two paragraphs of a library
/// are equal by accident (equal blocks would be stored and sent once, flattering every figure).
struct NoteContent {
    private var random: SplitMix64
    private var serial = 0

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    /// A body of about `blocks` blocks (a list adds up to three at once).
    mutating func body(blocks: Int) -> String {
        var html = ""
        var count = 0
        while count < blocks {
            switch random.below(20) {
            case 0:
                html += "<h2>\(sentence(4))</h2>"
                count += 1
            case 1, 2:
                html += "<ul><li>\(sentence(8))<ul><li>\(sentence(6))</li></ul></li><li>\(sentence(8))</li></ul>"
                count += 3
            case 3:
                html += "<ul data-type=\"taskList\">"
                for _ in 0..<3 {
                    let checked = random.below(3) == 0
                    html += "<li data-type=\"taskItem\" data-checked=\"\(checked)\"><label><input type=\"checkbox\"\(checked ? " checked=\"checked\"" : "")><span></span></label><div><p>\(sentence(5))</p></div></li>"
                }
                html += "</ul>"
                count += 3
            case 4:
                let name = word() + String(random.below(1_000))
                html += "<pre><code>let \(name) = compute(\(word()) &lt; \(word()))\nprint(\(name))</code></pre>"
                count += 1
            default:
                html += paragraph()
                count += 1
            }
        }
        return html
    }

    /// One `<p>` of 18 words, some bold or linked.
    mutating func paragraph() -> String { "<p>\(sentence(18))</p>" }

    /// A title of two to five words, capitalised, numbered so titles stay distinct.
    mutating func title() -> String {
        serial += 1
        let text = sentence(2 + random.below(4), markup: false)
        return text.prefix(1).uppercased() + text.dropFirst() + " \(serial)"
    }

    private mutating func sentence(_ words: Int, markup: Bool = true) -> String {
        (0..<words).map { _ in
            let text = word()
            guard markup else { return text }
            switch random.below(12) {
            case 0: return "<b>\(text)</b>"
            case 1: return "<a href=\"https://example.org/\(text)/\(random.below(10_000))\">\(text)</a>"
            default: return text
            }
        }.joined(separator: " ")
    }

    private mutating func word() -> String { Self.vocabulary[random.below(Self.vocabulary.count)] }

    private static let vocabulary: [String] = """
        the of and to in is that for it as was with be by on not he this are or his from at which but have an they
        you were her she there been one all we their has would when if so no what up said out its about into them
        can only other time new some could these two may first then do any like my now over such our man me even
        most made after also did many before must through back years where much your way well down should because
        each just those people how too little state good very make world still own see men work long get here
        between both life being under never day same another know while last might us great old year off come
        since against go came right used take three himself few house use during without again place around however
        home small found thought went say part once general high upon school every does got united left number
        course war until always away something fact though water less public put think almost hand enough far took
        head yet government system better set told nothing night end why called didn eyes find going look asked
        later knew point next program city business give group toward young days let room president side social
        given present several order national possible rather second face per among form important often things
        looked early white case john become large big need four within felt along children saw best church ever
        least power development light thing seemed family interest want members others mind country area done
        garden kitchen market letter window morning evening recipe travel budget project meeting notes plan list
        """.split(whereSeparator: \.isWhitespace).map(String.init)
}

/// A library of notes as a user would import it: titles and HTML bodies, with the block count
/// of each body drawn so that the whole averages about 1.5 KB of HTML per note.
struct GeneratedNote {
    let title: String
    let html: String
}

enum LibraryGenerator {
    /// `count` notes, the same for the same seed.
    static func notes(_ count: Int, seed: UInt64) -> [GeneratedNote] {
        var content = NoteContent(seed: seed)
        var sizes = SplitMix64(seed: seed ^ 0x5EED)
        return (0..<count).map { _ in
            // 2…16 blocks, mean 9: about 1.5 KB of HTML.
            GeneratedNote(title: content.title(), html: content.body(blocks: 2 + sizes.below(15)))
        }
    }

    /// The body with the paragraph at `index` (counted among the body's paragraphs, wrapping)
    /// replaced by `paragraph`; a body without paragraphs gets it appended. Returns the new
    /// body and the block that changed, as `HTMLBlocks.split` makes it.
    static func replacingParagraph(in body: [Block], choosing index: Int, with paragraph: String) -> (body: [Block], changed: Block) {
        let replacement = HTMLBlocks.split(paragraph)[0]
        var body = body
        let paragraphs = body.indices.filter { body[$0].kind == .paragraph }
        if paragraphs.isEmpty {
            body.append(replacement)
        } else {
            body[paragraphs[index % paragraphs.count]] = replacement
        }
        return (body, replacement)
    }
}
