"""Conflicts resolved in the browser, and notes made by notesd's own importers edited there.

Two real paired daemons (laptop and desktop) and headless Chromium on the laptop. The conflicts
are real ones: the same paragraph changed on both devices while they could not reach each other,
then merged by the daemons when they met again. Every outcome is checked through the control
API (`notesctl`), never only on screen. Run by scripts/run-tests with the rest of Tests/browser.
"""

import os
import unittest

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness import PairedHousehold, wait_for
from test_app import block, end_of, shot

HERE = os.path.dirname(os.path.abspath(__file__))

# Each conflict: the note as both devices had it, then what each changed while apart. The
# desktop edits last, so its stamp is later: the merged note holds the desktop's version of
# each paragraph both changed, and the copy holds the laptop's whole note (docs/merge.md).
CONFLICTS = {
    "Rent": ("<p>Rent 900.</p><p>Food 300.</p>",
             "<p>Rent 900.</p><p>Food 280 (laptop).</p>",
             "<p>Rent 900.</p><p>Food 350 (desktop).</p>"),
    "Plans": ("<h1>Plans</h1><p>Saturday: market.</p>",
              "<h1>Plans</h1><p>Saturday: market, then the lake (laptop).</p>",
              "<h1>Plans</h1><p>Saturday: museum (desktop).</p>"),
    "Menu": ("<p>Soup.</p><p>Bread.</p><p>Cake.</p>",
             "<p>Soup: leek (laptop).</p><p>Bread.</p><p>Cake: lemon (laptop).</p>",
             "<p>Soup: tomato (desktop).</p><p>Bread.</p><p>Cake: plum (desktop).</p>"),
}


def stored(html):
    """`html` as notesd stores it: its blocks joined by a line break (docs/merge.md)."""
    return html.replace("</p><p>", "</p>\n<p>").replace("</h1><p>", "</h1>\n<p>")


