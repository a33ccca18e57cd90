"""A headless Chromium driven through the DevTools protocol over a pipe
(``--remote-debugging-pipe``: JSON messages ended by a NUL byte, read by the browser on file
descriptor 3 and written on 4), so a test needs no port and no websocket package.

Also a script, to redraw the README's screenshot of a report (see docs/report.md):
``python tests/browser.py REPORT.html OUT.png``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--no-default-browser-check",
         "--remote-debugging-pipe"]


def chromium_path() -> str | None:
    """Debian's ``chromium`` (or the ``CHROMIUM`` variable), None when absent."""
    named = os.environ.get("CHROMIUM")
    if named:
        return shutil.which(named)
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    pass


class Browser:
    """One browser with one page; commands run synchronously, events are kept in order."""

    def __init__(self, executable: str, timeout: float = 60.0, width: int = 1100,
                 height: int = 800):
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="cpsat-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        def arrange() -> None:  # in the child: the pipe ends on descriptors 3 and 4
            read_end = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile.name}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=arrange, pass_fds=(3, 4))
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        try:
            target = self.call("Target.createTarget", url="about:blank", session=False)
            attached = self.call("Target.attachToTarget", targetId=target["targetId"],
                                 flatten=True, session=False)
            self.session = attached["sessionId"]
            self.call("Page.enable")
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise

    def call(self, method: str, session: bool = True, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise BrowserError("no answer from the browser in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError("the browser closed the pipe")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(text)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read())

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (JSON-able)."""
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the element (scrolled into view first)."""
        box = self.evaluate(
            f"(() => {{const e = document.querySelector({json.dumps(selector)});"
            "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            "return [r.x + r.width / 2, r.y + r.height / 2];})()")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def screenshot(self, path: str | Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                try:
                    self.call("Browser.close", session=False)
                except (BrowserError, OSError):
                    pass
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
            self.profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str]) -> int:
    report, out = argv
    executable = chromium_path()
    if executable is None:
        print("chromium not found", file=sys.stderr)
        return 1
    with Browser(executable, width=1000, height=1040) as browser:
        browser.open(Path(report).resolve().as_uri())
        browser.screenshot(out)
    try:  # a palette of 64 colours keeps the README's image small
        from PIL import Image
    except ImportError:
        return 0
    with Image.open(out) as image:
        small = image.convert("RGB").quantize(64)
    small.save(out, optimize=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
