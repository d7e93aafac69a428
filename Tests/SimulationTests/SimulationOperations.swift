import Engine
import EngineHarness
import Foundation
import Merge
@testable import Peer
import TestSupport

/// What simulated users do: every paragraph, checklist item and title carries a unique token,
/// so the end check can prove that no text was lost.
extension Simulation {
    func newToken() -> String {
        tokenCounter += 1
        return "tk\(tokenCounter)"
    }

    func newBlock() -> (Block, String) {
        let token = newToken()
        let html = random.chance(0.3)
            ? "<ul data-type=\"checklist\"><li data-checked=\"\(random.chance(0.5))\">item \(token)</li></ul>"
            : "<p>paragraph \(token) text</p>"
        return (HTMLBlocks.split(html)[0], token)
    }

    /// One user action on `node`, through its engine (one transaction, then `committed`
    /// pushes it to every session); tokens count as written only once the action returned.
    func operate(on node: VirtualLAN.Node, step: Int) throws {
        do {
            try lan.request(node) { core in try self.act(on: core, node) }
        } catch is SimulatedCrash {
            return
        }
    }

    private func act(on core: EngineCore, _ node: VirtualLAN.Node) throws {
        let replica = core.replica
        let time = core.now
        let notes = try replica.listNotes() + replica.listNotes(NoteFilter(trashed: true))
        let folders = try replica.listFolders()
        let roll = random.below(100)
        var newTokens: Set<String> = []
        var goneTokens: Set<String> = []
        var description = ""
        do {
            if notes.isEmpty || roll < 12 {
                let title = newToken()
                newTokens.insert(title)
                var body: [Block] = []
                for _ in 0..<(1 + random.below(4)) {
                    let (block, token) = newBlock()
                    body.append(block)
                    newTokens.insert(token)
                }
                let folder = random.chance(0.4) ? random.pick(folders)?.id : nil
                description = "create note \(title)"
                _ = try replica.createNote(title: "Note \(title)", body: body, folder: folder, tags: random.chance(0.3) ? ["t\(random.below(4))"] : [], now: time)
            } else if roll < 80, let summary = random.pick(notes), let note = try replica.note(summary.id) {
                var edit = NoteEdit()
                let choice = random.below(12)
                var body = note.body
                switch choice {
                case 0, 1, 2:  // add a paragraph or checklist item
                    let (block, token) = newBlock()
                    body.insert(block, at: random.below(body.count + 1))
                    newTokens.insert(token)
                    edit.body = body
                    description = "add \(token) to \(summary.id)"
                case 3:  // remove a block
                    guard !body.isEmpty else { return }
                    let removedBlock = body.remove(at: random.below(body.count))
                    goneTokens = Self.tokens(in: Note(body: [removedBlock]))
                    edit.body = body
                    description = "remove block from \(summary.id)"
                case 4, 5:  // rewrite a block: its old text goes, new text comes
                    guard !body.isEmpty else { return }
                    let index = random.below(body.count)
                    goneTokens = Self.tokens(in: Note(body: [body[index]]))
                    let (block, token) = newBlock()
                    body[index] = block
                    newTokens.insert(token)
                    edit.body = body
                    description = "rewrite block of \(summary.id) as \(token)"
                case 6:  // new title
                    let token = newToken()
                    goneTokens = Self.tokens(in: Note(title: note.title))
                    newTokens.insert(token)
                    edit.title = "Note \(token)"
                    description = "retitle \(summary.id) as \(token)"
                case 7 where body.contains(where: { $0.checked != nil }) && random.chance(0.5):
                    // Tick or untick a checklist item: same text, flipped state.
                    let items = body.indices.filter { body[$0].checked != nil }
                    let index = items[random.below(items.count)]
                    let item = body[index]
                    let flipped = item.attributes.map { attribute in
                        attribute.name == "data-checked" ? HTMLAttribute(name: "data-checked", value: item.checked == true ? "false" : "true") : attribute
                    }
                    body[index] = Block(item.kind, attributes: flipped, content: item.content)
                    edit.body = body
                    description = "tick an item of \(summary.id)"
                case 7:
                    edit.addTags = ["t\(random.below(4))"]
                    edit.removeTags = random.chance(0.5) ? ["t\(random.below(4))"] : []
                    description = "tag \(summary.id)"
                case 8:
                    edit.pinned = !note.pinned
                    edit.color = random.chance(0.5) ? .some(["red", "blue", nil][random.below(3)]) : nil
                    description = "pin/color \(summary.id)"
                case 9:
                    edit.folder = .some(random.chance(0.3) ? nil : random.pick(folders)?.id)
                    description = "move \(summary.id)"
                case 10:
                    edit.trashed = !note.trashed
                    description = "trash/restore \(summary.id)"
                default:
                    guard random.chance(0.3) else { return }
                    goneTokens = Self.tokens(in: note)
                    description = "purge \(summary.id)"
                    try replica.purgeNote(summary.id, now: time)
                    finish(newTokens, goneTokens, description, core, node)
                    return
                }
                _ = try replica.editNote(summary.id, edit, now: time)
            } else {
                let choice = random.below(4)
                switch choice {
                case 0:
                    description = "mkdir"
                    _ = try replica.createFolder(name: "F\(random.below(1000))", parent: random.chance(0.5) ? random.pick(folders)?.id : nil, now: time)
                case 1:
                    guard let folder = random.pick(folders) else { return }
                    description = "rename folder \(folder.id)"
                    try replica.renameFolder(folder.id, to: "R\(random.below(1000))", now: time)
                case 2:
                    guard let folder = random.pick(folders) else { return }
                    description = "move folder \(folder.id)"
                    do {
                        try replica.moveFolder(folder.id, to: random.chance(0.3) ? nil : random.pick(folders)?.id, now: time)
                    } catch ReplicaError.invalid {
                        return  // a move into itself, refused locally like the user would be
                    }
                default:
                    guard let folder = random.pick(folders), random.chance(0.4) else { return }
                    description = "rmdir \(folder.id)"
                    try replica.deleteFolder(folder.id, now: time)
                }
            }
        }
        finish(newTokens, goneTokens, description, core, node)
    }

    private func finish(_ newTokens: Set<String>, _ goneTokens: Set<String>, _ description: String, _ core: EngineCore, _ node: VirtualLAN.Node) {
        written.formUnion(newTokens)
        removed.formUnion(goneTokens)
        lan.trace.append("\(node.name): \(description)")
        core.committed(.local)
    }
}
