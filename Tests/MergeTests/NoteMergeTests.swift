import Testing
@testable import Merge

/// The field rules of `NoteMerge`, one by one, with realistic editor HTML.
@Suite struct NoteMergeTests {
    let id = Fixtures.noteID

    /// Merges both ways round, checks they agree exactly, and returns the outcome.
    func merge(_ base: Note?, _ a: Version<Note>, _ b: Version<Note>, sourceLocation: SourceLocation = #_sourceLocation) -> MergeOutcome {
        let outcome = NoteMerge.merge(note: id, base: base.map { .live($0) }, a, b)
        #expect(NoteMerge.merge(note: id, base: base.map { .live($0) }, b, a) == outcome, "not symmetric",
                sourceLocation: sourceLocation)
        return outcome
    }

    static let groceries = """
        <h1>Groceries</h1><p>For the weekend.</p>\
        <ul data-type="taskList">\
        <li data-type="taskItem" data-checked="false"><label><input type="checkbox"><span></span></label><div><p>Milk</p></div></li>\
        <li data-type="taskItem" data-checked="false"><label><input type="checkbox"><span></span></label><div><p>Eggs</p></div></li>\
        <li data-type="taskItem" data-checked="false"><label><input type="checkbox"><span></span></label><div><p>Bread</p></div></li>\
        </ul><p>Shop closes at six.</p>
        """

    func ticked(_ html: String, _ item: String) -> String {
        html.replacing(
            #"data-checked="false"><label><input type="checkbox"><span></span></label><div><p>\#(item)"#,
            with: #"data-checked="true"><label><input type="checkbox" checked="checked"><span></span></label><div><p>\#(item)"#)
    }

    @Test func tickingDifferentChecklistItemsMergesCleanly() {
        let base = Fixtures.note("Shopping", Self.groceries)
        let a = Fixtures.note("Shopping", ticked(Self.groceries, "Milk"))
        let b = Fixtures.note("Shopping", ticked(Self.groceries, "Bread"))
        let outcome = merge(base, Fixtures.version(a, at: 10), Fixtures.version(b, at: 20))
        #expect(outcome.conflict == nil)
        let body = outcome.merged.live?.body ?? []
        #expect(body.filter { $0.depth == 1 }.map(\.checked) == [true, false, true])
        #expect(outcome.merged.live?.body == HTMLBlocks.split(ticked(ticked(Self.groceries, "Milk"), "Bread")))
    }

    @Test func editingDifferentParagraphsAndAddingBesideThemMergesCleanly() {
        let html = "<h2>Plan</h2><p>Monday: gym.</p><p>Tuesday: swim.</p><pre><code>let x = 1 &lt; 2</code></pre><table><tr><td>cost</td></tr></table>"
        let base = Fixtures.note("Week", html)
        let a = Fixtures.note("Week", html
            .replacing("Monday: gym.", with: "Monday: gym, then <b>sauna</b>.")
            .replacing("<td>cost</td>", with: "<td>cost: 12</td>"))
        let b = Fixtures.note("Week", html
            .replacing("Tuesday: swim.", with: "Tuesday: swim 2 km.")
            .replacing("</code></pre>", with: "\nlet y = x</code></pre><p>Wednesday: rest.</p>"))
        let outcome = merge(base, Fixtures.version(a, at: 10), Fixtures.version(b, at: 20))
        #expect(outcome.conflict == nil)
        #expect(outcome.merged.live?.body == HTMLBlocks.split("""
            <h2>Plan</h2><p>Monday: gym, then <b>sauna</b>.</p><p>Tuesday: swim 2 km.</p>\
            <pre><code>let x = 1 &lt; 2\nlet y = x</code></pre><p>Wednesday: rest.</p>\
            <table><tr><td>cost: 12</td></tr></table>
            """))
    }

    @Test func bothEditingOneParagraphIsAConflictWithACopy() throws {
        let folder = Fixtures.folderID(1)
        let base = Fixtures.note("Letter", "<p>Dear Ann,</p><p>See you soon.</p>", folder: folder, tags: ["mail"])
        var early = Fixtures.note("Letter", "<p>Dear Ann,</p><p>See you on Sunday.</p><p>P.S. bring cake</p>", folder: folder, tags: ["mail"])
        early.pinned = true
        early.color = "yellow"
        let late = Fixtures.note("Letter", "<p>Dear Ann,</p><p>See you next week.</p>", folder: Fixtures.folderID(2), tags: ["mail"])
        let outcome = merge(base, Fixtures.version(early, at: 10, revision: 9), Fixtures.version(late, at: 20, revision: 1))
        let merged = try #require(outcome.merged.live)
        // The later stamp wins the conflicting region: the earlier side replaced the paragraph
        // with two, which is one change of that region, so its P.S. is only in the copy.
        #expect(merged.body == HTMLBlocks.split("<p>Dear Ann,</p><p>See you next week.</p>"))
        #expect(merged.folder == Fixtures.folderID(2))
        #expect(merged.pinned && merged.color == "yellow")
        let conflict = try #require(outcome.conflict)
        #expect(conflict.winner == Fixtures.stamp(20, revision: 1))
        #expect(conflict.loser == Fixtures.stamp(10, revision: 9))
        var expectedCopy = early
        expectedCopy.title = "Letter (other version)"
        expectedCopy.folder = Fixtures.folderID(2)
        expectedCopy.pinned = false
        expectedCopy.conflictOf = id
        #expect(conflict.copy == expectedCopy)
    }

    @Test func equalTimesAreOrderedByRevisionID() throws {
        let base = Fixtures.note("T", "<p>x</p>")
        let a = Fixtures.note("T", "<p>from a</p>")
        let b = Fixtures.note("T", "<p>from b</p>")
        let outcome = merge(base, Fixtures.version(a, at: 10, revision: 7), Fixtures.version(b, at: 10, revision: 3))
        #expect(outcome.merged.live?.body == a.body)
        #expect(try #require(outcome.conflict).copy.body == b.body)
    }

    @Test func titleRules() throws {
        let base = Fixtures.note("Draft", "<p>x</p>")
        var renamed = base
        renamed.title = "Final"
        // One side renamed.
        #expect(merge(base, Fixtures.version(renamed, at: 10), Fixtures.version(base, at: 20)).merged.live?.title == "Final")
        // Both renamed alike.
        let same = merge(base, Fixtures.version(renamed, at: 10), Fixtures.version(renamed, at: 20, revision: 2))
        #expect(same.merged.live?.title == "Final")
        #expect(same.conflict == nil)
        // Both renamed differently: a conflict, even with the body untouched.
        var other = base
        other.title = "Done"
        let outcome = merge(base, Fixtures.version(renamed, at: 10), Fixtures.version(other, at: 20))
        #expect(outcome.merged.live?.title == "Done")
        #expect(try #require(outcome.conflict).copy.title == "Final (other version)")
        // An untitled loser.
        var untitled = base
        untitled.title = ""
        let untitledOutcome = merge(base, Fixtures.version(untitled, at: 10), Fixtures.version(other, at: 20))
        #expect(untitledOutcome.conflict?.copy.title == "(other version)")
    }

    @Test func scalarsOneSideWinsElseTheLaterStamp() throws {
        let base = Fixtures.note("N", "<p>x</p>")
        var a = base
        a.pinned = true
        a.folder = Fixtures.folderID(1)
        a.color = "red"
        var b = base
        b.trashed = true
        b.color = "blue"
        b.folder = Fixtures.folderID(1)
        let merged = try #require(merge(base, Fixtures.version(a, at: 10), Fixtures.version(b, at: 20)).merged.live)
        #expect(merged.pinned)
        #expect(merged.trashed)
        #expect(merged.color == "blue")
        #expect(merged.folder == Fixtures.folderID(1))
        // Un-setting counts as a change too.
        var cleared = a
        cleared.color = nil
        cleared.folder = nil
        let unset = try #require(merge(a, Fixtures.version(cleared, at: 30), Fixtures.version(a, at: 5)).merged.live)
        #expect(unset.color == nil && unset.folder == nil)
    }

    @Test func tagsMergeAsSets() throws {
        let base = Fixtures.note("N", "<p>x</p>", tags: ["home", "todo", "old"])
        var a = base
        a.tags = ["home", "todo", "garden"]  // removed old, added garden
        var b = base
        b.tags = ["home", "old", "urgent"]  // removed todo, added urgent
        let merged = try #require(merge(base, Fixtures.version(a, at: 10), Fixtures.version(b, at: 20)).merged.live)
        #expect(merged.tags == ["home", "garden", "urgent"])
    }

    @Test func displayTimes() throws {
        let base = Fixtures.note("N", "<p>x</p>")
        var a = base
        a.modified = 5_000
        var b = base
        b.modified = 4_000
        b.created = 900
        let merged = try #require(merge(base, Fixtures.version(a, at: 10), Fixtures.version(b, at: 20)).merged.live)
        #expect(merged.modified == 5_000)
        #expect(merged.created == 900)
        var c = base
        c.created = 950
        let both = try #require(merge(base, Fixtures.version(b, at: 10), Fixtures.version(c, at: 20)).merged.live)
        #expect(both.created == 900)
    }

    @Test func deleteVersusEditTheEditWins() {
        let base = Fixtures.note("N", "<p>x</p>")
        var edited = base
        edited.body = HTMLBlocks.split("<p>x</p><p>new paragraph</p>")
        let deletion: Version<Note> = Fixtures.tombstone(at: 30)
        // Edited (even earlier) against a later tombstone: the edit, whole.
        let outcome = merge(base, Fixtures.version(edited, at: 10), deletion)
        #expect(outcome == MergeOutcome(merged: .live(edited), conflict: nil))
        // Any change counts, a tag for instance.
        var tagged = base
        tagged.tags = ["keep"]
        #expect(merge(base, deletion, Fixtures.version(tagged, at: 40)).merged == .live(tagged))
        // Unchanged against a tombstone: deleted.
        #expect(merge(base, Fixtures.version(base, at: 50), deletion).merged == .tombstone)
        // Both deleted.
        #expect(merge(base, deletion, Fixtures.tombstone(at: 60, revision: 2)).merged == .tombstone)
        // No base: whatever the live side holds is an edit.
        #expect(merge(nil, Fixtures.version(base, at: 50), deletion).merged == .live(base))
    }

    @Test func withoutABaseBothBodiesAreKept() throws {
        // Two devices that share no history (pruned, or the same note created twice).
        let a = Fixtures.note("Ideas", "<p>shared intro</p><p>idea from a</p>")
        let b = Fixtures.note("Ideas", "<p>shared intro</p><p>idea from b</p>")
        let outcome = merge(nil, Fixtures.version(a, at: 10), Fixtures.version(b, at: 20))
        #expect(outcome.conflict == nil)
        #expect(outcome.merged.live?.body == HTMLBlocks.split("<p>shared intro</p><p>idea from b</p><p>idea from a</p>"))
        // A tombstone as base means the same as none.
        #expect(NoteMerge.merge(note: id, base: .tombstone, Fixtures.version(a, at: 10), Fixtures.version(b, at: 20)) == outcome)
        // Different titles with no history conflict.
        var renamed = b
        renamed.title = "Plans"
        #expect(merge(nil, Fixtures.version(a, at: 10), Fixtures.version(renamed, at: 20)).conflict?.copy.title == "Ideas (other version)")
    }

    @Test func bothAppendingListItemsKeepsBothLaterFirst() {
        let html = "<ol><li>one</li><li>two<ul><li>two.a</li></ul></li></ol>"
        let base = Fixtures.note("L", html)
        let a = Fixtures.note("L", html.replacing("</ol>", with: "<li>from a</li></ol>"))
        let b = Fixtures.note("L", html.replacing("</ol>", with: "<li>from b</li></ol>"))
        let outcome = merge(base, Fixtures.version(a, at: 20), Fixtures.version(b, at: 10))
        #expect(outcome.conflict == nil)
        #expect(outcome.merged.live.map { HTMLBlocks.join($0.body) }
            == "<ol><li>one</li><li>two<ul><li>two.a</li></ul></li><li>from a</li><li>from b</li></ol>")
    }

    @Test func mergingAVersionWithItselfOrTheBaseChangesNothing() {
        let base = Fixtures.note("N", Self.groceries)
        let a = Fixtures.note("N!", ticked(Self.groceries, "Eggs"), tags: ["x"])
        let version = Fixtures.version(a, at: 10)
        #expect(merge(base, version, Fixtures.version(base, at: 5)) == MergeOutcome(merged: .live(a), conflict: nil))
        #expect(merge(base, version, version) == MergeOutcome(merged: .live(a), conflict: nil))
    }
}

/// The worked example of docs/merge.md, kept true by this test.
@Suite struct DocumentedExampleTests {
    @Test func packingList() throws {
        let base = """
            <h1>Packing</h1>
            <p>Leave Friday at six.</p>
            <ul><li data-checked="false">passport</li><li data-checked="false">charger</li></ul>
            """
        let laptop = """
            <h1>Packing</h1>
            <p>Leave Friday at five.</p>
            <ul><li data-checked="true">passport</li><li data-checked="false">charger</li></ul>
            """
        let phone = """
            <h1>Packing</h1>
            <p>Leave Saturday at six.</p>
            <ul><li data-checked="false">passport</li><li data-checked="true">charger</li><li data-checked="false">sunscreen</li></ul>
            """
        let outcome = NoteMerge.merge(
            note: Fixtures.noteID, base: .live(Fixtures.note("Trip", base)),
            Fixtures.version(Fixtures.note("Trip", laptop), at: 1_000), Fixtures.version(Fixtures.note("Trip", phone), at: 2_000))
        let merged = try #require(outcome.merged.live)
        #expect(HTMLBlocks.join(merged.body) == """
            <h1>Packing</h1>
            <p>Leave Saturday at six.</p>
            <ul><li data-checked="true">passport</li><li data-checked="true">charger</li><li data-checked="false">sunscreen</li></ul>
            """)
        let conflict = try #require(outcome.conflict)
        #expect(conflict.copy.title == "Trip (other version)")
        #expect(HTMLBlocks.join(conflict.copy.body) == laptop)
        #expect(HTMLBlocks.markdown(merged.body) == """
            # Packing

            Leave Saturday at six.

            - [x] passport
            - [x] charger
            - [ ] sunscreen

            """)
    }
}
