"""Debian's chromium, headless, for the browser tests: one-shot renders (``--dump-dom``) and a page driven over
the DevTools protocol (CDP) through ``--remote-debugging-pipe`` — fd 3 into the browser, fd 4 out of it, each
message a JSON object ended by a NUL byte — so no WebSocket client and no driver binary are needed.

Every host name but the loopback address is unresolvable to the browser (``--host-resolver-rules``), so a page
that needed anything from elsewhere could not load it; the tests also list every request the page made.
Without chromium a test is skipped, unless ``QUINELING_REQUIRE_BROWSER`` is set (CI), then it fails.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.tools import REQUIRE_BROWSER, require_tool

BROWSERS = ("chromium", "chromium-browser")
FLAGS = (
    "--headless",
    "--no-sandbox",  # tests run as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    # Nothing but the server under test can be reached: a CDN-loaded page would not render.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)
# Where screenshots go; CI keeps the directory when a run fails (.ci/run).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def browser() -> str:
    """Chromium's path; skips (or fails under ``QUINELING_REQUIRE_BROWSER``) without it."""
    return require_tool(BROWSERS[0], "apt-get install chromium", REQUIRE_BROWSER, aliases=BROWSERS[1:])


class CdpError(Exception):
    pass


class Browser:
    """One headless chromium and its CDP pipe. Replies are matched to calls by id; events are kept in order."""

    def __init__(self, profile: Path, *, window: tuple[int, int] = (1280, 1800)) -> None:
        to_browser, browser_reads = os.pipe()[::-1]  # (write end, read end)
        browser_writes, from_browser = os.pipe()[::-1]
        command = [
            browser(),
            *FLAGS,
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}",
            "about:blank",
        ]
        # bash (dash takes single-digit descriptors only) puts the two pipe ends where chromium looks for them (fd 3 and 4), then becomes chromium.
        with (profile / "chromium.log").open("wb") as log:
            self.process = subprocess.Popen(
                ["/bin/bash", "-c", f'exec "$0" "$@" 3<&{browser_reads} 4>&{browser_writes}', *command],
                pass_fds=(browser_reads, browser_writes),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        os.close(browser_reads)
        os.close(browser_writes)
        self._out = os.fdopen(to_browser, "wb", buffering=0)
        self._in = os.fdopen(from_browser, "rb", buffering=0)
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        while chunk := self._in.read(65536):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._changed:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self.events.append(message)
                self._changed.notify_all()

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float = 30) -> dict[str, Any]:  # fmt: skip
        with self._changed:
            self._next_id += 1
            call_id = self._next_id
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        with self._changed:
            if not self._changed.wait_for(lambda: call_id in self._replies, timeout):
                raise CdpError(f"{method}: no reply in {timeout} s")
            reply = self._replies.pop(call_id)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def page(self, url: str) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        for domain in ("Page", "Runtime", "Network", "Log"):
            page.call(f"{domain}.enable")
        page.navigate(url)
        return page

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._out.close()
        self._reader.join(timeout=5)
        self._in.close()


class Page:
    """One tab, attached to its own CDP session."""

    def __init__(self, browser: Browser, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        return self.browser.call(method, params, session=self.session, timeout=timeout)

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str, timeout: float = 30) -> Any:
        """The value of ``expression`` (awaited when it is a promise), as JSON; a thrown error fails."""
        answer = self.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            timeout=timeout,
        )
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise CdpError(f"{expression[:80]}: {details.get('exception', {}).get('description') or details}")
        return answer["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10, interval: float = 0.02) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not true within {timeout} s: {expression}")
            time.sleep(interval)

    def events(self, method: str) -> list[dict[str, Any]]:
        with self.browser._changed:
            return [
                e["params"]
                for e in self.browser.events
                if e.get("sessionId") == self.session and e["method"] == method
            ]

    def requested(self) -> list[str]:
        """Every URL this tab asked for, in order."""
        return [e["request"]["url"] for e in self.events("Network.requestWillBeSent")]

    def problems(self) -> list[str]:
        """What the page reported as wrong: uncaught exceptions, and errors logged (CSP violations among them)
        other than the network's — an HTTP error answer is the API's to judge, not the page's."""
        found = [
            str(e["exceptionDetails"].get("exception", {}).get("description"))
            for e in self.events("Runtime.exceptionThrown")
        ]
        found += [
            e["entry"]["text"]
            for e in self.events("Log.entryAdded")
            if e["entry"]["level"] == "error" and e["entry"].get("source") != "network"
        ]
        return found

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))
        return path


def until(check: Callable[[], Any], timeout: float, interval: float = 0.02) -> Any:
    """Poll ``check()`` until it is truthy; its value, or AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s")
        time.sleep(interval)
