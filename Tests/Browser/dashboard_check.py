#!/usr/bin/env python3
"""Drives the dashboard in headless Chromium (Debian's chromium + chromium-driver, through
selenium) against a real macrod. Run by MacroHTTPTests.DashboardBrowserTests (make test), which
starts the daemon and passes its URL, socket and binaries. Exits 0 when every check passed, 1
when one failed, 2 when the browser could not start: never skips."""

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

RESULTS = []


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="the dashboard URL with a one-time code (macro dashboard --no-open)")
    parser.add_argument("--socket", required=True, help="macrod's socket (for the macro CLI)")
    parser.add_argument("--macro", required=True, help="the macro binary")
    parser.add_argument("--macros-dir", required=True, help="the daemon's macros directory")
    parser.add_argument("--out", required=True, help="where screenshots go")
    parser.add_argument("--daemon-pid", type=int, required=True, help="macrod's pid (stopped last, for the banner check)")
    parser.add_argument("--plain-editor", action="store_true", help="macrod serves no CodeMirror: check the fallback editor")
    parser.add_argument("--restart", default="[]", help="JSON list: the command that starts macrod again on the same port")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    return parser.parse_args()


def start_browser(args):
    options = Options()
    options.binary_location = args.chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1280,1400", "--force-prefers-reduced-motion", "--lang=en-US"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit chromedriver path: selenium does not run Selenium Manager (no downloads).
    service = Service(executable_path=args.chromedriver, log_output=os.path.join(args.out, "chromedriver.log"))
    return webdriver.Chrome(service=service, options=options)


def macro(args, *arguments):
    result = subprocess.run([args.macro, *arguments, "--socket", args.socket, "--json"],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise AssertionError(f"macro {' '.join(arguments)} exited {result.returncode}: {result.stderr}")
    return json.loads(result.stdout) if result.stdout.strip() else None


def check(name):
    def wrap(body):
        def run(*a):
            started = time.monotonic()
            try:
                body(*a)
                RESULTS.append((name, True, ""))
                print(f"ok   {name} ({time.monotonic() - started:.2f} s)", flush=True)
            except Exception as error:  # noqa: BLE001 - every failure is reported, then the next check runs
                RESULTS.append((name, False, str(error)))
                print(f"FAIL {name}: {error}", flush=True)
                traceback.print_exc()
        return run
    return wrap


def ring(driver, channel):
    return driver.find_element(By.CSS_SELECTOR, f'#rings [role="progressbar"][aria-label="{channel}"]')


def wait_value(driver, channel, expected, seconds):
    def settled(_):
        now = ring(driver, channel).get_attribute("aria-valuenow")
        return now is not None and abs(float(now) - expected) < 1e-9
    try:
        WebDriverWait(driver, seconds, poll_frequency=0.02).until(settled)
    except TimeoutException:
        now = ring(driver, channel).get_attribute("aria-valuenow")
        raise AssertionError(f"ring {channel} shows {now}, expected {expected} within {seconds} s") from None


def button(driver, label, prefix=False):
    """The visible button whose accessible name is `label` (the list re-renders on every macro
    event, so a stale candidate means: look again)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            for candidate in driver.find_elements(By.TAG_NAME, "button"):
                name = candidate.accessible_name
                if candidate.is_displayed() and (name.startswith(label) if prefix else name == label):
                    return candidate
        except StaleElementReferenceException:
            continue
        time.sleep(0.02)
    raise AssertionError(f"no button named {label!r}")


def fresh(read, tries=20):
    """`read()` again when a re-render made what it found stale (tables re-render on every macro event)."""
    for _ in range(tries - 1):
        try:
            return read()
        except StaleElementReferenceException:
            time.sleep(0.02)
    return read()


def click(driver, label):
    """Clicks the button named `label`, again if the list re-rendered under the click."""
    for _ in range(5):
        try:
            button(driver, label).click()
            return
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"the button named {label!r} kept going stale")


def click_line_number(driver, line):
    """Clicks line number `line` in CodeMirror's gutter (which it re-renders at will: a stale
    candidate means look again)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            for number in driver.find_elements(By.CSS_SELECTOR, "#editor .CodeMirror-linenumber"):
                if number.text == str(line):
                    number.click()
                    return
        except StaleElementReferenceException:
            continue
        time.sleep(0.02)
    raise AssertionError(f"no line number {line} in the editor's gutter")


# Where each element is, for the viewport checks: [top, bottom, left, right], null when missing.
RECTS_SCRIPT = """
const rect = (element) => { if (!element) return null; const r = element.getBoundingClientRect();
  return [r.top, r.bottom, r.left, r.right]; };
return { viewport: [window.innerWidth, window.innerHeight],
  continue: rect(document.getElementById('debug-continue')), stack: rect(document.getElementById('debug-stack')),
  variables: rect(document.getElementById('debug-variables')), line: rect(document.querySelector('#editor .debug-current')) };
"""

# The visible buttons whose label takes more than one line (each line of a label is a client rect of its own).
WRAPPED_BUTTONS_SCRIPT = """
return Array.from(document.querySelectorAll('button')).filter((b) => b.offsetParent !== null && b.textContent.trim())
  .map((b) => { const range = document.createRange(); range.selectNodeContents(b);
    return [b.textContent.trim(), new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top))).size]; })
  .filter(([, lines]) => lines !== 1);
"""