class Resolving(PairedHousehold):
    """Three real conflicts, resolved three ways in the compare view; then three imports edited."""

    prefix = "notesd-browser-resolve-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ids = {}
        for title, (common, _, _) in CONFLICTS.items():
            cls.ids[title] = cls.laptop.new_note(title, common)["id"]
        wait_for(lambda: all(any(n["id"] == i for n in cls.desktop.notes()) for i in cls.ids.values()), "the notes on the desktop")
        # Apart: the laptop edits while the desktop is down, then the desktop while the laptop
        # is down; then both run again and sync.
        cls.desktop.stop()
        for title, (_, on_laptop, _) in CONFLICTS.items():
            cls.laptop.ctl("edit", cls.ids[title], "--file", "-", stdin=on_laptop)
        cls.laptop.stop()
        cls.desktop.start()
        for title, (_, _, on_desktop) in CONFLICTS.items():
            cls.desktop.ctl("edit", cls.ids[title], "--file", "-", stdin=on_desktop)
        cls.laptop.start()
        wait_for(lambda: any(p["connected"] for p in cls.desktop.ctl_json("status")["peers"]), "the desktop to reach the laptop again")
        cls.desktop.sync()
        cls.laptop.sync()
        cls.copies = {}
        for title, note_id in cls.ids.items():
            cls.copies[title] = wait_for(lambda: next((n["id"] for n in cls.laptop.notes() if n.get("conflictOf") == note_id), None), f"the conflict copy of {title!r} on the laptop")
        cls.on_laptop = cls.browser("resolve-browser")
        cls.on_laptop.sign_in(cls.laptop)

    def tearDown(self):
        errors = [e for e in self.on_laptop.console_errors() if "/api/events" not in e["message"]]
        self.assertEqual(errors, [], "console errors")
        self.on_laptop.console.clear()

    # ---- helpers --------------------------------------------------------------------------

    def live(self, daemon=None):
        return (daemon or self.laptop).notes()

    def trashed_ids(self, daemon=None):
        return {n["id"] for n in (daemon or self.laptop).notes("--trash")}

    def open_compare(self, title):
        b = self.on_laptop
        self.assertEqual(self.laptop.html(self.ids[title]), stored(CONFLICTS[title][2]), "the merged note holds the desktop's version")
        self.assertEqual(self.laptop.html(self.copies[title]), stored(CONFLICTS[title][1]), "the copy holds the laptop's whole note")
        b.open_note(title)
        b.wait_text(".banner.conflict", "Another version of this note was kept")
        b.press("Compare")
        b.wait_visible(".compare-row.differs", "the differing blocks highlighted")
        self.assertIn("The version from laptop", b.find(".compare-row.head").text)
        # Only the bodies differ: the copy's "(other version)" is not a title change.
        self.assertNotIn("titles differ", b.find(".compare").text)

    def in_both(self, check, what):
        """Waits until `check(daemon)` holds on the laptop and on the desktop (after the sync)."""
        for daemon in [self.laptop, self.desktop]:
            wait_for(lambda: check(daemon), f"{what} on the {daemon.name}")

    # ---- the three choices ----------------------------------------------------------------

    def test_a_keep_the_other_version(self):
        b = self.on_laptop
        note, copy = self.ids["Rent"], self.copies["Rent"]
        self.open_compare("Rent")
        b.press("Keep the other version")
        b.wait(lambda: "Food 280 (laptop)." in b.find(".editor-body .ProseMirror").text, "the other version in the editor")
        laptop_version, desktop_version = stored(CONFLICTS["Rent"][1]), stored(CONFLICTS["Rent"][2])
        # The note is the other version, under its own title (not the copy's "(other version)").
        self.in_both(lambda d: d.html(note) == laptop_version, "the laptop's text in the note")
        self.assertEqual(b.find(".title-input").get_attribute("value"), "Rent")
        self.in_both(lambda d: next(n for n in d.notes() if n["id"] == note)["title"] == "Rent", "the note's title unchanged")
        # The copy is gone from the notes and the banner with it; the version not kept is in
        # the Trash (the copy now holds it), so no text is lost.
        self.in_both(lambda d: copy in self.trashed_ids(d) and not any(n.get("conflictOf") == note for n in d.notes()), "the copy in the Trash")
        self.in_both(lambda d: d.html(copy) == desktop_version, "the version not kept, in the Trash")
        b.wait(lambda: not b.visible(".banner.conflict"), "the banner gone")
        shot(b, "14-kept-the-other")

    def test_b_keep_both(self):
        b = self.on_laptop
        note, copy = self.ids["Plans"], self.copies["Plans"]
        self.open_compare("Plans")
        b.press("Keep both")
        laptop_version, desktop_version = stored(CONFLICTS["Plans"][1]), stored(CONFLICTS["Plans"][2])
        # The other version is a note of its own now, open in the editor; the note keeps its text.
        b.wait(lambda: b.find(".title-input").get_attribute("value") == "Plans (other version)", "the other version open as a note")
        self.assertIn("then the lake (laptop)", b.find(".editor-body .ProseMirror").text)
        made = wait_for(lambda: next((n for n in self.live() if n["title"] == "Plans (other version)" and n["id"] != copy), None), "the new note")
        self.assertIsNone(made.get("conflictOf"), "the kept version is no longer a conflict copy")
        self.in_both(lambda d: d.html(made["id"]) == laptop_version, "the laptop's text in a note of its own")
        self.in_both(lambda d: d.html(note) == desktop_version, "the desktop's text still in the note")
        self.in_both(lambda d: copy in self.trashed_ids(d) and not any(n.get("conflictOf") == note for n in d.notes()), "the copy out of the conflicts")
        b.wait(lambda: not b.visible(".banner.conflict"), "no banner on the kept version")
        b.open_note("Plans")
        b.wait(lambda: not b.visible(".banner.conflict"), "no banner on the note")

    def test_c_take_one_block_from_the_other_side_then_keep_this(self):
        b = self.on_laptop
        note, copy = self.ids["Menu"], self.copies["Menu"]
        self.open_compare("Menu")
        rows = b.finds(".compare-row.differs")
        self.assertEqual(len(rows), 2, "the soup and the cake differ; the bread does not")
        self.assertIn("Soup: leek (laptop).", rows[0].text)
        shot(b, "15-compare-per-block")
        # Take the laptop's soup only.
        rows[0].find_element(By.CSS_SELECTOR, "button.take").click()
        wanted = "<p>Soup: leek (laptop).</p>\n<p>Bread.</p>\n<p>Cake: plum (desktop).</p>"
        wait_for(lambda: self.laptop.html(note) == wanted, "the laptop's soup and the desktop's cake in the note")
        # The compare view shows what is left: only the cake still differs.
        b.wait(lambda: len(b.finds(".compare-row.differs")) == 1 and "Cake: lemon (laptop)." in b.find(".compare-row.differs").text, "one part left to compare")
        self.assertEqual(self.laptop.html(copy), stored(CONFLICTS["Menu"][1]), "the copy untouched until a choice is made")
        b.press("Keep this version")
        b.wait_visible(".title-input", "the note again")
        self.in_both(lambda d: d.html(note) == wanted, "exactly the chosen blocks")
        self.in_both(lambda d: copy in self.trashed_ids(d) and not any(n.get("conflictOf") == note for n in d.notes()), "the copy in the Trash")
        self.assertEqual(self.laptop.html(copy), stored(CONFLICTS["Menu"][1]), "the other version kept whole in the Trash")
        b.wait(lambda: not b.visible(".banner.conflict"), "the banner gone")
        # The sidebar counts the conflicts still open (none once every test here chose).
        left = len([n for n in self.live() if n.get("conflictOf")])
        b.wait_text(".sidebar", f"Conflicts\n{left}", f"the sidebar counting {left} conflicts")


