import Merge

/// The 3-way merge of one large note: a base of `n` blocks shaped like a real note (headings,
/// paragraphs with inline markup, nested lists, checklists, code), and two concurrent versions
/// that each edit 1% of the blocks (at least 5), scattered: rewrite a paragraph, insert one,
/// delete one, tick a checklist item. Times `NoteMerge.merge` alone on blocks already split,
/// as the replica calls it; `split` and `join` of the whole body are shown for context.
enum MergeBench {
    static func run() {
        print("   blocks   edits/side   merge median    p95   per 1k blocks   conflict   split median   join median   runs")
        for size in [500, 2_000, 8_000] { measure(blocks: size) }
        rewrittenEverywhere(blocks: 2_000)
    }

    /// The worst case for an O(ND) diff: both sides replaced every block (D = 2n per diff).
    private static func rewrittenEverywhere(blocks size: Int) {
        let base = Note(title: "Bench", body: (0..<size).map { Block.paragraph("base \($0)") })
        let a = Note(title: "Bench", body: (0..<size).map { Block.paragraph("a \($0)") })
        let b = Note(title: "Bench", body: (0..<size).map { Block.paragraph("b \($0)") })
        let versionA = Version(stamp: stamp(10, 1), record: .live(a))
        let versionB = Version(stamp: stamp(20, 2), record: .live(b))
        let times = time(runs: 5) { _ = NoteMerge.merge(note: RecordID(high: 1, low: 2), base: .live(base), versionA, versionB) }
        print("   worst case, both sides rewrote all \(size) blocks: median \(format(percentile(times, 0.5))) ms (conflict)")
    }

    private static func measure(blocks size: Int) {
        var random = BenchRandom(seed: UInt64(size))
        let html = document(blocks: size, using: &random)
        let base = Note(title: "Bench", body: HTMLBlocks.split(html), created: 1, modified: 1)
        let edits = max(5, size / 100)
        let a = edited(base, edits: edits, side: "a", using: &random)
        let b = edited(base, edits: edits, side: "b", using: &random)
        let versionA = Version(stamp: stamp(10, 1), record: .live(a))
        let versionB = Version(stamp: stamp(20, 2), record: .live(b))
        let id = RecordID(high: 1, low: 2)

        let runs = max(20, 400_000 / size)
        var outcome: MergeOutcome?
        let mergeTimes = time(runs: runs) { outcome = NoteMerge.merge(note: id, base: .live(base), versionA, versionB) }
        let splitTimes = time(runs: max(5, runs / 10)) { _ = HTMLBlocks.split(html) }
        let joinTimes = time(runs: max(5, runs / 10)) { _ = HTMLBlocks.join(base.body) }

        let median = percentile(mergeTimes, 0.5)
        print(pad("\(base.body.count)", 9) + pad("\(edits)", 13) + pad(format(median) + " ms", 15)
              + pad(format(percentile(mergeTimes, 0.95)) + " ms", 10)
              + pad(format(median / Double(base.body.count) * 1_000) + " ms", 16)
              + pad(outcome?.conflict == nil ? "no" : "yes", 11)
              + pad(format(percentile(splitTimes, 0.5)) + " ms", 15) + pad(format(percentile(joinTimes, 0.5)) + " ms", 14)
              + "\(runs)")
    }

    /// Milliseconds per run, after a warm-up.
    private static func time(runs: Int, _ body: () -> Void) -> [Double] {
        for _ in 0..<3 { body() }
        let clock = ContinuousClock()
        return (0..<runs).map { _ in
            let duration = clock.measure(body)
            return Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
        }
    }

    private static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction + 0.5))]
    }

    private static func document(blocks: Int, using random: inout BenchRandom) -> String {
        var html = ""
        var index = 0
        var word = 0
        func sentence(_ words: Int, _ random: inout BenchRandom) -> String {
            (0..<words).map { _ in
                word += 1
                switch random.next() % 12 {
                case 0: return "<b>word\(word)</b>"
                case 1: return "<a href=\"https://example.org/\(word)\">link\(word)</a>"
                default: return "word\(word)"
                }
            }.joined(separator: " ")
        }
        while index < blocks {
            switch random.next() % 20 {
            case 0:
                html += "<h2>\(sentence(4, &random))</h2>"
                index += 1
            case 1, 2:
                html += "<ul><li>\(sentence(8, &random))<ul><li>\(sentence(6, &random))</li></ul></li><li>\(sentence(8, &random))</li></ul>"
                index += 3
            case 3:
                html += "<ul data-type=\"taskList\">"
                for _ in 0..<3 {
                    html += "<li data-type=\"taskItem\" data-checked=\"false\"><label><input type=\"checkbox\"><span></span></label><div><p>\(sentence(5, &random))</p></div></li>"
                }
                html += "</ul>"
                index += 3
            case 4:
                html += "<pre><code>let value\(index) = compute(a &lt; b)\nprint(value\(index))</code></pre>"
                index += 1
            default:
                html += "<p>\(sentence(18, &random))</p>"
                index += 1
            }
        }
        return html
    }

    private static func edited(_ note: Note, edits: Int, side: String, using random: inout BenchRandom) -> Note {
        var note = note
        for edit in 0..<edits {
            let index = Int(random.next() % UInt64(note.body.count))
            let block = note.body[index]
            switch random.next() % 4 {
            case 0 where block.kind == .paragraph:
                note.body[index] = Block(.paragraph, content: block.content + " edited by \(side) \(edit)")
            case 1:
                note.body.insert(Block.paragraph("new paragraph from \(side) \(edit)"), at: index)
            case 2:
                note.body.remove(at: index)
            default:
                let ticked = block.attributes.map {
                    $0.name == "data-checked" ? HTMLAttribute(name: "data-checked", value: "true") : $0
                }
                note.body[index] = block.kind == .paragraph
                    ? Block(.paragraph, content: block.content + " (\(side))")
                    : Block(block.kind, attributes: ticked, content: block.content + " ")
            }
        }
        return note
    }

    private static func stamp(_ milliseconds: UInt64, _ revision: UInt8) -> Stamp {
        Stamp(hlc: HLC(milliseconds: milliseconds, counter: 0), revision: RevisionID(bytes: [UInt8](repeating: revision, count: 32))!)
    }

    private static func format(_ milliseconds: Double) -> String {
        let hundredths = Int((milliseconds * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : String(repeating: " ", count: width - text.count) + text + "  "
    }
}

/// SplitMix64, so every run measures the same documents and edits.
struct BenchRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
