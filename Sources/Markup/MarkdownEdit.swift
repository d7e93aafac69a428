import Merge

/// An edit made in Markdown, turned back into blocks without rewriting what the person did not
/// touch (docs/markdown.md, "Editing in Markdown").
///
/// The merge compares blocks by their HTML, so converting a whole edited text through
/// cmark-gfm would turn `<b>` into `<strong>`, drop attributes and colours, and make every
/// block "changed" — a conflict copy against any concurrent edit. Instead both texts, the
/// Markdown shown (`HTMLBlocks.markdown(base)`) and the edited one, are cut into units — a
/// top-level block, or one list item — by cmark-gfm's source positions; the units are diffed
/// by their text, and only units the person changed or added are converted. A unit left as it
/// was shown gives back the base blocks it was written from, byte for byte.
public enum MarkdownEdit {
    /// The body after the person turned the Markdown of `base` into `edited`.
    public static func apply(_ edited: String, to base: [Block]) -> [Block] {
        let (shown, startLines) = MarkdownExport.markdownWithLines(base)
        let edited = MarkdownImport.normalized(edited)
        if trimmedLines(edited) == trimmedLines(shown) { return base }

        let baseUnits = units(of: shown, convert: false)
        let editedUnits = units(of: edited, convert: true)
        guard !baseUnits.isEmpty else { return editedUnits.flatMap(\.blocks) }

        // Which base blocks each base unit was written from. A block with nothing written
        // (an empty paragraph) goes with the next block written; one past the last, with the
        // last unit.
        var owned = [[Int]](repeating: [], count: baseUnits.count)
        /// Per block: the units its Markdown spans (one, unless cmark-gfm read it as several).
        var spans = [Range<Int>](repeating: 0..<0, count: base.count)
        var pending: [Int] = []
        var unit = 0
        var written: [(block: Int, unit: Int)] = []
        for (index, line) in startLines.enumerated() {
            guard let line else {
                pending.append(index)
                continue
            }
            while unit + 1 < baseUnits.count, baseUnits[unit + 1].startLine <= line { unit += 1 }
            owned[unit] += pending + [index]
            pending = []
            written.append((index, unit))
        }
        owned[baseUnits.count - 1] += pending
        for (position, entry) in written.enumerated() {
            let end = position + 1 < written.count ? max(written[position + 1].unit, entry.unit + 1) : baseUnits.count
            spans[entry.block] = entry.unit..<end
        }

        let hunks = Diff.hunks(from: baseUnits.map(\.text), to: editedUnits.map(\.text))
        var matched = [Bool](repeating: true, count: baseUnits.count)
        for hunk in hunks { for index in hunk.old { matched[index] = false } }
        /// A base unit is kept when it and every unit its blocks span are unchanged.
        func intact(_ unit: Int) -> Bool {
            owned[unit].allSatisfy { block in spans[block].isEmpty || spans[block].allSatisfy { matched[$0] } }
        }

        var result: [Block] = []
        var oldIndex = 0, newIndex = 0
        func copyCommon(upTo oldEnd: Int) {
            while oldIndex < oldEnd {
                if intact(oldIndex) {
                    result += owned[oldIndex].map { base[$0] }
                } else {
                    result += editedUnits[newIndex].blocks
                }
                oldIndex += 1
                newIndex += 1
            }
        }
        for hunk in hunks {
            copyCommon(upTo: hunk.old.lowerBound)
            // An item only ticked or unticked keeps its own form (a TipTap `data-checked` stays
            // one), so the tick merges like a tick made in the editor.
            for (offset, new) in hunk.new.enumerated() {
                let old = hunk.old.lowerBound + offset
                let tick = old < hunk.old.upperBound ? ticked(baseUnits[old], owned[old].map { base[$0] }, editedUnits[new]) : nil
                result += tick ?? editedUnits[new].blocks
            }
            oldIndex = hunk.old.upperBound
            newIndex = hunk.new.upperBound
        }
        copyCommon(upTo: baseUnits.count)
        return result
    }

    /// `blocks` (one checklist item) with its state changed, when `edited` differs from `shown`
    /// only in the item's checkbox.
    static func ticked(_ shown: Unit, _ blocks: [Block], _ edited: Unit) -> [Block]? {
        guard blocks.count == 1, edited.blocks.count == 1, let was = blocks[0].checked, let now = edited.blocks[0].checked, was != now
        else { return nil }
        let from = was ? ["[x]", "[X]"] : ["[ ]"]
        guard let marker = from.first(where: { shown.text.contains($0) }),
              shown.text.replacing(marker, with: now ? "[x]" : "[ ]", maxReplacements: 1) == edited.text.replacing("[X]", with: "[x]", maxReplacements: 1)
        else { return nil }
        return blocks[0].withChecked(now).map { [$0] }
    }

    /// A piece of Markdown that is one block of the model: a top-level block, or one list item
    /// (its own lines, up to the next item or block).
    struct Unit {
        var startLine: Int
        /// Its lines, trailing whitespace and blank lines dropped: what is compared.
        var text: String
        /// What it converts to (only when asked for).
        var blocks: [Block]
    }

    static func units(of markdown: String, convert: Bool) -> [Unit] {
        let document = CmarkDocument(markdown)
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false)
        let nodes = document.topLevelNodes
        /// Start lines and blocks of the units, in order.
        var pieces: [(start: Int, blocks: [Block])] = []
        for node in nodes {
            let blocks = convert || node.isList ? HTMLBlocks.split(node.html) : []
            guard node.isList else {
                pieces.append((node.startLine, blocks))
                continue
            }
            var items: [CmarkNode] = []
            collectItems(of: node, into: &items)
            // One block per item (the usual case) lets each item be its own unit; otherwise
            // (content after a nested list, an item the splitter reads differently) the list is one.
            if blocks.count == items.count, blocks.allSatisfy({ $0.depth > 0 }) {
                for (item, block) in zip(items, blocks) { pieces.append((item.startLine, convert ? [block] : [])) }
            } else {
                pieces.append((node.startLine, convert ? blocks : []))
            }
        }
        var units: [Unit] = []
        for (index, piece) in pieces.enumerated() {
            let end = index + 1 < pieces.count ? pieces[index + 1].start : lines.count + 1
            let start = max(piece.start, 1)
            let text = start < end ? lines[(start - 1)..<min(end - 1, lines.count)].joined(separator: "\n") : ""
            units.append(Unit(startLine: start, text: trimmedLines(text), blocks: piece.blocks))
        }
        return units
    }

    private static func collectItems(of list: CmarkNode, into items: inout [CmarkNode]) {
        for item in list.children where item.isItem {
            items.append(item)
            for child in item.children where child.isList { collectItems(of: child, into: &items) }
        }
    }

    /// `text` with trailing whitespace dropped from every line, and blank lines from the end.
    static func trimmedLines(_ text: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed()
        }.map { String($0) }
        while let last = lines.last, last.isEmpty { lines.removeLast() }
        return lines.joined(separator: "\n")
    }
}