IMPORTS = {
    # file name: (title notesd gives it, the block to edit as notesd stores it, the same edited)
    "Kitchen list.md": ("Kitchen list", "<p>Plain line to edit.</p>", "<p>Plain line to edit. Edited.</p>"),
    "Letter.html": ("Letter home", "<p>Plain line to edit.</p>", "<p>Plain line to edit. Edited.</p>"),
    "Trip.enex": ("Trip notes", "<div>Plain line to edit.</div>", "<div>Plain line to edit. Edited.</div>"),
}


class Imported(PairedHousehold):
    """Notes made by `notesctl import` (Markdown through cmark-gfm, HTML files, an Evernote
    export through libxml2): one paragraph edited in the browser changes that block only."""

    prefix = "notesd-browser-import-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        result = cls.laptop.ctl_json("import", os.path.join(HERE, "imports"))
        assert not result["failed"] and not result["warnings"], result
        cls.imported = {entry["title"]: entry["id"] for entry in result["imported"]}
        cls.on_laptop = cls.browser("import-browser")
        cls.on_laptop.sign_in(cls.laptop)

    def edit_one_paragraph(self, file_name):
        title, original, edited = IMPORTS[file_name]
        note = self.imported[title]
        before = self.laptop.html(note)
        self.assertEqual(before.count(original), 1, f"the importer wrote {original!r} once:\n{before}")
        b = self.on_laptop
        b.open_note(title)
        end_of(b, block(b, "Plain line to edit.", "p, div"))
        b.driver.switch_to.active_element.send_keys(" Edited.")
        b.wait_text(".ProseMirror", "Plain line to edit. Edited.")
        b.saved()
        # Every other block is byte for byte what the importer wrote; on the other device too.
        expected = before.replace(original, edited, 1)
        for daemon in [self.laptop, self.desktop]:
            wait_for(lambda: daemon.html(note) == expected, f"only the edited block changed, on the {daemon.name}")
        errors = [e for e in b.console_errors() if "/api/events" not in e["message"]]
        self.assertEqual(errors, [], "console errors")
        return before

    def test_markdown_import(self):
        before = self.edit_one_paragraph("Kitchen list.md")
        # What cmark-gfm wrote and a re-serialising editor would change, left alone.
        for kept in ['<input type="checkbox" checked="" disabled="" />', "<thead>\n<tr>", '<code class="language-sh">', "<del>struck</del>"]:
            self.assertIn(kept, before)

    def test_html_import(self):
        before = self.edit_one_paragraph("Letter.html")
        for kept in ['<h2 class="greeting" style="color: #336">', "<b>arrived</b>", '<ul data-checked="true">', 'data-list="unchecked"', '<table border="1">', "<br>"]:
            self.assertIn(kept, before)

    def test_enex_import(self):
        before = self.edit_one_paragraph("Trip.enex")
        for kept in ['<font color="#ff0000">', '<input type="checkbox" checked>', '<span style="font-weight: bold;">', "<div><br></div>"]:
            self.assertIn(kept, before)


if __name__ == "__main__":
    unittest.main(verbosity=2)
