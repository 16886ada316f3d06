"""A real headless Chromium for the site tests, driven over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: NUL-separated JSON on file descriptors 3 and 4), with the standard library only.

    with Chromium(executable, profile_dir) as browser:
        page = browser.open("http://127.0.0.1:8000/index.html", width=400, height=900)
        page.evaluate("document.title")
        png = page.screenshot()
        page.evaluate(layout_probe("article pre, article table"))  # what is wider than the window
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--mute-audio"]


class BrowserError(RuntimeError):
    pass


class Chromium:
    """One headless Chromium process; ``open`` gives a tab (a ``Page``) at a URL and window size."""

    def __init__(self, executable: str, profile: Path, timeout: float = 60) -> None:
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child's ends, out of the way of 3 and 4, which they become in the child
        child_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)

        def wire() -> None:  # in the child, before exec: dup2 leaves 3 and 4 inheritable
            os.dup2(child_r, 3)
            os.dup2(child_w, 4)

        self.proc = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
                                      "about:blank"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, preexec_fn=wire, close_fds=False)
        for fd in (to_browser_r, from_browser_w, child_r, child_w):
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.proc.stderr:
            self.proc.stderr.close()

    # -- the protocol ---------------------------------------------------------------------------
    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its result (events that arrive meanwhile are kept in ``events``)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, timeout: float | None = None) -> dict:
        """The next event ``method`` of ``session`` (one that already arrived counts)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for k, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(k)
            self.events.append(self._read(deadline - time.monotonic()))

    def _read(self, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise BrowserError("no answer from Chromium")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the pipe: " + (self.proc.stderr.read().decode(errors="replace")
                                                                    if self.proc.stderr else ""))
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    # -- tabs -----------------------------------------------------------------------------------
    def open(self, url: str, width: int, height: int) -> Page:
        """A new tab of ``width`` x ``height`` CSS pixels (a phone-like, touch viewport below 600), at ``url``
        once it has loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
        page.goto(url)
        return page


class Page:
    """One tab."""

    def __init__(self, browser: Chromium, target: str, session: str) -> None:
        self.browser, self.target, self.session = browser, target, session

    def call(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})
        self.browser.wait_event("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.2)

    def screenshot(self) -> bytes:
        """A PNG of the viewport."""
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})


# -- probes: JavaScript for Page.evaluate ---------------------------------------------------------------
def layout_probe(selector: str, clipped: str = "", extra: dict[str, str] | None = None) -> str:
    """What a screen shows of the elements ``selector`` matches, as ``{bad, pageWidth, vw, ...}``: ``bad`` names
    each one shown past the window's left or right edge (one inside a box that scrolls sideways is shown by that
    box, which must fit) and each one matching ``clipped`` whose content is wider than itself (cut off at the
    right); ``extra`` adds values by name, each a JavaScript expression evaluated in the page. One builder for the
    site's pages (tests/test_docs_site.py) and the class report (tests/test_grade_class.py)."""
    fields = "".join(f", {json.dumps(name)}: ({expr})" for name, expr in (extra or {}).items())
    return f"""(() => {{
  const vw = window.innerWidth, bad = [], clipped = {json.dumps(clipped)};
  for (const el of document.querySelectorAll({json.dumps(selector)})) {{
    const r = el.getBoundingClientRect();
    if (!r.width) continue;
    let box = el;
    while (box && box !== document.body && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX))
      box = box.parentElement;
    const shown = (box && box !== document.body) ? box.getBoundingClientRect() : r;
    const name = el.tagName + (typeof el.className === 'string' && el.className ? '.' + el.className : '');
    if (shown.right > vw + 1 || shown.left < -1) bad.push(name + ' ' + Math.round(shown.right));
    if (clipped && el.matches(clipped) && el.scrollWidth > el.clientWidth + 1) bad.push(name + ' clipped ' + el.scrollWidth);
  }}
  return {{bad, pageWidth: document.documentElement.scrollWidth, vw{fields}}};
}})()"""


def svg_labels(selector: str) -> str:
    """The labels of the SVG pictures ``selector`` matches (``<img>`` elements), as the page shows them: for each
    picture its box and, per ``<text>`` element, the text, its font size in CSS pixels at the picture's shown size
    (the SVG's own size times the scale the picture is drawn at) and its box. An ``<img>`` keeps its SVG's inside
    from the page, so each is fetched and laid out again, hidden, over the picture at the same size."""
    return f"""(async () => {{
  const out = [];
  for (const img of document.querySelectorAll({json.dumps(selector)})) {{
    const r = img.getBoundingClientRect();
    const svg = new DOMParser().parseFromString(await (await fetch(img.src)).text(), 'image/svg+xml').documentElement;
    const holder = document.createElement('div');
    holder.style.cssText = `position: absolute; left: ${{r.left + scrollX}}px; top: ${{r.top + scrollY}}px; ` +
                           `width: ${{r.width}}px; height: ${{r.height}}px; visibility: hidden; margin: 0; padding: 0`;
    svg.setAttribute('width', r.width);
    svg.setAttribute('height', r.height);
    holder.appendChild(document.importNode(svg, true));
    document.body.appendChild(holder);
    const labels = [...holder.querySelectorAll('text')].map(t => {{
      const m = t.getScreenCTM(), b = t.getBoundingClientRect();
      return {{text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
               left: b.left, right: b.right, top: b.top, bottom: b.bottom}};
    }});
    holder.remove();
    let box = img.parentElement;  // the box it would pan sideways in: the picture must show whole in it
    while (box && box !== document.body && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX))
      box = box.parentElement;
    const shown = (box && box !== document.body) ? box.getBoundingClientRect() : null;  // its visible part
    const pans = !!shown && (r.left < shown.left - 1 || r.right > shown.left + box.clientWidth + 1);
    out.push({{src: img.getAttribute('src'), left: r.left, right: r.right, top: r.top, bottom: r.bottom,
              natural: img.naturalWidth, pans, labels}});
  }}
  return out;
}})()"""
