import Control
import Foundation
import Testing
@testable import notesctl

/// How `notesctl log`, `log --patch`, a kept purge and a backup read.
@Suite struct HistoryRenderTests {
    let render = Render(time: TimeText(now: Date(timeIntervalSince1970: 1_715_000_000)))

    static let restored = HistoryEntry(
        revision: String(repeating: "ef", count: 32), parents: [String(repeating: "cd", count: 32)], hlc: "1715000001000.0",
        time: Timestamp(rawValue: 1_715_000_001_000), device: "AAAABBBBCCCC", deviceShort: "AAAABBBB", deviceName: "laptop",
        title: "Groceries", changes: [.body], restoredFrom: String(repeating: "ab", count: 32),
        patch: [BlockChange(op: .removed, html: "<p>milk</p>", text: "milk"), BlockChange(op: .added, html: "<p>oat\nmilk</p>", text: "oat\nmilk")])
    static let erased = HistoryEntry(
        revision: String(repeating: "ab", count: 32), parents: [], hlc: "1.0", time: Timestamp(rawValue: 1), device: nil,
        deviceShort: nil, deviceName: nil, title: "", changes: [.created], erased: true)

    @Test func theLogSaysWhereARestoreCameFromAndWhatAPurgeErased() {
        let output = render.history([Self.restored, Self.erased])
        #expect(output.contains("restored from abababababab"))
        #expect(output.contains("(erased by a permanent delete)"))
    }

    @Test func aPatchIsOneSignedLinePerLineOfBlockText() {
        let output = render.historyWithPatches([Self.restored, Self.erased])
        #expect(output.contains("revision " + String(repeating: "ef", count: 32)))
        #expect(output.contains("\n- milk\n+ oat\n+ milk"))
        #expect(output.contains("(content erased by a permanent delete)"))
    }

    @Test func aKeptPurgeNamesWhoChangedTheNote() {
        let output = render.keptPurge(PurgeResult(id: Samples.note.id, purged: false, unseen: [Self.restored]), note: Samples.note)
        #expect(output.contains("it was changed on laptop after you opened it"))
        #expect(output.contains("Nothing was deleted"))
    }
}
