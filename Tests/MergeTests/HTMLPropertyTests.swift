import Testing
@testable import Merge

/// `split` on thousands of random documents, well-formed and not.
@Suite struct HTMLPropertyTests {
    @Test func splitIsStableThroughJoinAndLosesNoText() {
        for seed in Seeds.forProperty("splitIsStableThroughJoinAndLosesNoText", count: 3_000) {
            var random = SeededGenerator(seed: seed)
            let html = RandomHTML.document(using: &random)
            let blocks = HTMLBlocks.split(html)
            let rejoined = HTMLBlocks.join(blocks)
            #expect(HTMLBlocks.split(rejoined) == blocks,
                    "MERGE_SEED=\(seed): split(join(split(h))) != split(h)\nh = \(html)\njoin = \(rejoined)")
            let inputText = HTMLBlocks.text(html).filter { !$0.isWhitespace }
            let blockText = blocks.map(\.text).joined().filter { !$0.isWhitespace }
            #expect(inputText == blockText, "MERGE_SEED=\(seed): text lost or changed\nh = \(html)")
            for block in blocks {
                #expect((try? Block(encoded: block.encoded())) == block, "MERGE_SEED=\(seed): encoding round trip")
            }
        }
    }

    @Test func everyWordTokenSurvivesSplit() {
        // Tokens are the unit the merge's no-lost-text checks count; none may vanish in split.
        for seed in Seeds.forProperty("everyWordTokenSurvivesSplit", count: 1_000) {
            var random = SeededGenerator(seed: seed)
            let html = RandomHTML.document(using: &random)
            let expected = RandomHTML.tokens(in: HTMLBlocks.text(html))
            let found = RandomHTML.tokens(in: HTMLBlocks.split(html).map(\.text).joined(separator: " "))
            #expect(expected == found, "MERGE_SEED=\(seed): tokens differ\nh = \(html)")
        }
    }
}

/// Random HTML: editor-like structure mixed with fragments of broken markup.
enum RandomHTML {
    static func document(using random: inout some RandomNumberGenerator) -> String {
        var counter = 0
        var out = ""
        for _ in 0..<Int.random(in: 0...12, using: &random) {
            if random.chance(0.3) {
                out += fragment(&counter, using: &random)
            } else {
                out += block(depth: 0, &counter, using: &random)
            }
            if random.chance(0.3) { out += random.pick(["\n", " ", "\n\n  ", "\t"]) }
        }
        return out
    }

    static func tokens(in text: String) -> [String] {
        text.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init).filter { $0.hasPrefix("w") }.sorted()
    }

    private static func word(_ counter: inout Int) -> String {
        counter += 1
        return "w\(counter)"
    }

    private static func inline(_ counter: inout Int, using random: inout some RandomNumberGenerator) -> String {
        var out = ""
        for _ in 0..<Int.random(in: 0...5, using: &random) {
            switch Int.random(in: 0..<12, using: &random) {
            case 0: out += "<b>\(word(&counter))</b>"
            case 1: out += "<a href=\"https://x.org/?q=\(word(&counter))&amp;p=1\">\(word(&counter))</a>"
            case 2: out += "<span style='color: red'>\(word(&counter))</span>"
            case 3: out += "<br>"
            case 4: out += random.pick(["&amp;", "&lt;", "&gt;", "&nbsp;", "&#233;", "&#x1F600;", "&bogus;", "&amp"])
            case 5: out += random.pick([" < ", "<3", "a<b", "x > y", "\"", "'", "="])
            case 6: out += "<!-- \(word(&counter)) -->"
            case 7: out += "<EM>\(word(&counter))</EM>"
            case 8: out += "<code>\(word(&counter)) &lt;T&gt;</code>"
            case 9: out += random.pick(["é", "日本", "🙂", "\u{A0}"])
            default: out += " \(word(&counter)) "
            }
        }
        return out
    }

    private static func block(depth: Int, _ counter: inout Int, using random: inout some RandomNumberGenerator) -> String {
        let close = !random.chance(0.1)
        switch Int.random(in: 0..<11, using: &random) {
        case 0, 1: return "<p>\(inline(&counter, using: &random))" + (close ? "</p>" : "")
        case 2: return "<h\(Int.random(in: 1...6, using: &random))>\(inline(&counter, using: &random))</h\(Int.random(in: 1...6, using: &random))>"
        case 3: return list(depth: depth, &counter, using: &random)
        case 4: return "<pre><code>\(word(&counter)) if a < b { c<d }\n  \(word(&counter)) &lt;x&gt;</code>" + (close ? "</pre>" : "")
        case 5: return "<blockquote><p>\(inline(&counter, using: &random))</p>\(inline(&counter, using: &random))" + (close ? "</blockquote>" : "")
        case 6: return "<hr>"
        case 7:
            guard depth < 3 else { return "<div>\(inline(&counter, using: &random))</div>" }
            return "<div class=\"w\">\(block(depth: depth + 1, &counter, using: &random))\(block(depth: depth + 1, &counter, using: &random))" + (close ? "</div>" : "")
        case 8: return "<table><tr><td>\(word(&counter))</td><td>\(inline(&counter, using: &random))</td></tr>" + (close ? "</table>" : "")
        case 9: return "<div>\(inline(&counter, using: &random))" + (close ? "</div>" : "")
        default: return inline(&counter, using: &random)
        }
    }

    private static func list(depth: Int, _ counter: inout Int, using random: inout some RandomNumberGenerator) -> String {
        let tag = random.pick(["ul", "ol", "UL"])
        let attributes = random.pick(["", " data-checked=\"true\"", " class=checklist", " start=3"])
        var out = "<\(tag)\(attributes)>"
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            let item = random.pick(["<li>", "<li data-checked=\"false\">", "<li><input type=checkbox checked> ", "<LI class='checked'>"])
            out += item + inline(&counter, using: &random)
            if depth < 3, random.chance(0.3) { out += list(depth: depth + 1, &counter, using: &random) }
            if random.chance(0.2) { out += inline(&counter, using: &random) }
            if random.chance(0.8) { out += "</li>" }
        }
        if random.chance(0.9) { out += "</\(tag)>" }
        return out
    }

    private static func fragment(_ counter: inout Int, using random: inout some RandomNumberGenerator) -> String {
        var out = ""
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            out += random.pick([
                "<", "</", "<!--", "-->", "<!", "<?x", ">", "&", "&#", "<p", "<p ", "<div>", "</div>", "<ul>", "</ul>",
                "<li>", "</li>", "</p>", "<b>", "</i>", "<script>", "</script>", "<pre>", "</pre>", "<h2>", "</h3>",
                "<blockquote>", "</blockquote>", "<td>", "<a href=\"", "\"", "'", "=", " ", "\n", "<br/>", "<hr/>",
                "<ol start=2>", "</ol>", "<table>", "</table>", "<body>", "</html>", "<p =x>", "<li \"q\">",
                "<!DOCTYPE html>", "<style>", "</style>",
            ])
            if random.chance(0.5) { out += word(&counter) }
        }
        return out
    }
}
