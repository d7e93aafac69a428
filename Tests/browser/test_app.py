"""The web app in headless Chromium against real, paired notesd daemons: an afternoon with a
household's notes, as a person would spend it. Run by scripts/run-tests (or
`python3 -m unittest discover -s Tests/browser -v`); screenshots of every screen land in
.build/browser-tests/ (scripts/screenshots copies the set into docs/screenshots/).
"""

import os
import re
import shutil
import tempfile
import unittest

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness import ARTIFACTS, Browser, Daemon, PairedHousehold, wait_for

SHOTS = os.environ.get("NOTESD_SCREENSHOTS")  # also copy the screens here (scripts/screenshots)


def shot(browser, name):
    path = browser.screenshot(name)
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        shutil.copy(path, os.path.join(SHOTS, f"{name}.png"))


def end_of(browser, element):
    """Puts the caret at the end of `element` (a block in the editor), as a click and End would."""
    element.click()
    element.send_keys(Keys.END)


def block(browser, text, css="p, h1, h2, h3, .item, blockquote"):
    """The editor block holding `text`."""
    def check():
        for element in browser.finds(f".editor-body .ProseMirror > :is({css})"):
            if text in element.text:
                return element
        return None
    return browser.wait(check, f"a block holding {text!r}")


class Household(PairedHousehold):
    """Two paired daemons, the laptop and the desktop, each with a browser signed in."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.on_laptop = cls.browser("laptop-browser")
        cls.on_desktop = cls.browser("desktop-browser")
        cls.on_laptop.sign_in(cls.laptop)
        cls.on_desktop.sign_in(cls.desktop)

    def setUp(self):
        # Each test starts where a person would: on the notes, nothing searched.
        for browser in [self.on_laptop, self.on_desktop]:
            if browser.driver.execute_script("return document.getElementById('app').dataset.screen === 'devices'"):
                browser.press("Notes")
            if browser.find("#search").get_attribute("value"):
                browser.find("#search").clear()
                browser.find("#search").send_keys(Keys.ESCAPE)

    def tearDown(self):
        for browser in self.browsers:
            errors = [e for e in browser.console_errors() if "/api/events" not in e["message"] and "ERR_CONNECTION_REFUSED" not in e["message"]]
            self.assertEqual(errors, [], f"console errors in {browser.name}")
            browser.console.clear()

    # 1 ---------------------------------------------------------------------------------------

    def test_1_a_note_made_on_the_desktop_appears_on_the_laptop_while_the_list_is_open(self):
        self.on_laptop.wait_text(".status", "Caught up with desktop")
        shot(self.on_laptop, "01-empty-list")
        self.desktop.new_note("Shopping", "<h1>Shopping</h1><p>Eggs, <b>flour</b> and quinces.</p>")
        row = self.on_laptop.row("Shopping")
        self.assertIn("Uncategorized", row.text)
        self.on_laptop.wait(lambda: "Eggs, flour and quinces." in self.on_laptop.row("Shopping").text, "the first line in the row")

    # 2 ---------------------------------------------------------------------------------------

    def test_2_a_note_written_in_the_browser_reaches_the_other_daemon_block_for_block(self):
        b = self.on_laptop
        b.button("New note").click()
        title = b.wait_visible(".title-input", "the title field")
        self.assertEqual(b.driver.switch_to.active_element, title)
        title.send_keys("Garden plan", Keys.ENTER)
        editor = b.find(".editor-body .ProseMirror")
        # Markdown-style input rules, a shortcut for bold, and a click to tick.
        editor.send_keys("# Spring", Keys.ENTER, "Plant the ")
        editor.send_keys(Keys.CONTROL, "b")
        editor.send_keys("tulips")
        editor.send_keys(Keys.CONTROL, "b")
        editor.send_keys(" first.", Keys.ENTER, "[ ] ", "Buy soil", Keys.ENTER, "Dig beds")
        b.wait_visible(".ProseMirror .item.check", "a checklist item")
        b.finds(".ProseMirror .item.check .checkbox")[0].click()
        b.wait(lambda: b.find(".ProseMirror .item.check").get_attribute("data-checked") == "true", "the first item ticked")
        b.saved()
        b.wait(lambda: "Spring" in b.row("Garden plan").text, "the row's title and first line")
        shot(b, "02-editor")
        note = wait_for(lambda: next((n for n in self.desktop.notes() if n["title"] == "Garden plan"), None), "the note on the desktop")
        expected = '<h1>Spring</h1>\n<p>Plant the <strong>tulips</strong> first.</p>\n<ul><li data-checked="true">Buy soil</li><li data-checked="false">Dig beds</li></ul>'
        wait_for(lambda: self.desktop.html(note["id"]) == expected, "the same blocks on the desktop")
        # And the desktop's browser shows it without a reload.
        self.on_desktop.open_note("Garden plan")
        self.assertEqual(self.on_desktop.find(".ProseMirror h1").text, "Spring")
        self.assertEqual(self.on_desktop.find(".ProseMirror strong").text, "tulips")

    # 3 ---------------------------------------------------------------------------------------

    def test_3a_two_people_typing_in_different_paragraphs_both_keep_their_text(self):
        note = self.laptop.new_note("Trip", "<p>Laptop paragraph.</p><p>Middle stays.</p><p>Desktop paragraph.</p>")
        wait_for(lambda: any(n["id"] == note["id"] for n in self.desktop.notes()), "the trip note on the desktop")
        self.on_laptop.open_note("Trip")
        self.on_desktop.open_note("Trip")
        end_of(self.on_laptop, block(self.on_laptop, "Laptop paragraph."))
        end_of(self.on_desktop, block(self.on_desktop, "Desktop paragraph."))
        self.on_laptop.driver.switch_to.active_element.send_keys(" Typed on the laptop.")
        self.on_desktop.driver.switch_to.active_element.send_keys(" Typed on the desktop.")
        for browser in [self.on_laptop, self.on_desktop]:
            browser.wait_text(".ProseMirror", "Typed on the laptop.", "the laptop's words")
            browser.wait_text(".ProseMirror", "Typed on the desktop.", "the desktop's words")
        # Each cursor stayed in its own paragraph: typing more lands where the person was.
        self.on_laptop.driver.switch_to.active_element.send_keys("!")
        self.on_laptop.wait_text(".ProseMirror", "Typed on the laptop.!")
        both = "<p>Laptop paragraph. Typed on the laptop.!</p>\n<p>Middle stays.</p>\n<p>Desktop paragraph. Typed on the desktop.</p>"
        for daemon in [self.laptop, self.desktop]:
            wait_for(lambda: daemon.html(note["id"]) == both, f"both texts on the {daemon.name}")
        self.assertEqual([n for n in self.laptop.notes() if n.get("conflictOf")], [])
        shot(self.on_desktop, "03-live-merge")

    def test_3b_the_same_paragraph_changed_on_both_sides_gives_a_banner_a_compare_view_and_keep_this(self):
        note = self.laptop.new_note("Budget", "<p>Rent 900.</p><p>Food 300.</p>")
        wait_for(lambda: any(n["id"] == note["id"] for n in self.desktop.notes()), "the budget note on the desktop")
        self.on_laptop.open_note("Budget")
        self.on_desktop.open_note("Budget")
        # The desktop's notesd goes away; its browser keeps the typing and says so.
        self.desktop.stop()
        self.on_desktop.wait_text(".status", "notesd is not running")
        end_of(self.on_desktop, block(self.on_desktop, "Food 300."))
        self.on_desktop.driver.switch_to.active_element.send_keys(Keys.BACKSPACE * 4, "350 (desktop).")
        self.on_desktop.wait(lambda: self.on_desktop.find(".save-state").get_attribute("data-state") == "offline", "'not saved yet'")
        shot(self.on_desktop, "04-notesd-not-running")
        # Meanwhile the same paragraph is changed on the laptop.
        end_of(self.on_laptop, block(self.on_laptop, "Food 300."))
        self.on_laptop.driver.switch_to.active_element.send_keys(Keys.BACKSPACE * 4, "280 (laptop).")
        self.on_laptop.saved()
        # The desktop's notesd is back: the browser reconnects and saves by itself.
        self.desktop.start()
        self.on_desktop.wait_text(".status", "Caught up")
        self.on_desktop.saved()
        copies = wait_for(lambda: [n for n in self.laptop.notes() if n.get("conflictOf") == note["id"]], "a conflict copy on the laptop")
        self.assertEqual(len(copies), 1)
        wait_for(lambda: len([n for n in self.desktop.notes() if n.get("conflictOf") == note["id"]]) == 1, "the copy on the desktop")
        # Neither text is lost: the later save (the desktop's) is in the note, the laptop's in
        # the copy.
        self.assertIn("Food 350 (desktop).", self.laptop.html(note["id"]))
        self.assertIn("Food 280 (laptop).", self.laptop.html(copies[0]["id"]))
        b = self.on_laptop
        b.wait_text(".banner.conflict", "Another version of this note was kept")
        self.assertIn("Conflicts\n1", b.find(".sidebar").text)
        shot(b, "05-conflict-banner")
        # The copy says whose version it is, and why.
        b.open_note("Budget (other version)")
        b.wait_text(".banner.conflict", "This is the version from laptop, kept because both devices changed the same paragraph.")
        b.open_note("Budget")
        b.button("Compare").click()
        b.wait_visible(".compare-row.differs", "the differing block highlighted")
        differs = b.finds(".compare-row.differs")
        self.assertEqual(len(differs), 1)
        self.assertEqual({"Food 350 (desktop).", "Food 280 (laptop)."}, {cell.text.replace("Use this block", "").strip() for cell in differs[0].find_elements(By.CSS_SELECTOR, "[role=cell]")})
        self.assertIn("The version from laptop", b.find(".compare-row.head").text)
        shot(b, "06-compare")
        kept = self.laptop.html(note["id"])
        b.button("Keep this version").click()
        b.wait_visible(".title-input", "the note again")
        wait_for(lambda: [n for n in self.laptop.notes() if n.get("conflictOf") == note["id"]] == [], "the copy gone from the notes")
        self.assertTrue(any(n["id"] == copies[0]["id"] for n in self.laptop.notes("--trash")), "the copy is in the Trash")
        self.assertEqual(self.laptop.html(note["id"]), kept)
        b.wait(lambda: not b.visible(".banner.conflict"), "the banner gone")

    # 4 ---------------------------------------------------------------------------------------

    def test_4a_history_lists_the_revisions(self):
        b = self.on_laptop
        b.open_note("Garden plan")
        b.button("History").click()
        b.wait_visible(".history-list .revision", "the revisions")
        revisions = b.finds(".history-list .revision")
        self.assertGreaterEqual(len(revisions), 1)
        self.assertIn("laptop", revisions[-1].text)
        revisions[-1].click()
        b.wait_visible(".history-preview p, .history-preview h3")
        shot(b, "07-history")
        b.button("Back to the note").click()
        b.wait_visible(".title-input")

    def test_4b_a_third_device_is_paired_from_the_devices_page_and_removed(self):
        type(self).extra = [Daemon("phone", self.base).start()]
        phone = self.extra[0]
        b = self.on_laptop
        b.button("Devices").click()
        b.wait_text(".device-list", "desktop")
        b.press("Make an invite code")
        line = b.wait_visible("#join-line", "the notesctl join line").text
        self.assertRegex(b.find(".countdown").text, r"Valid for (9|10):\d\d more")
        match = re.fullmatch(r"notesctl join (\S+) --address (\S+)", line)
        self.assertIsNotNone(match, line)
        shot(b, "08-devices-invite")
        # On the phone, in its own browser: Join a household with that code.
        on_phone = self.browser("phone-browser")
        on_phone.sign_in(phone)
        on_phone.button("Devices").click()
        on_phone.type_into("#join-code", match.group(1))
        on_phone.type_into("#join-address", match.group(2))
        on_phone.press("Join")
        on_phone.wait_text(".devices", "Joined household")
        on_phone.wait_text(".device-list", "laptop")
        b.wait_text(".device-list", "phone")
        # The phone's notes now hold the household's.
        on_phone.button("Notes").click()
        on_phone.row("Shopping")
        b.press("Devices")
        b.press("Remove phone…")
        confirm = b.wait_visible("[role=alertdialog]")
        self.assertIn("Remove “phone”", confirm.text)
        shot(b, "09-remove-confirmation")
        b.press("Remove phone")
        b.wait_text(".devices", "phone was removed")
        wait_for(lambda: next(d for d in self.laptop.ctl_json("devices") if d["name"] == "phone")["revoked"], "the phone revoked")
        # The removal rotated the household key; the desktop takes the new one.
        wait_for(lambda: self.laptop.ctl_json("status")["household"]["key"]["epoch"] == 1, "the household key rotated")
        b.button("Notes").click()
        b.button("Devices").click()
        b.wait_text(".devices", "key epoch 1")
        b.button("Notes").click()

    # 5 ---------------------------------------------------------------------------------------

    def test_5_a_hostile_note_from_a_peer_renders_inert(self):
        hostile = (
            '<p>Harmless start</p><script>window.pwned = "script"</script>'
            '<p><img src=x onerror="window.pwned=\'img\'">after image</p>'
            '<p><a href="javascript:window.pwned=\'link\'">click me</a></p>'
            '<svg onload="window.pwned=\'svg\'"><circle r="4"/></svg>'
            '<iframe src="javascript:parent.pwned=\'iframe\'"></iframe>'
            '<table><tr><td onmouseover="window.pwned=\'td\'">cell <img src=x onerror="window.pwned=\'img2\'"></td></tr></table>'
            '<p style="background:red" onclick="window.pwned=\'p\'">styled</p>'
        )
        self.desktop.new_note("Hostile", hostile)
        b = self.on_laptop
        b.open_note("Hostile")
        block(b, "click me").find_element(By.CSS_SELECTOR, "a").click()
        b.find(".editor-body .opaque").click()
        block(b, "styled").click()
        b.wait_text(".ProseMirror", "after image")
        dom = b.find(".editor-body").get_attribute("innerHTML")
        for tag in ["<script", "<img", "<svg", "<iframe", "onerror", "onload", "onclick", "onmouseover", "javascript:", "style="]:
            self.assertNotIn(tag, dom)
        self.assertEqual(b.find(".ProseMirror a").get_attribute("rel"), "noopener noreferrer")
        self.assertIsNone(b.driver.execute_script("return window.pwned ?? null"))
        shot(b, "10-hostile-note-inert")
        # The list row and search snippet are text too.
        search = b.find("#search")
        search.send_keys("harmless")
        b.wait_text(".note-list", "Hostile")
        self.assertIsNone(b.driver.execute_script("return window.pwned ?? null"))
        search.send_keys(Keys.ESCAPE)

    # 6 ---------------------------------------------------------------------------------------

    def test_6_search_keyboard_and_dark_mode(self):
        b = self.on_laptop
        body = b.find("body")
        body.send_keys("/")
        self.assertEqual(b.driver.switch_to.active_element, b.find("#search"))
        b.driver.switch_to.active_element.send_keys("quin")
        b.wait(lambda: b.visible(".note-list mark") and b.find(".note-list mark").text.lower().startswith("quin"), "a highlighted match")
        shot(b, "11-search")
        # Keyboard only: down into the results, Enter opens, Escape back to the list.
        b.driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        # The search runs once more first; the results take the focus when it answers.
        b.wait(lambda: b.driver.switch_to.active_element.get_attribute("id") == "note-list", "the results focused")
        b.driver.switch_to.active_element.send_keys(Keys.ENTER)
        b.wait(lambda: b.find(".title-input").get_attribute("value") == "Shopping", "the found note open")
        b.driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        self.assertEqual(b.driver.switch_to.active_element.get_attribute("id"), "note-list")
        b.find("#search").clear()
        b.find("#search").send_keys(Keys.ESCAPE)
        dark = self.browser("dark-browser", dark=True)
        dark.sign_in(self.laptop)
        dark.open_note("Garden plan")
        background = dark.driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        self.assertEqual(background, "rgb(23, 24, 26)")
        shot(dark, "12-dark")

class ManyNotes(unittest.TestCase):
    """10,000 notes on one daemon: the list draws only the rows in view."""

    def test_ten_thousand_notes_keep_the_list_small_and_scroll_to_the_end(self):
        base = tempfile.mkdtemp(prefix="notesd-browser-many-")
        daemon = Daemon("library", base).start()
        b = Browser("many")
        try:
            b.sign_in(daemon)
            b.driver.set_script_timeout(900)
            created = b.driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                const api = window.notesdApp.api;
                (async () => {
                  for (let start = 0; start < 10000; start += 50) {
                    await Promise.all(Array.from({length: 50}, (_, k) => api.call('notes.create', {title: `Note ${String(start + k).padStart(5, '0')}`, html: `<p>Line ${start + k}</p>`})));
                  }
                  return 10000;
                })().then(done, (e) => done(String(e)));
            """)
            self.assertEqual(created, 10000)
            b.wait_text("#list-heading", "All notes · 10000", "10,000 notes in the list")
            rows = len(b.finds(".note-list .row"))
            self.assertLess(rows, 60, f"{rows} rows in the DOM for 10,000 notes")
            b.find("#note-list").send_keys(Keys.END)
            b.wait(lambda: any(r.get_attribute("data-index") == "9999" for r in b.finds(".note-list .row")), "the last row drawn")
            self.assertLess(len(b.finds(".note-list .row")), 60)
            # Notes made in the same millisecond order by their random id bits, so which one is
            # last is the list's to say: the row at its end is active, and Enter opens it.
            b.wait(lambda: b.find(".note-list .row.active").get_attribute("data-index") == "9999", "the last row, active")
            last = re.search(r"Note \d{5}", b.find(".note-list .row.active").text).group(0)
            b.find("#note-list").send_keys(Keys.ENTER)
            b.wait(lambda: b.find(".title-input").get_attribute("value") == last, "the last note open")
            shot(b, "13-ten-thousand-notes")
            self.assertEqual([e for e in b.console_errors()], [])
        finally:
            b.quit()
            daemon.stop()
            shutil.rmtree(base, ignore_errors=True)


class SignIn(unittest.TestCase):
    def test_a_browser_without_a_session_is_told_to_use_notesctl_ui_and_a_used_link_fails(self):
        base = tempfile.mkdtemp(prefix="notesd-browser-signin-")
        daemon = Daemon("solo", base).start()
        browser = Browser("signin")
        try:
            browser.driver.get(daemon.url)
            browser.wait_text("#signin", "notesctl ui")
            shot(browser, "00-sign-in")
            url = daemon.login_url()
            browser.driver.get(url)
            browser.wait(lambda: browser.driver.execute_script("return document.body.dataset.ready === 'true'"), "signed in")
            self.assertNotIn("login=", browser.driver.current_url, "the token is removed from the address bar")
            stored = browser.driver.execute_script("return localStorage.getItem('notesd.session')")
            self.assertTrue(stored)
            self.assertEqual(browser.driver.get_cookies(), [])
            # The same link again, in a fresh browser: refused, and it says what to do.
            other = Browser("signin-reused")
            try:
                other.driver.get(url)
                other.wait_text("#signin", "already used or has expired")
            finally:
                other.quit()
            errors = [e for e in browser.console_errors()]
            self.assertEqual(errors, [])
        finally:
            browser.quit()
            daemon.stop()
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
