"""Real notesd daemons on loopback and headless Chromium driving the web app.

Every daemon gets its own data directory and control socket, binds port 0 for sync and for
the web app, and never uses mDNS; the tests pair them with invite codes over 127.0.0.1.
Nothing here sleeps: every wait is for a condition a person would see (WebDriverWait) or a
daemon answer (`wait_for`).
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("NOTESD_BIN", os.path.join(ROOT, ".build", "debug"))
WEB_ROOT = os.path.join(ROOT, "web")
ARTIFACTS = os.environ.get("NOTESD_BROWSER_ARTIFACTS", os.path.join(ROOT, ".build", "browser-tests"))
TIMEOUT = float(os.environ.get("NOTESD_BROWSER_TIMEOUT", "30"))


def wait_for(condition, what, timeout=TIMEOUT):
    """Polls `condition` until it returns something truthy; fails naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as error:  # the daemon may not be up yet
            last_error = error
        # Yield the processor between polls without a fixed sleep in any assertion.
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


class Daemon:
    """One notesd with its own data directory, socket and ports."""

    def __init__(self, name, base):
        self.name = name
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir, mode=0o700)
        self.socket = os.path.join(self.dir, "control.sock")
        self.process = None
        self.log = None
        # Port 0 the first time; a restart asks for the same ports again, so the browser's
        # origin (and its signed-in session) and the peers' addresses stay the same.
        self.listen = "127.0.0.1:0"
        self.web = "127.0.0.1:0"

    def start(self):
        self.log = open(os.path.join(self.dir, "notesd.log"), "ab")
        self.process = subprocess.Popen(
            [os.path.join(BIN, "notesd"), "--data-dir", os.path.join(self.dir, "data"), "--socket", self.socket,
             "--listen", self.listen, "--web-listen", self.web, "--web-root", WEB_ROOT, "--no-mdns",
             "--name", self.name],
            stdout=self.log, stderr=subprocess.STDOUT)
        status = wait_for(lambda: self.ctl_json("status"), f"{self.name} to answer")
        wanted_web = self.web
        self.listen = status["listen"][0]
        self.web = status["web"]["listen"]
        if not wanted_web.endswith(":0") and self.web != wanted_web:
            raise AssertionError(f"{self.name} could not serve on {wanted_web} again (got {self.web})")
        self.device = status["device"]
        return self

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self.log:
            self.log.close()
            self.log = None

    def restart(self):
        self.stop()
        return self.start()

    @property
    def url(self):
        return f"http://{self.web}/"

    def ctl(self, *args, stdin=None, check=True):
        result = subprocess.run(
            [os.path.join(BIN, "notesctl"), "--socket", self.socket, *args],
            input=stdin.encode() if isinstance(stdin, str) else stdin, capture_output=True, timeout=90)
        if check and result.returncode != 0:
            raise RuntimeError(f"notesctl {' '.join(args)} on {self.name}: {result.stderr.decode().strip()}")
        return result.stdout.decode()

    def ctl_json(self, *args, stdin=None):
        return json.loads(self.ctl("--json", *args, stdin=stdin))

    def login_url(self):
        return self.ctl_json("ui", "--no-open")["url"]

    def new_note(self, title, html):
        return self.ctl_json("new", "--title", title, stdin=html)

    def notes(self, *args):
        return self.ctl_json("ls", *args)

    def html(self, note_id):
        return self.ctl("show", note_id, "--html")

    def sync(self):
        return self.ctl_json("sync", "--wait")


def pair(inviter, joiner):
    """Puts `joiner` in `inviter`'s household over loopback and waits until both are caught up."""
    invite = inviter.ctl_json("invite")
    joiner.ctl("join", invite["code"], "--address", inviter.listen)
    wait_for(lambda: any(p["connected"] for p in joiner.ctl_json("status")["peers"]), f"{joiner.name} to connect to {inviter.name}")
    joiner.sync()
    inviter.sync()