# Each visible input with a placeholder: [id, the placeholder's width in the input's font, the room for text].
PLACEHOLDERS_SCRIPT = """
const context = document.createElement('canvas').getContext('2d');
return Array.from(document.querySelectorAll('input[placeholder]')).filter((i) => i.offsetParent !== null).map((i) => {
  const style = getComputedStyle(i); context.font = style.font;
  return [i.id, context.measureText(i.placeholder).width, i.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)]; });
"""


def within_viewport(rects):
    """The names of the rects (from RECTS_SCRIPT) that are missing or not wholly inside the viewport."""
    width, height = rects["viewport"]
    return [name for name in ("continue", "stack", "variables", "line")
            if rects[name] is None or rects[name][1] <= rects[name][0]
            or rects[name][0] < 0 or rects[name][1] > height or rects[name][2] < 0 or rects[name][3] > width]


def set_editor(driver, text):
    driver.execute_script("window.dashboard.editor.setValue(arguments[0])", text)


# Two markers' class, sign, accessible name and computed style ({} for a missing one); with a
# pseudo-element's content for the plain editor's markers (its gutter draws them with ::before/::after).
MARKERS_SCRIPT = """
return Array.from(arguments).map((selector) => { const e = document.querySelector(selector); if (!e) return {};
  const style = getComputedStyle(e);
  return { class: e.className, text: e.textContent, role: e.getAttribute('role'), label: e.getAttribute('aria-label') || '',
    title: e.title, background: style.backgroundColor, color: style.color, radius: style.borderRadius,
    before: getComputedStyle(e, '::before').content, after: getComputedStyle(e, '::after').content,
    afterBackground: getComputedStyle(e, '::after').backgroundColor, beforeColor: getComputedStyle(e, '::before').color }; });
"""


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    try:
        driver = start_browser(args)
    except Exception as error:  # noqa: BLE001
        print(f"error: the browser did not start ({args.chromium}, {args.chromedriver}): {error}", file=sys.stderr)
        return 2
    try:
        if args.plain_editor:
            run_plain_editor_checks(driver, args)
        else:
            run_checks(driver, args)
    finally:
        driver.quit()
    failed = [name for name, ok, _ in RESULTS if not ok]
    print(f"browser: {len(RESULTS) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def run_checks(driver, args):
    wait = WebDriverWait(driver, 10, poll_frequency=0.02)
    console = []

    def drain_console():
        console.extend(entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE")

    macro(args, "set", "inner", "2.5")
    macro(args, "set", "middle", "5")
    macro(args, "set", "outer", "7.5")

    @check("opened without a code or token the page says how to open it, and holds no credential")
    def bare():
        driver.get(args.url.split("?", 1)[0])
        wait.until(lambda d: d.find_element(By.ID, "banner").is_displayed())
        text = driver.find_element(By.ID, "banner").text
        assert text == "Cannot open the dashboard: no access token: open the URL that `macro dashboard` prints", text
        assert driver.find_element(By.ID, "link-state").text == "offline"
        assert driver.get_cookies() == [], driver.get_cookies()
    bare()

    @check("the page trades its one-time code for the token, drops it from the address, keeps no cookie, and goes live")
    def loads():
        assert "?code=" in args.url and "token" not in args.url, args.url
        driver.get(args.url)
        wait.until(lambda d: d.find_element(By.ID, "link-state").text == "live")
        assert "code=" not in driver.current_url and "token=" not in driver.current_url, driver.current_url
        # No cookie: a browser sends cookies to every port of 127.0.0.1. The token is in this
        # origin's sessionStorage only.
        assert driver.get_cookies() == [], driver.get_cookies()
        token = driver.execute_script("return sessionStorage.getItem('macrod.token')")
        assert token is not None and len(token) == 64, token
        # The code was traded once: presented again, it gets nothing.
        again = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/session', {method: 'POST', headers: {'Content-Type': 'application/json'},"
            " body: JSON.stringify({code: arguments[0]})}).then(r => r.text().then(t => done([r.status, t])));",
            args.url.split("code=", 1)[1])
        assert again == [401, "401 Unauthorized: this one-time code was already used; run `macro dashboard` again\n"], again
        # That refused request is the only console error it may leave.
        drain_console()
        refused = [entry for entry in console if "/session - Failed to load resource" in entry["message"] and "401" in entry["message"]]
        assert len(refused) == 1, console
        console.remove(refused[0])
    loads()

    @check("a reload stays live with the token from sessionStorage, still without a cookie")
    def reload():
        driver.refresh()
        wait.until(lambda d: d.find_element(By.ID, "link-state").text == "live")
        assert driver.get_cookies() == [], driver.get_cookies()
        assert "code=" not in driver.current_url, driver.current_url
    reload()

    @check("the rings show the model's values as accessible progress bars")
    def rings():
        for channel, value in (("inner", 2.5), ("middle", 5.0), ("outer", 7.5)):
            wait_value(driver, channel, value, 5)
            element = ring(driver, channel)
            assert element.aria_role == "progressbar", element.aria_role
            assert element.accessible_name == channel, element.accessible_name
            assert element.get_attribute("aria-valuemin") == "0" and element.get_attribute("aria-valuemax") == "10"
            arc = element.find_element(By.CSS_SELECTOR, ".ring-arc")
            circumference = float(arc.get_attribute("data-circumference"))
            offset = float(arc.get_attribute("stroke-dashoffset"))
            assert abs(offset - circumference * (1 - value / 10)) < 0.01, (channel, offset, circumference)
        legend = driver.find_element(By.ID, "value-outer").text
        assert legend == "7.5", legend
        wait.until(lambda d: d.find_element(By.ID, "status-connections").text not in ("", "–"))
        driver.save_screenshot(os.path.join(args.out, "dashboard.png"))
    rings()

    @check("macro set from the CLI moves a ring within a second")
    def cli_set():
        macro(args, "set", "outer", "3")
        wait_value(driver, "outer", 3.0, 1.0)
    cli_set()

    @check("clicking Run bump changes the ring and shows the result")
    def run_bump():
        driver.find_element(By.ID, "arg-bump-channel").send_keys("inner")
        driver.find_element(By.ID, "arg-bump-amount").send_keys("1.5")
        click(driver, "Run bump")
        wait_value(driver, "inner", 4.0, 5)
        wait.until(lambda d: d.find_element(By.ID, "outcome-bump").text == "→ 4")
    run_bump()

    @check("Debug bump stops at a gutter breakpoint, highlights its line, shows the stack and variables, steps, evaluates, and ends without moving the rings")
    def debug_bump():
        click(driver, "Edit bump")
        wait.until(lambda d: "function bump" in d.execute_script("return window.dashboard.editor.getValue()"))
        click_line_number(driver, 7)
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [7])
        click(driver, "Debug bump")
        try:
            wait.until(lambda d: d.execute_script("return window.dashboard.editor.currentLine()") == 7)
        except TimeoutException:
            raise AssertionError("not stopped at line 7: status %r, stack %r, console %r, current line %r, logs %r" % (
                driver.find_element(By.ID, "debug-status").text, driver.find_element(By.ID, "debug-stack").text,
                driver.find_element(By.ID, "debug-console").text, driver.execute_script("return window.dashboard.editor.currentLine()"),
                driver.get_log("browser"))) from None
        status = driver.find_element(By.ID, "debug-status").text
        assert status == "Paused on breakpoint at bump.js:7:5", status
        wait.until(lambda d: d.find_element(By.ID, "debug-stack").text == "bump bump.js:7:5")
        wait.until(lambda d: 'channel: "inner"' in d.find_element(By.ID, "debug-variables").text)
        driver.execute_script("document.getElementById('editor-title').scrollIntoView()")
        driver.save_screenshot(os.path.join(args.out, "debugger.png"))
        assert "amount: 1.5" in driver.find_element(By.ID, "debug-variables").text, driver.find_element(By.ID, "debug-variables").text
        # Step over with its key, F10.
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.F10)
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.currentLine()") == 8)
        field = driver.find_element(By.ID, "debug-expression")
        field.send_keys("progress[channel] * 2")
        click(driver, "Evaluate")
        wait.until(lambda d: d.find_element(By.ID, "debug-console").text.endswith("> progress[channel] * 2\n11"))
        click(driver, "Continue")
        wait.until(lambda d: d.find_element(By.ID, "debug-status").text == "bump ended: → 5.5")
        last = driver.find_element(By.ID, "debug-console").text.split("\n")[-1]
        assert last == "→ 5.5 (would change inner 4 → 5.5; the rings were not moved)", last
        wait_value(driver, "inner", 4.0, 1)
        assert driver.execute_script("return window.dashboard.editor.currentLine()") is None
        assert button(driver, "Continue").get_attribute("disabled") is not None
        click_line_number(driver, 7)
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [])
    debug_bump()

    @check("in a 1280×800 window, Debug bump pressed at the top of the page shows the paused line, Continue, the call stack and the variables together; the session's end empties the stack and variables")
    def debug_fits():
        try:
            driver.set_window_size(1280, 800)
            wait.until(lambda d: d.execute_script("return [window.outerWidth, window.outerHeight]") == [1280, 800])
            driver.execute_script("window.scrollTo(0, 0)")
            click_line_number(driver, 7)
            wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [7])
            driver.execute_script("window.scrollTo(0, 0)")
            click(driver, "Debug bump")
            wait.until(lambda d: d.execute_script("return window.dashboard.editor.currentLine()") == 7)
            wait.until(lambda d: d.find_element(By.ID, "debug-stack").text == "bump bump.js:7:5")
            wait.until(lambda d: 'channel: "inner"' in d.find_element(By.ID, "debug-variables").text)
            try:
                wait.until(lambda d: within_viewport(d.execute_script(RECTS_SCRIPT)) == [])
            except TimeoutException:
                rects = driver.execute_script(RECTS_SCRIPT)
                raise AssertionError(f"not on screen: {within_viewport(rects)} ({rects})") from None
            driver.save_screenshot(os.path.join(args.out, "debugger-1280x800.png"))
            click(driver, "Continue")
            wait.until(lambda d: d.find_element(By.ID, "debug-status").text == "bump ended: → 5.5")
            shown = driver.execute_script(
                "return ['debug-stack', 'debug-variables'].map((id) => [document.getElementById(id).childElementCount,"
                " document.getElementById(id).textContent])")
            assert shown == [[0, ""], [0, ""]], shown
            click_line_number(driver, 7)
            wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [])
        finally:
            driver.set_window_size(1280, 1400)
    debug_fits()

    @check("at 1280×800 and at 400 px every button's label is on one line, the debug controls are equally wide, and each placeholder fits its field")
    def labels():
        try:
            for width, height in ((1280, 800), (400, 1400)):
                driver.set_window_size(width, height)
                wait.until(lambda d: d.execute_script("return [document.documentElement.clientWidth <= arguments[0], window.innerHeight <= arguments[1]]",
                                                      width, height) == [True, True])
                wrapped = driver.execute_script(WRAPPED_BUTTONS_SCRIPT)
                assert wrapped == [], f"at {width} px these labels take more than one line: {wrapped}"
                widths = driver.execute_script(
                    "return Array.from(document.querySelectorAll('#debug .debug-controls button')).map((b) => b.getBoundingClientRect().width)")
                assert len(widths) == 5 and max(widths) - min(widths) < 0.01, f"at {width} px the debug controls are {widths} px wide"
                placeholders = driver.execute_script(PLACEHOLDERS_SCRIPT)
                assert "arg-bump-channel" in [field for field, _, _ in placeholders], placeholders
                cut = [entry for entry in placeholders if entry[1] > entry[2]]
                assert cut == [], f"at {width} px these placeholders are cut: {cut}"
        finally:
            driver.set_window_size(1280, 1400)
    labels()

    @check("a thrown error shows file:line:column and the stack")
    def thrown():
        field = driver.find_element(By.ID, "arg-bump-channel")
        field.clear()
        field.send_keys("sideways")
        click(driver, "Run bump")
        wait.until(lambda d: "bump.js:" in d.find_element(By.ID, "outcome-bump").text)
        text = driver.find_element(By.ID, "outcome-bump").text
        bump = os.path.join(args.macros_dir, "bump.js")
        expected = f"{bump}:5:29: error: RangeError: unknown channel 'sideways'; use inner, middle or outer\n    at bump ({bump}:5:29)"
        assert text == expected, text
        field.clear()
    thrown()

    @check("a broken save shows the error at its line and the old version still answers")
    def broken_save():
        # Emptied first: when the editor already shows bump, the text of this open arrives after
        # a wait on bump's text would have ended, and replaced the broken text typed meanwhile.
        set_editor(driver, "")
        click(driver, "Edit bump")
        wait.until(lambda d: "(channel, amount)" in d.execute_script("return window.dashboard.editor.getValue()"))
        assert driver.execute_script("return window.dashboard.editor.kind") == "codemirror"
        set_editor(driver, "// broken on purpose\nfunction(channel, amount) {\n    progress[channel] += ;\n}\n")
        click(driver, "Save")
        try:
            wait.until(lambda d: d.find_element(By.ID, "editor-diagnostic").get_attribute("data-line") == "3")
        except Exception:
            # Say what the page showed instead (a flake in CI once: the cause was not visible).
            shown = driver.execute_script(
                "return [document.getElementById('editor-diagnostic').textContent, document.getElementById('banner').hidden,"
                " document.getElementById('banner').textContent, window.dashboard.online, window.dashboard.connects]")
            raise AssertionError(f"no diagnostic at line 3; the page showed {shown}")
        text = driver.find_element(By.ID, "editor-diagnostic").text
        assert f"{os.path.join(args.macros_dir, 'bump.js')}:3:" in text, text
        marked = driver.find_element(By.CSS_SELECTOR, "#editor .error-line .CodeMirror-linenumber").text
        assert marked == "3", marked
        assert len(driver.find_elements(By.CSS_SELECTOR, "#editor .error-marker")) == 1
        # The error's marker is not a breakpoint's: another class, sign, shape and colours, and a label.
        click_line_number(driver, 1)
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [1])
        markers = driver.execute_script(MARKERS_SCRIPT, "#editor .error-marker", "#editor .breakpoint-marker")
        error, breakpoint = markers
        assert (error["class"], error["text"], error["role"], error["background"], error["color"]) == (
            "error-marker", "!", "img", "rgb(179, 38, 30)", "rgb(255, 255, 255)"), error
        assert error["radius"] == "3px" and error["label"].startswith("Error on line 3: ") and error["label"] == error["title"], error
        assert (breakpoint["class"], breakpoint["text"], breakpoint["role"], breakpoint["background"], breakpoint["color"]) == (
            "breakpoint-marker", "●", "img", "rgba(0, 0, 0, 0)", "rgb(221, 51, 51)"), breakpoint
        assert breakpoint["label"] == "Breakpoint on line 1" == breakpoint["title"], breakpoint
        underline = driver.execute_script(
            "return getComputedStyle(document.querySelector('#editor .error-line .CodeMirror-line')).textDecorationStyle")
        assert underline == "wavy", underline
        driver.save_screenshot(os.path.join(args.out, "broken-save.png"))
        click_line_number(driver, 1)
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [])
        result = macro(args, "run", "bump", "middle", "1")
        assert result["result"] == 6, result
        wait_value(driver, "middle", 6.0, 1.0)
    broken_save()

    @check("a good save is live at once")
    def good_save():
        set_editor(driver, "function(channel, amount) {\n    progress[channel] = 1;\n    return 'saved';\n}\n")
        click(driver, "Save")
        wait.until(lambda d: "live" in d.find_element(By.ID, "editor-diagnostic").text)
        assert driver.find_elements(By.CSS_SELECTOR, "#editor .error-line") == []
        result = macro(args, "run", "bump", "outer")
        assert result["result"] == "saved", result
        wait_value(driver, "outer", 1.0, 1.0)
    good_save()

    @check("a broken macro file is marked with its diagnostic")
    def broken_file():
        with open(os.path.join(args.macros_dir, "oops.js"), "w") as handle:
            handle.write("function() {\n    return 1 +;\n}\n")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-macro="oops"].broken .macro-error'))
        text = driver.find_element(By.CSS_SELECTOR, '[data-macro="oops"] .macro-error').text
        assert text.startswith(os.path.join(args.macros_dir, "oops.js") + ":2:"), text
    broken_file()

    @check("lib files are listed as shared code, not as macros to run or edit, and the picker shows each macro's own text")
    def lib_files():
        Select = __import__("selenium.webdriver.support.select", fromlist=["Select"]).Select
        names = [candidate.accessible_name for candidate in driver.find_elements(By.TAG_NAME, "button")]
        assert "Run bump" in names and not [name for name in names if "lib/" in name], names
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-lib="lib/rings"]'))
        assert not driver.find_elements(By.CSS_SELECTOR, '[data-macro="lib/rings"]')
        text = driver.find_element(By.CSS_SELECTOR, '[data-lib="lib/rings"]').text
        assert text.startswith("lib/rings\nshared code\n"), text
        values = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#editor-macro option")]
        assert "lib/rings" not in values and "bump" in values, values
        for name in values:
            Select(driver.find_element(By.ID, "editor-macro")).select_by_value(name)
            with open(os.path.join(args.macros_dir, f"{name}.js")) as handle:
                expected = handle.read()
            wait.until(lambda d: d.execute_script("return window.dashboard.editor.getValue()") == expected)
            assert driver.find_element(By.ID, "editor-macro").get_attribute("value") == name
        # A broken lib file is marked with its diagnostic; fixed, it is not.
        rings = os.path.join(args.macros_dir, "lib", "rings.js")
        with open(rings) as handle:
            good = handle.read()
        with open(rings, "w") as handle:
            handle.write("function setAll(v) {\n    progress.inner = v +;\n}\n")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-lib="lib/rings"].broken .macro-error'))
        error = driver.find_element(By.CSS_SELECTOR, '[data-lib="lib/rings"] .macro-error').text
        assert error.startswith(f"{rings}:2:"), error
        with open(rings, "w") as handle:
            handle.write(good)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-lib="lib/rings"]:not(.broken)'))
    lib_files()

    @check("create, rename and delete a macro from the editor")
    def lifecycle():
        click(driver, "New…")
        driver.find_element(By.ID, "editor-name").send_keys("twice")
        click(driver, "Create")
        # The template uses the named form: a bare `function(x) {` file is not a valid script
        # (TypeScript reports TS1003, Identifier expected).
        template = driver.execute_script("return window.dashboard.editor.getValue()")
        assert "\nfunction twice() {\n" in template, template
        set_editor(driver, "function(x) {\n    return x * 2;\n}\n")
        click(driver, "Save")
        wait.until(lambda d: d.find_elements(By.ID, "arg-twice-x"))
        assert macro(args, "run", "twice", "21")["result"] == 42
        click(driver, "Rename…")
        name = driver.find_element(By.ID, "editor-name")
        name.clear()
        name.send_keys("double")
        click(driver, "Rename")
        wait.until(lambda d: d.find_elements(By.ID, "arg-double-x") and not d.find_elements(By.ID, "arg-twice-x"))
        assert os.path.exists(os.path.join(args.macros_dir, "double.js"))
        assert not os.path.exists(os.path.join(args.macros_dir, "twice.js"))
        click(driver, "Delete…")
        click(driver, "Delete double")
        wait.until(lambda d: not d.find_elements(By.ID, "arg-double-x"))
        assert not os.path.exists(os.path.join(args.macros_dir, "double.js"))
    lifecycle()

    @check("Cancel stops a runaway call")
    def cancel():
        click(driver, "Run spin")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#running tr"))
        row = driver.find_element(By.CSS_SELECTOR, "#running tr")
        assert "spin" in row.text, row.text
        driver.save_screenshot(os.path.join(args.out, "running.png"))
        button(driver, "Cancel spin (call ", prefix=True).click()
        wait.until(lambda d: "cancelled" in d.find_element(By.ID, "outcome-spin").text)
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#running tr"))
        macro(args, "set", "inner", "9")
        wait_value(driver, "inner", 9.0, 1.0)
    cancel()

    @check("the macro buttons work from the keyboard")
    def keyboard():
        field = driver.find_element(By.ID, "arg-bump-channel")
        field.click()
        field.send_keys("middle")
        field.send_keys(Keys.SHIFT, Keys.TAB)
        assert driver.switch_to.active_element.accessible_name == "Edit bump", driver.switch_to.active_element.accessible_name
        driver.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)
        assert driver.switch_to.active_element.accessible_name == "Debug bump", driver.switch_to.active_element.accessible_name
        driver.switch_to.active_element.send_keys(Keys.SHIFT, Keys.TAB)
        focused = driver.switch_to.active_element
        assert focused.accessible_name == "Run bump", focused.accessible_name
        macro(args, "set", "middle", "6")
        wait_value(driver, "middle", 6.0, 1.0)
        focused.send_keys(Keys.ENTER)
        # bump is the version saved above: it sets the channel to 1 and returns "saved".
        wait_value(driver, "middle", 1.0, 5)
        wait.until(lambda d: d.find_element(By.ID, "outcome-bump").text == '→ "saved"')
        assert driver.switch_to.active_element.get_attribute("id") == "run-bump"
        driver.find_element(By.ID, "arg-bump-channel").clear()
    keyboard()

    @check("the live log shows console output of a macro")
    def log():
        click(driver, "Run chatty")
        wait.until(lambda d: "hello from chatty" in d.find_element(By.ID, "log").text)
    log()

    @check("the log shows each record's own time, not the time the page received it")
    def log_times():
        # The page's history comes from log.recent at load; each entry shows its record's time.
        entries = driver.execute_script(
            "return Array.from(document.querySelectorAll('#log li[data-time]')).map(function (e) {"
            " return [e.getAttribute('data-time'), e.querySelector('.time').textContent,"
            " new Date(e.getAttribute('data-time')).toLocaleTimeString()]; })")
        lines = subprocess.run([args.macro, "logs", "--lines", "200", "--socket", args.socket, "--json"],
                               capture_output=True, text=True, timeout=30).stdout.splitlines()
        recent = [json.loads(line)["time"] for line in lines if line.strip()]
        assert entries, "no log entries with their time"
        for iso, text, expected in entries:
            assert text == expected, (iso, text, expected)
        assert entries[0][0] in recent, (entries[0], recent[:3])
    log_times()

    @check("the status shows calls, errors and clients")
    def status():
        wait.until(lambda d: int(d.find_element(By.ID, "status-calls").text or 0) >= 4)
        assert int(driver.find_element(By.ID, "status-errors").text) >= 1
        assert int(driver.find_element(By.ID, "status-connections").text) >= 1
        driver.save_screenshot(os.path.join(args.out, "dashboard-after.png"))
    status()

    def stat(name, key):
        cells = driver.find_elements(By.CSS_SELECTOR, f'#stats tr[data-macro="{name}"] [data-stat="{key}"]')
        return cells[0].text if cells else None

    @check("the statistics table counts a scripted mix of calls exactly, and Reset empties a row")
    def statistics():
        click(driver, "Reset all")
        wait.until(lambda d: stat("flaky", "calls") in (None, "0"))
        for _ in range(3):
            assert macro(args, "run", "flaky", "false")["result"] == 1
        for _ in range(2):
            failed = subprocess.run([args.macro, "run", "flaky", "true", "--socket", args.socket], capture_output=True, text=True, timeout=30)
            assert failed.returncode == 65, (failed.returncode, failed.stderr)
        slow = WebDriverWait(driver, 10, poll_frequency=0.05)
        slow.until(lambda d: stat("flaky", "calls") == "5")
        assert (stat("flaky", "ok"), stat("flaky", "threw"), stat("flaky", "timeout")) == ("3", "2", "0")
        assert stat("flaky", "p50").endswith(" ms") and stat("flaky", "max").endswith(" ms"), stat("flaky", "p50")
        assert "threw: Error: asked to fail" in stat("flaky", "lastError"), stat("flaky", "lastError")
        driver.find_element(By.CSS_SELECTOR, 'button[aria-label="Reset flaky"]').click()
        slow.until(lambda d: stat("flaky", "calls") == "0" and stat("flaky", "lastError") == "")
        assert macro(args, "stats", "flaky")[0]["calls"] == 0
    statistics()

    @check("at 400 px and at 1,200 px the page does not scroll sideways, and a statistics row stays short")
    def narrow():
        try:
            for width in (400, 1200):
                driver.set_window_size(width, 1400)
                wait.until(lambda d: d.execute_script("return document.documentElement.clientWidth") <= width)
                sizes = driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
                assert sizes[0] <= sizes[1], f"at {width} px the page is {sizes[0]} px wide ({sizes[1]} px visible)"
            heights = driver.execute_script("return Array.from(document.querySelectorAll('#stats tr')).map(function (r) { return r.getBoundingClientRect().height; })")
            assert heights and max(heights) < 120, f"statistics rows are {heights} px tall"
        finally:
            driver.set_window_size(1280, 1400)
    narrow()

    @check("profiling a macro draws a flame graph whose widest frame under the macro is its hot function")
    def profile():
        Select = __import__("selenium.webdriver.support.select", fromlist=["Select"]).Select
        WebDriverWait(driver, 10, poll_frequency=0.05).until(
            lambda d: "heavy" in [o.get_attribute("value") for o in d.find_elements(By.CSS_SELECTOR, "#profile-macro option")])
        Select(driver.find_element(By.ID, "profile-macro")).select_by_value("heavy")
        runs = driver.find_element(By.ID, "profile-runs")
        runs.clear()
        runs.send_keys("3")
        click(driver, "Profile")
        WebDriverWait(driver, 60, poll_frequency=0.1).until(lambda d: "samples of 3 runs of heavy" in d.find_element(By.ID, "profile-message").text)
        frames = driver.execute_script(
            "return [...document.querySelectorAll('#flame .frame')].map(g => [g.dataset.name, Number(g.dataset.samples), Number(g.dataset.depth), g.querySelector('title').textContent])")
        top = [f for f in frames if f[2] == 1]
        assert len(top) == 1 and top[0][0].startswith("heavy ("), top
        under = sorted((f for f in frames if f[2] == 2), key=lambda f: -f[1])
        assert under and under[0][0].startswith("hot ("), under
        assert under[0][1] * 2 > top[0][1], (under[0], top[0])
        assert under[0][3].startswith(under[0][0] + ": ") and "%)" in under[0][3], under[0][3]
        flame = driver.find_element(By.ID, "flame")
        assert flame.is_displayed() and flame.size["height"] > 30, flame.size
        driver.save_screenshot(os.path.join(args.out, "profile.png"))
        Select(driver.find_element(By.ID, "profile-macro")).select_by_value("flaky")
        click(driver, "Profile")
        WebDriverWait(driver, 30, poll_frequency=0.1).until(lambda d: "Not profiled" in d.find_element(By.ID, "profile-message").text
                                                          or "samples of 3 runs of flaky" in d.find_element(By.ID, "profile-message").text)
    profile()

    @check("the history shows bump's versions with a diff, restores one, and the audit log names the dashboard")
    def history():
        click(driver, "Edit bump")
        # bump's versions: the file macrod started with, then the good save above (the broken one never went live).
        # The table re-renders on every macro event: read it in one script, so no row goes stale under the read.
        rows = "return [...document.querySelectorAll('#history tr')].map(r => [r.dataset.version, r.classList.contains('current')])"
        wait.until(lambda d: len(d.execute_script(rows)) == 2)
        shown = driver.execute_script(rows)
        assert [v for v, current in shown if current] == ["2"], shown
        click(driver, "Diff version 1")
        wait.until(lambda d: "+    return 'saved';" in d.find_element(By.ID, "history-diff").text)
        click(driver, "Restore version 1")
        wait.until(lambda d: "Restored version 1 of bump: live as version 3." in d.find_element(By.ID, "history-message").text)
        wait.until(lambda d: "(channel, amount)" in d.execute_script("return window.dashboard.editor.getValue()")
                   and "'saved'" not in d.execute_script("return window.dashboard.editor.getValue()"))
        result = macro(args, "run", "bump", "outer", "2")
        assert result["result"] != "saved", result
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#audit tr[data-kind="rollback"]'))
        row = fresh(lambda: driver.find_element(By.CSS_SELECTOR, '#audit tr[data-kind="rollback"]').text)
        assert "dashboard session" in row and "bump" in row, row
        events = subprocess.run([args.macro, "audit", "--kind", "rollback", "--socket", args.socket, "--json"],
                                capture_output=True, text=True, timeout=30).stdout.splitlines()
        assert len(events) == 1 and json.loads(events[0])["who"]["surface"] == "dashboard", events
        driver.save_screenshot(os.path.join(args.out, "history.png"))
    history()

    @check("the store card edits bump's store, and the runs card shows a failed run and replays it to its throw")
    def store_and_runs():
        click(driver, "Edit bump")
        driver.find_element(By.ID, "store-key").send_keys("note")
        driver.find_element(By.ID, "store-value").send_keys('{"a": [1, 2]}')
        click(driver, "Set")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#store tr[data-key="note"]'))
        shown = fresh(lambda: driver.find_element(By.CSS_SELECTOR, '#store tr[data-key="note"] input').get_attribute("value"))
        assert shown == '{"a":[1,2]}', shown
        stored = subprocess.run([args.macro, "store", "bump", "note", "--socket", args.socket], capture_output=True, text=True, timeout=30).stdout.strip()
        assert stored == '{"a":[1,2]}', stored
        # flaky failed above: its run is listed, marked failed, and replays to the throw (line 2).
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#runs tr.failed"))
        run, text = fresh(lambda: (lambda row: (row.get_attribute("data-run"), row.text))(
            driver.find_element(By.CSS_SELECTOR, "#runs tr.failed")))
        assert "flaky" in text and "asked to fail" in text, text
        click(driver, f"Show run {run}")
        wait.until(lambda d: "error: " in d.find_element(By.ID, "run-detail").text)
        detail = driver.find_element(By.ID, "run-detail").text
        assert "arguments: [true]" in detail and "flaky.js:2:" in detail, detail
        click(driver, f"Debug run {run}")
        WebDriverWait(driver, 30, poll_frequency=0.1).until(lambda d: "Paused on exception" in d.find_element(By.ID, "debug-status").text)
        assert "flaky.js:2" in driver.find_element(By.ID, "debug-status").text, driver.find_element(By.ID, "debug-status").text
        click(driver, "Stop")
        driver.save_screenshot(os.path.join(args.out, "runs.png"))
    store_and_runs()

    @check("the page logged no console errors")
    def no_errors():
        drain_console()
        assert console == [], console
    no_errors()

    @check("the dark colour scheme changes the page's colours")
    def dark():
        light = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        wait.until(lambda d: d.execute_script("return getComputedStyle(document.body).backgroundColor") != light)
        dark_background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert dark_background == "rgb(13, 14, 17)", dark_background
        assert light == "rgb(244, 245, 247)", light
        driver.save_screenshot(os.path.join(args.out, "dashboard-dark.png"))
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    dark()

    @check("a banner says so when the daemon goes away")
    def banner():
        os.kill(args.daemon_pid, 15)
        wait.until(lambda d: d.find_element(By.ID, "banner").is_displayed())
        text = driver.find_element(By.ID, "banner").text
        assert "macrod went away" in text, text
        assert driver.find_element(By.ID, "link-state").text == "offline"
        driver.save_screenshot(os.path.join(args.out, "daemon-gone.png"))
    banner()

    restart = json.loads(args.restart)
    if restart:
        @check("when macrod comes back the page says the token changed, and the new URL is live")
        def comeback():
            daemon = subprocess.Popen(restart, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(args.out, "macrod-restarted.log"), "w"))
            try:
                WebDriverWait(driver, 20, poll_frequency=0.05).until(
                    lambda d: "new access token" in d.find_element(By.ID, "banner").text)
                url = subprocess.run([args.macro, "dashboard", "--socket", args.socket], capture_output=True, text=True,
                                     timeout=30).stdout.strip()
                assert url.startswith("http://127.0.0.1:") and "?code=" in url and url != args.url, url
                driver.get(url)
                wait.until(lambda d: d.find_element(By.ID, "link-state").text == "live")
                assert not driver.find_element(By.ID, "banner").is_displayed()
                wait_value(driver, "inner", 9.0, 5)
            finally:
                daemon.terminate()
                daemon.wait(timeout=30)
        comeback()


