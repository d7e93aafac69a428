import Foundation
import Testing
import Markup
import Merge

/// blocks → Markdown → cmark-gfm → blocks (docs/markdown.md, "Round trip").
@Suite struct RoundTripPropertyTests {
    /// For documents Markdown can express — blocks as cmark-gfm itself writes them — the round
    /// trip is the identity.
    @Test func markdownExpressibleDocumentsComeBackIdentical() {
        for seed in Seeds.forProperty("markdownExpressibleDocumentsComeBackIdentical", count: 400) {
            var random = SplitMix64(seed: seed)
            let html = CanonicalDocument.html(using: &random)
            let blocks = HTMLBlocks.split(html)
            let markdown = HTMLBlocks.markdown(blocks)
            let back = MarkdownImport.blocks(markdown)
            let plain = MarkdownExport.markdown(blocks)
            #expect(MarkdownImport.blocks(plain) == blocks, "seed \(seed): the plainer Markdown reads differently:\n\(plain)")
            if back != blocks {
                let first = blocks.indices.first { $0 >= back.count || blocks[$0] != back[$0] } ?? blocks.count
                let wanted = first < blocks.count ? "\(blocks[first].kind) \(blocks[first].content)" : "nothing"
                let got = first < back.count ? "\(back[first].kind) \(back[first].content)" : "nothing"
                Issue.record("seed \(seed) (MARKDOWN_SEED=\(seed) replays it): block \(first) should be\n\(wanted)\nbut is\n\(got)\nMarkdown:\n\(markdown)")
                return
            }
        }
    }

    /// For any document an editor writes (`<b>`, colours, TipTap checklists, `<div>`s, tables,
    /// nested quotes), no word is lost on the way through Markdown.
    @Test func noTextIsLostForAnyDocument() {
        for seed in Seeds.forProperty("noTextIsLostForAnyDocument", count: 300) {
            var random = SplitMix64(seed: seed)
            let html = EditorDocument.html(using: &random)
            let blocks = HTMLBlocks.split(html)
            let markdown = HTMLBlocks.markdown(blocks)
            let back = MarkdownImport.blocks(markdown)
            let before = words(blocks), after = words(back)
            #expect(before == after, "seed \(seed)\nHTML:\n\(html)\nMarkdown:\n\(markdown)")
            if before != after { return }
        }
    }

    private func words(_ blocks: [Block]) -> [Substring] {
        blocks.map(\.text).joined(separator: " ").split(whereSeparator: \.isWhitespace)
    }
}

