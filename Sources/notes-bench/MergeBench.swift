import Merge

/// The 3-way merge of one large note: a base of `n` blocks shaped like a real note (headings,
/// paragraphs with inline markup, nested lists, checklists, code), and two concurrent versions
/// that each edit 1% of the blocks (at least 5), scattered: rewrite a paragraph, insert one,
/// delete one, tick a checklist item. Times `NoteMerge.merge` alone on blocks already split,
/// as the replica calls it; `split` and `join` of the whole body are shown for context.
enum MergeBench {
    /// docs/benchmarks.md: a 2,000-block note merges in at most this long.
    static let targetMilliseconds = 2.0
    static let targetBlocks = 2_000

    struct Figure {
        /// The size asked for; `blocks` is what splitting the generated document gave.
        let requestedBlocks: Int
        let blocks: Int
        let editsPerSide: Int
        let runs: Int
        let median: Double
        let p95: Double
        let conflict: Bool
        let splitMedian: Double
        let joinMedian: Double
    }

    static func run() {
        Conditions.print(["in-process, release build; each size merged `runs` times after 3 warm-up runs"])
        let figures = [500, 2_000, 8_000].map { measure(blocks: $0) }
        table(figures).print()
        print("   worst case, both sides rewrote all 2000 blocks: median \(Measure.ms(rewrittenEverywhere(blocks: 2_000))) (conflict)")
    }

    static func table(_ figures: [Figure]) -> Table {
        var table = Table(["blocks", "edits/side", "merge p50", "p95", "per 1k blocks", "conflict", "split p50", "join p50", "runs", "target"])
        for figure in figures {
            let target = figure.requestedBlocks == targetBlocks ? "≤ 2 ms: \(Verdict.of(figure.median <= targetMilliseconds))" : ""
            table.add([
                "\(figure.blocks)", "\(figure.editsPerSide)", Measure.ms(figure.median), Measure.ms(figure.p95),
                Measure.ms(figure.median / Double(figure.blocks) * 1_000), figure.conflict ? "yes" : "no",
                Measure.ms(figure.splitMedian), Measure.ms(figure.joinMedian), "\(figure.runs)", target,
            ])
        }
        return table
    }

    /// The worst case for an O(ND) diff: both sides replaced every block (D = 2n per diff).
    private static func rewrittenEverywhere(blocks size: Int) -> Double {
        let base = Note(title: "Bench", body: (0..<size).map { Block.paragraph("base \($0)") })
        let a = Note(title: "Bench", body: (0..<size).map { Block.paragraph("a \($0)") })
        let b = Note(title: "Bench", body: (0..<size).map { Block.paragraph("b \($0)") })
        let versionA = Version(stamp: stamp(10, 1), record: .live(a))
        let versionB = Version(stamp: stamp(20, 2), record: .live(b))
        let times = Measure.repeatedly(runs: 5) { _ = NoteMerge.merge(note: RecordID(high: 1, low: 2), base: .live(base), versionA, versionB) }
        return Measure.percentile(times, 0.5)
    }

    static func measure(blocks size: Int) -> Figure {
        var content = NoteContent(seed: UInt64(size))
        var random = SplitMix64(seed: UInt64(size) &* 31)
        let html = content.body(blocks: size)
        let base = Note(title: "Bench", body: HTMLBlocks.split(html), created: 1, modified: 1)
        let edits = max(5, size / 100)
        let a = edited(base, edits: edits, side: "a", using: &random)
        let b = edited(base, edits: edits, side: "b", using: &random)
        let versionA = Version(stamp: stamp(10, 1), record: .live(a))
        let versionB = Version(stamp: stamp(20, 2), record: .live(b))
        let id = RecordID(high: 1, low: 2)

        let runs = max(20, 400_000 / size)
        var outcome: MergeOutcome?
        let mergeTimes = Measure.repeatedly(runs: runs) { outcome = NoteMerge.merge(note: id, base: .live(base), versionA, versionB) }
        let splitTimes = Measure.repeatedly(runs: max(5, runs / 10)) { _ = HTMLBlocks.split(html) }
        let joinTimes = Measure.repeatedly(runs: max(5, runs / 10)) { _ = HTMLBlocks.join(base.body) }
        return Figure(
            requestedBlocks: size, blocks: base.body.count, editsPerSide: edits, runs: runs, median: Measure.percentile(mergeTimes, 0.5),
            p95: Measure.percentile(mergeTimes, 0.95), conflict: outcome?.conflict != nil,
            splitMedian: Measure.percentile(splitTimes, 0.5), joinMedian: Measure.percentile(joinTimes, 0.5))
    }

    private static func edited(_ note: Note, edits: Int, side: String, using random: inout SplitMix64) -> Note {
        var note = note
        for edit in 0..<edits {
            let index = random.below(note.body.count)
            let block = note.body[index]
            switch random.below(4) {
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
}
