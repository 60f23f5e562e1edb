"""Headless Chromium (Debian's `chromium` package) driven over the DevTools protocol.

No Selenium and no Playwright browser download: Chromium is started with a remote-debugging
port in its own process group (stopped by its pid), and its page is driven through the
DevTools websocket with the `websockets` package Prefect already depends on. Clicks and
typing are real input events (`Input.dispatchMouseEvent`, `Input.insertText`), so React
forms see what a person's browser would send.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.fakes.processes import free_port


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one page."""

    def __init__(self, profile: Path, *, width: int = 1400, height: int = 1800) -> None:
        from websockets.sync.client import connect

        binary = chromium_path()
        assert binary, "chromium is not installed (apt-get install chromium)"
        self.port = free_port()
        self.log = profile / "chromium.log"
        profile.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",  # tests run as root in CI containers
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                f"--remote-debugging-port={self.port}",
                f"--user-data-dir={profile / 'profile'}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.log, "wb"),  # noqa: SIM115 - closed with the process
            start_new_session=True,
        )
        try:
            page = self._first_page(timeout=90)
            self._socket = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=60)
        except BaseException:
            self.close()
            raise
        self._ids = itertools.count(1)
        self.console: list[str] = []
        self.call("Page.enable")
        self.call("Runtime.enable")

    def _first_page(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"chromium exited ({self.process.returncode}): {self.log.read_text()[-2000:]}"
                )
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=2) as answer:
                    pages = [target for target in json.load(answer) if target["type"] == "page"]
                if pages:
                    return pages[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"chromium's DevTools port did not answer in {timeout}s")
            time.sleep(0.3)

    # protocol ----------------------------------------------------------------------------
    def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        self._socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=120))
            if message.get("id") == message_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if message.get("method") == "Runtime.consoleAPICalled":
                args = message["params"].get("args", [])
                self.console.append(" ".join(str(arg.get("value", arg.get("description"))) for arg in args))

    def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's value in the page (promises awaited)."""
        answer = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise RuntimeError(details.get("exception", {}).get("description") or json.dumps(details))
        return answer["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 180, what: str | None = None) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(RuntimeError):
                value = self.evaluate(expression)
                if value:
                    return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what or expression} not true within {timeout}s")
            time.sleep(0.25)

    # a person's actions -----------------------------------------------------------------
    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'", what=f"{url} loaded")

    def click_at(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def click(self, locate: str) -> None:
        """Click the centre of the element the JavaScript expression `locate` finds."""
        box = self.wait_for(
            f"""(() => {{ const el = {locate}; if (!el) return null; el.scrollIntoView({{block: 'center'}});
                const r = el.getBoundingClientRect(); return r.width ? [r.x + r.width / 2, r.y + r.height / 2] : null; }})()""",
            what=f"element {locate}",
        )
        self.click_at(*box)

    def click_until(self, locate: str, expect: str, *, timeout: float = 180, what: str | None = None) -> Any:
        """Click `locate` until the JavaScript expression `expect` is true, then its value. A page
        still laying itself out (a loaded machine renders late) can move the element between
        finding its centre and the click, and the click lands beside it: click again."""
        deadline = time.monotonic() + timeout
        while True:
            self.click(locate)
            with contextlib.suppress(TimeoutError):
                return self.wait_for(
                    expect, timeout=min(10.0, max(0.0, deadline - time.monotonic())), what=what
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what or expect} not true within {timeout}s of clicking {locate}")

    def type_into(self, locate: str, text: str) -> None:
        """Replace the text of the input or textarea `locate` finds, as typing would."""
        self.click(locate)
        self.evaluate(f"(() => {{ const el = {locate}; el.focus(); el.select && el.select(); }})()")
        self.call("Input.insertText", text=text)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._socket.close()
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(15)


@contextlib.contextmanager
def browser(profile: Path) -> Iterator[Browser]:
    chrome = Browser(profile)
    try:
        yield chrome
    finally:
        chrome.close()