def run_plain_editor_checks(driver, args):
    """Without CodeMirror: a textarea with line numbers, and the error marked in its gutter."""
    wait = WebDriverWait(driver, 10, poll_frequency=0.02)

    @check("without CodeMirror the editor is a text area with line numbers")
    def plain():
        driver.get(args.url)
        wait.until(lambda d: d.find_element(By.ID, "link-state").text == "live")
        click(driver, "Edit bump")
        wait.until(lambda d: "(channel, amount)" in d.find_element(By.CSS_SELECTOR, "#editor textarea").get_attribute("value"))
        assert driver.execute_script("return window.dashboard.editor.kind") == "plain"
        assert driver.find_element(By.CSS_SELECTOR, "#editor textarea").accessible_name == "Macro source"
        lines = len(driver.find_element(By.CSS_SELECTOR, "#editor textarea").get_attribute("value").split("\n"))
        assert len(driver.find_elements(By.CSS_SELECTOR, "#editor .gutter li")) == lines
    plain()

    @check("without CodeMirror a gutter click sets a breakpoint, Debug bump stops there with the line marked, Step into steps, and Stop ends it")
    def plain_debug():
        gutter_line = lambda n: driver.find_elements(By.CSS_SELECTOR, "#editor .gutter li")[n - 1]
        gutter_line(7).click()
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [7])
        driver.find_element(By.ID, "arg-bump-channel").send_keys("outer")
        driver.find_element(By.ID, "arg-bump-amount").send_keys("2")
        click(driver, "Debug bump")
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.currentLine()") == 7)
        assert "debug-current" in gutter_line(7).get_attribute("class"), gutter_line(7).get_attribute("class")
        wait.until(lambda d: 'channel: "outer"' in d.find_element(By.ID, "debug-variables").text)
        click(driver, "Step into")
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.currentLine()") == 8)
        click(driver, "Stop")
        wait.until(lambda d: d.find_element(By.ID, "debug-status").text == "bump ended: error: the debug session was terminated")
        assert driver.execute_script("return window.dashboard.editor.currentLine()") is None
        shown = driver.execute_script(
            "return ['debug-stack', 'debug-variables'].map((id) => [document.getElementById(id).childElementCount,"
            " document.getElementById(id).textContent])")
        assert shown == [[0, ""], [0, ""]], shown
        gutter_line(7).click()
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [])
        driver.find_element(By.ID, "arg-bump-channel").clear()
        driver.find_element(By.ID, "arg-bump-amount").clear()
    plain_debug()

    @check("without CodeMirror a broken save marks its line in the gutter and the old version still answers")
    def broken():
        area = driver.find_element(By.CSS_SELECTOR, "#editor textarea")
        area.send_keys(Keys.CONTROL, "a")
        area.send_keys(Keys.DELETE)
        area.send_keys("function(channel) {\n    return 1;\n    }}\n")
        assert [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#editor .gutter li")] == ["1", "2", "3", "4"]
        area.send_keys(Keys.CONTROL, "s")
        wait.until(lambda d: d.find_element(By.ID, "editor-diagnostic").get_attribute("data-line") == "3")
        marked = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#editor .gutter li.error-line")]
        assert marked == ["3"], marked
        # The error's marker is a "!" on red after the number, a breakpoint's a red dot before it.
        driver.find_elements(By.CSS_SELECTOR, "#editor .gutter li")[0].click()
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [1])
        error, breakpoint = driver.execute_script(MARKERS_SCRIPT, "#editor .gutter li.error-line", "#editor .gutter li.breakpoint")
        assert (error["after"], error["afterBackground"], error["before"]) == ('"!"', "rgb(179, 38, 30)", "none"), error
        assert error["title"].startswith("Error on line 3: "), error
        assert (breakpoint["before"], breakpoint["beforeColor"], breakpoint["after"]) == ('"●"', "rgb(221, 51, 51)", "none"), breakpoint
        driver.find_elements(By.CSS_SELECTOR, "#editor .gutter li")[0].click()
        wait.until(lambda d: d.execute_script("return window.dashboard.editor.breakpoints()") == [])
        text = driver.find_element(By.ID, "editor-diagnostic").text
        assert f"{os.path.join(args.macros_dir, 'bump.js')}:3:" in text, text
        driver.save_screenshot(os.path.join(args.out, "plain-editor.png"))
        assert macro(args, "run", "bump", "inner", "2")["result"] == 2
    broken()

    @check("the page logged no console errors")
    def no_errors():
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == [], errors
    no_errors()

    @check("after an engine stall macrod restarts itself and the page reconnects by itself")
    def stall():
        click(driver, "Run chain")
        wait.until(lambda d: "the engine was restarted" in d.find_element(By.ID, "outcome-chain").text)
        # The old process's WebSocket closed; the new one has the same token and port.
        WebDriverWait(driver, 20, poll_frequency=0.05).until(
            lambda d: d.execute_script("return window.dashboard.connects") == 2
            and d.find_element(By.ID, "link-state").text == "live" and not d.find_element(By.ID, "banner").is_displayed())
        macro(args, "set", "outer", "4")
        wait_value(driver, "outer", 4.0, 1.0)
        assert driver.current_url.startswith(args.url.split("?")[0]), driver.current_url
    stall()


if __name__ == "__main__":
    sys.exit(main())