enum Seeds {
    /// `MARKDOWN_SEED=n` replays one seed; otherwise `count` seeds derived from `name`.
    static func forProperty(_ name: String, count: Int) -> [UInt64] {
        if let replay = ProcessInfo.processInfo.environment["MARKDOWN_SEED"].flatMap(UInt64.init) { return [replay] }
        var base: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { base = (base ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return (0..<UInt64(count)).map { base &+ $0 }
    }
}

extension RandomNumberGenerator {
    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }
    mutating func pick<T>(_ options: [T]) -> T { options[Int.random(in: 0..<options.count, using: &self)] }
    mutating func count(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
}

/// Random documents in exactly the HTML cmark-gfm writes, built from what `HTMLBlocks.markdown`
/// can say: tight lists (nested, numbered from any start, task items), headings, paragraphs
/// with marks, links, images, code spans and hard breaks, fenced code, quotes, rules, tables.
enum CanonicalDocument {
    /// Words, including ones full of Markdown syntax that the writer must escape.
    static let words = [
        "milk", "eggs", "café", "naïve", "日本語", "😀", "a*b", "_under_", "[x]", "[[Link]]", "#tag", "1.", "2)", "-",
        "+", "=", ">", "<", "&", "a&b", "&amp;", "\"quoted\"", "it's", "back\\slash", "tick`s", "~tilde~", "|pipe|",
        "**", "x_y", "(paren)", "!bang", "*", "10.5", "#", "<div>", "&#42;", "1986.", "--", "__init__",
    ]
    static let plainWords = ["alpha", "beta", "gamma", "delta", "one", "two", "Zürich", "end"]

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }

    static func html<R: RandomNumberGenerator>(using random: inout R) -> String {
        blocks(using: &random, count: random.count(1...8), quoteDepth: 0) + "\n"
    }

    /// Two lists in a row are one list to the block model (`join` writes them as one): a
    /// paragraph goes between them, as in any document Markdown can write.
    static func blocks<R: RandomNumberGenerator>(using random: inout R, count: Int, quoteDepth: Int) -> String {
        var out: [String] = []
        for _ in 0..<count {
            let next = block(using: &random, quoteDepth: quoteDepth)
            if next.hasPrefix("<ul") || next.hasPrefix("<ol"), let last = out.last, last.hasSuffix("</ul>") || last.hasSuffix("</ol>") {
                out.append("<p>between</p>")
            }
            out.append(next)
        }
        return out.joined(separator: "\n")
    }

    static func block<R: RandomNumberGenerator>(using random: inout R, quoteDepth: Int) -> String {
        switch random.count(0...9) {
        case 0:
            let level = random.count(1...6)
            return "<h\(level)>\(inline(using: &random, breaks: false))</h\(level)>"
        case 1, 2: return "<p>\(inline(using: &random, breaks: true))</p>"
        case 3, 4: return list(using: &random, depth: 1, tasksAllowed: quoteDepth == 0)
        case 5: return code(using: &random)
        case 6 where quoteDepth < 2:
            return "<blockquote>\n" + blocks(using: &random, count: random.count(1...3), quoteDepth: quoteDepth + 1) + "\n</blockquote>"
        case 7: return "<hr />"
        case 8: return table(using: &random)
        default: return "<p>\(inline(using: &random, breaks: true))</p>"
        }
    }

    static func inline<R: RandomNumberGenerator>(using random: inout R, breaks: Bool) -> String {
        var pieces: [String] = []
        for _ in 0..<random.count(1...7) {
            let index = pieces.count
            switch random.count(0...11) {
            case 0: pieces.append("<strong>\(plain(using: &random))</strong>")
            case 1: pieces.append("<em>\(plain(using: &random))</em>")
            case 2: pieces.append("<del>\(plain(using: &random))</del>")
            case 3: pieces.append("<strong>\(plain(using: &random)) <em>\(plain(using: &random))</em> \(plain(using: &random))</strong>")
            case 4: pieces.append("<code>\(escape(random.pick(["a < b", "x*y", "`tick`", "f(x)", "a  b", "&amp;"])))</code>")
            case 5: pieces.append("<a href=\"\(escape(random.pick(["https://example.org/a", "https://example.org/p?q=1&r=2", "notes/other.md", "#anchor"])))\">\(plain(using: &random))</a>")
            case 6: pieces.append("<img src=\"pic.png\" alt=\"\(plain(using: &random))\" />")
            case 7 where breaks && index > 0: pieces[index - 1] += "<br />\n" + escape(random.pick(plainWords))
            default: pieces.append(escape(random.pick(words)))
            }
        }
        return pieces.joined(separator: " ")
    }

    static func plain<R: RandomNumberGenerator>(using random: inout R) -> String {
        (0..<random.count(1...3)).map { _ in random.pick(plainWords) }.joined(separator: " ")
    }

    /// cmark-gfm reads no task items inside a quote (`> - [ ] a` is the text "[ ] a").
    static func list<R: RandomNumberGenerator>(using random: inout R, depth: Int, tasksAllowed: Bool) -> String {
        let ordered = random.chance(0.4)
        let tasks = tasksAllowed && !ordered && random.chance(0.5)
        // A nested numbered list starting past 1 cannot interrupt its item's text in CommonMark.
        let start = ordered && depth == 1 && random.chance(0.3) ? random.count(2...12) : 1
        var out = ordered ? (start == 1 ? "<ol>\n" : "<ol start=\"\(start)\">\n") : "<ul>\n"
        for _ in 0..<random.count(1...4) {
            var item = "<li>"
            if tasks { item += random.chance(0.5) ? "<input type=\"checkbox\" checked=\"\" disabled=\"\" /> " : "<input type=\"checkbox\" disabled=\"\" /> " }
            item += inline(using: &random, breaks: false)
            if depth < 3, random.chance(0.25) { item += "\n" + list(using: &random, depth: depth + 1, tasksAllowed: tasksAllowed) + "\n" }
            out += item + "</li>\n"
        }
        return out + (ordered ? "</ol>" : "</ul>")
    }

    static func code<R: RandomNumberGenerator>(using random: inout R) -> String {
        let language = random.pick(["", "swift", "sh", "c++"])
        let lines = (0..<random.count(0...4)).map { _ in
            random.pick(["let a = 1 < 2", "  indented", "", "```", "# not a heading", "\tTab", "x & y \"q\""])
        }
        let open = language.isEmpty ? "<pre><code>" : "<pre><code class=\"language-\(language)\">"
        return open + lines.map { escape($0) + "\n" }.joined() + "</code></pre>"
    }

    static func table<R: RandomNumberGenerator>(using random: inout R) -> String {
        let columns = random.count(1...3)
        var out = "<table>\n<thead>\n<tr>\n"
        for _ in 0..<columns { out += "<th>\(escape(random.pick(plainWords)))</th>\n" }
        out += "</tr>\n</thead>\n<tbody>\n"
        for _ in 0..<random.count(1...3) {
            out += "<tr>\n"
            for _ in 0..<columns { out += "<td>\(escape(random.pick(plainWords)))</td>\n" }
            out += "</tr>\n"
        }
        return out + "</tbody>\n</table>"
    }
}

/// Random documents as editors write them: what Markdown can say only in meaning.
enum EditorDocument {
    static func html<R: RandomNumberGenerator>(using random: inout R) -> String {
        var out = ""
        for _ in 0..<random.count(1...8) {
            let text = { (random: inout R) in
                (0..<random.count(1...5)).map { _ in CanonicalDocument.escape(random.pick(CanonicalDocument.words + CanonicalDocument.plainWords)) }
                    .joined(separator: " ")
            }
            switch random.count(0...9) {
            case 0: out += "<p>Buy <b>\(text(&random))</b> <span style=\"color: #c00\">\(text(&random))</span></p>"
            case 1: out += "<div>\(text(&random))<br>\(text(&random))</div>"
            case 2: out += "<ul data-type=\"taskList\"><li data-checked=\"true\"><label><input type=\"checkbox\" checked></label><div><p>\(text(&random))</p></div></li><li data-checked=\"false\"><p>\(text(&random))</p></li></ul>"
            case 3: out += "<blockquote><p>\(text(&random))</p><blockquote><p>\(text(&random))</p></blockquote></blockquote>"
            case 4: out += "<table><tr><td>\(text(&random))</td></tr></table>"
            case 5: out += "<p><br></p>"
            case 6: out += "<h3><u>\(text(&random))</u> <i>\(text(&random))</i></h3>"
            case 7: out += "<ol><li>\(text(&random))<ol><li><s>\(text(&random))</s></li></ol></li></ol>"
            case 8: out += "<pre>\(text(&random))\n  \(text(&random))</pre>"
            default: out += "<p>\(text(&random)) <a href=\"https://example.org/a b\">\(text(&random))</a> <code>\(text(&random))</code></p>"
            }
        }
        return out
    }
}
