"""A 2,000-block note in headless Chromium: it is drawn in a window (web/src/blockwindow.js)
and a person edits it at the top, the middle and the end, with the keyboard's long moves
(Ctrl+End, Ctrl+Home, Page Down), an input rule and the browser's find; every block they did
not touch comes back byte for byte.
"""

import shutil
import tempfile
import unittest

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.keys import Keys

from harness import Browser, Daemon, wait_for

BLOCKS = 2000

# The number of editor blocks the browser lays out (the others are not displayed, or are the
# one box that stands for a hidden run).
DRAWN = """
return [...document.querySelectorAll('.editor-body .ProseMirror > *')]
  .filter((e) => getComputedStyle(e).display !== 'none' && getComputedStyle(e).contentVisibility !== 'hidden').length;
"""


def long_note():
    blocks = []
    for k in range(BLOCKS):
        if k % 25 == 0:
            blocks.append(f"<h3>Part {k}</h3>")
        else:
            # Written as another editor would (<b>, an attribute): untouched, it must stay so.
            blocks.append(f'<p class="para">Paragraph {k} of the long note, <b>bold {k}</b> and more words to wrap.</p>')
    return blocks


class LongNote(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="notesd-browser-long-")
        cls.daemon = Daemon("long", cls.base).start()
        cls.blocks = long_note()
        cls.note = cls.daemon.new_note("Long note", "\n".join(cls.blocks))
        cls.stored = cls.daemon.html(cls.note["id"])
        cls.daemon.new_note("Second long note", "\n".join(f"<p>Second note, paragraph {k}.</p>" for k in range(600)))
        cls.b = Browser("long")
        cls.b.sign_in(cls.daemon)

    @classmethod
    def tearDownClass(cls):
        cls.b.quit()
        cls.daemon.stop()
        shutil.rmtree(cls.base, ignore_errors=True)

    def drawn(self):
        return self.b.driver.execute_script(DRAWN)

    def block_at_middle_of_pane(self):
        """The editor block laid out across the middle of the note pane (not a hidden run's
        box), and its index; None while the middle shows no such block."""
        return self.b.driver.execute_script("""
            const pane = document.getElementById('note-pane').getBoundingClientRect();
            const middle = pane.top + pane.height / 2;
            const blocks = [...document.querySelectorAll('.editor-body .ProseMirror > *')];
            const i = blocks.findIndex((e) => { const r = e.getBoundingClientRect(); return r.top <= middle + 20 && r.bottom >= middle - 20; });
            if (i < 0) return null;
            const style = getComputedStyle(blocks[i]);
            return style.display === 'none' || style.contentVisibility === 'hidden' ? null : [i, blocks[i].textContent];
        """)

    def test_a_long_note_is_drawn_in_a_window_and_edited_at_its_top_middle_and_end(self):
        b = self.b
        self.assertEqual(self.stored.split("\n"), self.blocks)
        # The row is drawn again when its first line arrives: click it once it has it.
        b.wait(lambda: "Part 0" in b.row("Long note").text, "the row's first line")

        def click_row():
            try:
                b.row("Long note").click()
                return True
            except StaleElementReferenceException:
                return False
        b.wait(click_row, "a click on the row")
        b.wait(lambda: b.find(".title-input").get_attribute("value") == "Long note", "the long note open")
        b.wait(lambda: len(b.finds(".editor-body .ProseMirror > *")) == BLOCKS, "every block in the editor")
        self.assertLess(self.drawn(), 200, "only a window of the note is laid out")

        # Typing at the end of the second paragraph.
        second = b.finds(".editor-body .ProseMirror > p")[1]
        second.click()
        second.send_keys(Keys.END, " Edited near the top.")
        b.wait_text(".editor-body .ProseMirror", "Edited near the top.")

        # Ctrl+End goes to the very end of the note (not the end of what is drawn); a new
        # heading by the input rule, typed there, lands there.
        active = b.driver.switch_to.active_element
        active.send_keys(Keys.CONTROL, Keys.END)
        active.send_keys(Keys.ENTER, "## The end")
        b.wait(lambda: b.driver.execute_script("const pm = document.querySelector('.editor-body .ProseMirror'); return pm.lastElementChild.tagName === 'H2' && pm.lastElementChild.textContent === 'The end'"), "the heading at the end")
        self.assertLess(self.drawn(), 300)

        # Scrolled to the middle: what is on screen is drawn (text, not an empty box), and a
        # click there types there.
        b.driver.execute_script("const pane = document.getElementById('note-pane'); pane.scrollTop = pane.scrollHeight / 2;")
        middle = b.wait(lambda: (lambda m: m if m and m[1].startswith(("Paragraph", "Part")) and 600 < m[0] < 1400 else None)(self.block_at_middle_of_pane()), "the middle of the note drawn")
        index = middle[0]
        target = b.driver.execute_script("return document.querySelector('.editor-body .ProseMirror').children[arguments[0]]", index)
        target.click()
        target.send_keys(Keys.END, " Edited in the middle.")
        b.wait(lambda: b.driver.execute_script("return document.querySelector('.editor-body .ProseMirror').children[arguments[0]].textContent", index).endswith("Edited in the middle."), "the middle block edited")
        self.assertLess(self.drawn(), 300)

        # Ctrl+Home, then typing at the very start.
        active = b.driver.switch_to.active_element
        active.send_keys(Keys.CONTROL, Keys.HOME)
        active.send_keys("Start: ")
        b.wait(lambda: b.finds(".editor-body .ProseMirror > *")[0].text.startswith("Start: Part 0"), "typing at the start")

        # Page Down a dozen times (the browser's own caret move, through the window as it
        # follows), then typing lands in the block the caret reached.
        for _ in range(12):
            active.send_keys(Keys.PAGE_DOWN)
        active.send_keys(" Paged down.")
        paged = b.wait(lambda: b.driver.execute_script("return [...document.querySelector('.editor-body .ProseMirror').children].findIndex((e) => e.textContent.includes(' Paged down.'))") + 1 or None, "the text typed after Page Down") - 1
        self.assertGreater(paged, 150, "Page Down went beyond the blocks first drawn")

        # Ctrl+F: the whole note is drawn for the browser's find; the next key in the note
        # goes back to the window.
        active.send_keys(Keys.CONTROL, "f")
        b.wait(lambda: self.drawn() == BLOCKS + 1, "every block drawn for find")
        active.send_keys(Keys.ARROW_RIGHT)
        b.wait(lambda: self.drawn() < 300, "the window again")
        self.assertIsNone(b.driver.execute_script("return window.pwned ?? null"))

        # Saved: the four edited blocks and the new one changed, every other block byte for byte.
        b.saved()
        saved = wait_for(lambda: (lambda h: h if "The end" in h and "Paged down." in h else None)(self.daemon.html(self.note["id"])), "the edits saved")
        after = saved.split("\n")
        self.assertEqual(len(after), BLOCKS + 1)
        self.assertEqual(after[-1], "<h2>The end</h2>")
        changed = [i for i in range(BLOCKS) if after[i] != self.blocks[i]]
        self.assertEqual(changed, sorted({0, 2, paged, index}), "only the blocks typed in changed")
        self.assertEqual(after[0], "<h3>Start: Part 0</h3>")
        self.assertEqual(after[2], '<p class="para">Paragraph 2 of the long note, <b>bold 2</b> and more words to wrap. Edited near the top.</p>')
        self.assertTrue(after[index].endswith(" Edited in the middle.</p>") or after[index].endswith(" Edited in the middle.</h3>"), after[index])

        # Scrolled down, then another long note: it opens at its top, drawn there.
        b.driver.execute_script("const pane = document.getElementById('note-pane'); pane.scrollTop = pane.scrollHeight / 2;")
        b.open_note("Second long note")
        b.wait(lambda: len(b.finds(".editor-body .ProseMirror > *")) == 600, "the second long note")
        self.assertEqual(b.driver.execute_script("return document.getElementById('note-pane').scrollTop"), 0)
        top = b.wait(lambda: (lambda m: m if m and m[0] < 40 else None)(self.block_at_middle_of_pane()), "the top of the second note drawn")
        self.assertTrue(top[1].startswith("Second note, paragraph"), top)
        self.assertEqual([e for e in b.console_errors()], [])

    def test_b_a_change_from_elsewhere_above_the_screen_leaves_the_screen_where_it_was(self):
        b = self.b
        b.open_note("Long note")
        count = len(self.daemon.html(self.note["id"]).split("\n"))
        b.wait(lambda: len(b.finds(".editor-body .ProseMirror > *")) == count, "the long note")
        b.finds(".editor-body .ProseMirror > p")[0].click()
        b.driver.execute_script("const pane = document.getElementById('note-pane'); pane.scrollTop = pane.scrollHeight / 2;")
        before = b.wait(self.block_at_middle_of_pane, "the middle of the note drawn")
        # Another device (here notesctl on the same daemon) adds 80 paragraphs above it.
        blocks = self.daemon.html(self.note["id"]).split("\n")
        added = [f"<p>Added elsewhere {k}.</p>" for k in range(50)] + blocks[:5] + [f"<p>Also added {k}.</p>" for k in range(30)] + blocks[5:]
        self.daemon.ctl("edit", self.note["id"], "--html", stdin="\n".join(added))
        b.wait(lambda: len(b.finds(".editor-body .ProseMirror > *")) == count + 80, "the change merged into the open note")
        after = b.wait(self.block_at_middle_of_pane, "the middle of the note drawn")
        self.assertEqual(after[1], before[1], "the same block in the middle of the screen")
        self.assertEqual(after[0], before[0] + 80)
        self.assertEqual([e for e in b.console_errors()], [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