class Browser:
    """Headless Chromium through chromedriver, with the console kept for the no-errors check."""

    def __init__(self, name, dark=False, size=(1400, 900)):
        self.name = name
        options = Options()
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={size[0]},{size[1]}", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--disable-component-update", "--lang=en-GB"]:
            options.add_argument(flag)
        if dark:
            options.add_argument("--force-dark-mode")
            options.add_argument("--blink-settings=preferredColorScheme=0")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.profile = tempfile.mkdtemp(prefix="notesd-chromium-")
        options.add_argument(f"--user-data-dir={self.profile}")
        service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.set_script_timeout(TIMEOUT)
        self.console = []

    def quit(self):
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    # ---- Waiting for what a person sees --------------------------------------------------

    def wait(self, condition, what, timeout=TIMEOUT):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException, NoSuchElementException)).until(lambda d: condition())
        except Exception as error:
            self.screenshot(f"failed-{self.name}")
            raise AssertionError(f"{self.name}: timed out waiting for {what}") from error

    def find(self, css):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def finds(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def visible(self, css):
        elements = [e for e in self.finds(css) if e.is_displayed()]
        return elements[0] if elements else None

    def wait_visible(self, css, what=None):
        return self.wait(lambda: self.visible(css), what or css)

    def wait_text(self, css, text, what=None):
        def check():
            element = self.visible(css)
            return element if element and text in element.text else None
        return self.wait(check, what or f"{text!r} in {css}")

    def button(self, label, scope="body"):
        """The visible button whose text is `label`."""
        def check():
            for element in self.finds(f"{scope} button"):
                if element.is_displayed() and element.text.strip() == label:
                    return element
            return None
        return self.wait(check, f"a button {label!r}")

    def press(self, label, scope="body"):
        """Clicks the button labelled `label`, again if the page redrew it under the pointer."""
        def attempt():
            try:
                self.button(label, scope).click()
                return True
            except StaleElementReferenceException:
                return False
        return self.wait(attempt, f"a click on {label!r}")

    def type_into(self, css, text):
        """Types `text` into the field `css` (again, whole, if the page redrew it meanwhile)."""
        def attempt():
            try:
                field = self.visible(css)
                if not field:
                    return False
                field.clear()
                field.send_keys(text)
                return field.get_attribute("value") == text
            except StaleElementReferenceException:
                return False
        return self.wait(attempt, f"{text!r} typed into {css}")

    def row(self, title):
        def check():
            for element in self.finds(".note-list .row"):
                if element.find_element(By.CSS_SELECTOR, ".title").text == title:
                    return element
            return None
        return self.wait(check, f"a note {title!r} in the list")

    # ---- Actions -------------------------------------------------------------------------

    def sign_in(self, daemon):
        self.driver.get(daemon.login_url())
        self.wait(lambda: self.driver.execute_script("return document.body.dataset.ready === 'true'"), "the app to be ready")
        return self

    def open_note(self, title):
        self.row(title).click()
        self.wait(lambda: self.visible(".title-input") and self.find(".title-input").get_attribute("value") == title, f"note {title!r} open")
        return self.find(".editor-body .ProseMirror")

    def saved(self):
        return self.wait(lambda: self.visible(".save-state") and self.find(".save-state").get_attribute("data-state") == "saved", "the note to be saved")

    def screenshot(self, name):
        os.makedirs(ARTIFACTS, exist_ok=True)
        path = os.path.join(ARTIFACTS, f"{name}.png")
        self.driver.save_screenshot(path)
        return path

    def console_errors(self):
        self.console.extend(self.driver.get_log("browser"))
        return [entry for entry in self.console if entry["level"] == "SEVERE"]


class PairedHousehold(unittest.TestCase):
    """Two daemons, the laptop and the desktop, paired, in a scratch directory that is removed
    afterwards (kept with NOTESD_KEEP=1). Subclasses start browsers with `browser` and may add
    daemons to `extra`; everything is stopped at the end."""

    prefix = "notesd-browser-"

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix=cls.prefix)
        cls.browsers = []
        cls.extra = []
        cls.laptop = Daemon("laptop", cls.base).start()
        cls.desktop = Daemon("desktop", cls.base).start()
        pair(cls.laptop, cls.desktop)

    @classmethod
    def browser(cls, name, **options):
        browser = Browser(name, **options)
        cls.browsers.append(browser)
        return browser

    @classmethod
    def tearDownClass(cls):
        for browser in cls.browsers:
            browser.quit()
        for daemon in [cls.laptop, cls.desktop, *cls.extra]:
            daemon.stop()
        if not os.environ.get("NOTESD_KEEP"):
            shutil.rmtree(cls.base, ignore_errors=True)
