"""The operator console at ``/ui`` in Debian's chromium, headless, driven over the DevTools protocol
(tests/support/browser.py), against real gunicorn servers: the memory store (one worker) and Redis (two
workers), each with and without bearer keys.

It loads with every request on its own origin, under its CSP and without a script error; a task created by
the test appears, its text shown as text; a cancel sent by another client shows within a second on a followed
task; a server restarted mid-stream (stopped, then started on its port; Redis keeps the task) is followed on
without a duplicate row; the viewer's paths equal :mod:`quineling.runtime.frame_svg`'s for the same ``frame``
result; only an operator sees the operator view; axe-core finds no serious or critical accessibility
violation. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from quineling.auth.keyfile import add_key
from quineling.client.registry import AgentRegistry
from quineling.client.shared import SharedState
from quineling.runtime.frame_svg import ridge_paths
from tests.conftest import REDIS_URL, needs_redis
from tests.support.browser import Browser, Page, browser
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM, data, text, user_message
from tests.support.redis_keys import delete_under
from tests.support.tools import REQUIRE_BROWSER, unavailable

pytestmark = pytest.mark.slow
AXE = Path(__file__).with_name("axe") / "node_modules" / "axe-core" / "axe.min.js"
REDIS = [pytest.mark.redis, needs_redis]
CONFIGS = [
    pytest.param({"store": "memory", "workers": 1, "auth": False}, id="memory"),
    pytest.param({"store": "memory", "workers": 1, "auth": True}, id="memory-auth"),
    pytest.param({"store": "redis", "workers": 2, "auth": False}, id="redis", marks=REDIS),
    pytest.param({"store": "redis", "workers": 2, "auth": True}, id="redis-auth", marks=REDIS),
]  # fmt: skip


@dataclass
class Console:
    """One configuration's server (restartable in place: same port, same store prefix) and a tab on its /ui."""

    config: dict[str, Any]
    settings: dict[str, str | int]
    stack: ExitStack
    server: LiveServer
    page: Page
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def headers(self, who: str = "alice") -> dict[str, str]:
        found = {"A2A-Version": "1.0"}
        if self.tokens:
            found["Authorization"] = f"Bearer {self.tokens[who]}"
        return found

    def call(self, method: str, path: str, body: Any = None, who: str = "alice") -> Any:
        """The API as another client (not the page) uses it."""
        answer = requests.request(
            method, self.base_url + "/a2a/rest" + path, json=body, headers=self.headers(who), timeout=10
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    def send(self, part: dict[str, Any], task_id: str | None = None) -> dict[str, Any]:
        task: dict[str, Any] = self.call(
            "POST", "/message:send", {"message": user_message(part, task_id=task_id)}
        )["task"]
        return task

    def restart(self) -> None:
        """Stop the server (its open streams are cut) and start it again where the page knows it."""
        old = self.server
        self.stack.close()
        self.stack = ExitStack()
        self.server = self.stack.enter_context(
            serving(share_with=old, port=old.port, workers=self.config["workers"], **self.settings)
        )


@contextmanager
def serving(**kwargs: Any) -> Iterator[LiveServer]:
    """``live_server`` whose workers keep an idle connection 1 s instead of gunicorn's 5 (through gunicorn's own
    ``GUNICORN_CMD_ARGS``; the product is untouched): a stopping worker waits for the browser's idle pooled
    connections, which no page can close, and each stop here would otherwise cost 5 s."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GUNICORN_CMD_ARGS", "--keep-alive 1")
        starting = live_server(**kwargs)
        server = starting.__enter__()
    try:
        yield server
    finally:
        starting.__exit__(None, None, None)


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    browser()  # skip (or fail) before starting anything
    started = Browser(tmp_path_factory.mktemp("chromium"))
    yield started
    started.close()


@pytest.fixture(scope="module", params=CONFIGS)
def console(
    request: pytest.FixtureRequest, chromium: Browser, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Console]:
    config: dict[str, Any] = request.param
    settings: dict[str, str | int] = {"keepalive_seconds": 0.5, "operators": "anonymous"}
    tokens: dict[str, str] = {}
    if config["auth"]:
        keys = tmp_path_factory.mktemp("console-keys") / "keys"
        tokens = {name: add_key(keys, name) for name in ("alice", "bob")}
        settings.update(auth_keys_file=str(keys), operators="alice")
    store_url = REDIS_URL if config["store"] == "redis" else "memory://"
    stack = ExitStack()
    server = stack.enter_context(
        serving(store_url=store_url, workers=config["workers"], forget_keys=False, **settings)
    )
    page = chromium.page(server.url("/ui"))
    console = Console(config, settings, stack, server, page, tokens)
    try:
        if tokens:
            # Without a token the listing is refused; the token entered once is kept for the tab.
            page.wait_for("document.getElementById('tasks-caption').textContent.includes('401')")
            page.evaluate(f"document.getElementById('token').value = {json.dumps(tokens['alice'])}")
            page.evaluate("document.querySelector('#auth-form button[type=submit]').click()")
        page.wait_for("/task\\(s\\)/.test(document.getElementById('tasks-caption').textContent)")
        yield console
    finally:
        console.page.close()  # its connections closed first, so the server stops at once
        console.stack.close()
        if store_url != "memory://":
            delete_under(store_url, server.prefix)


@pytest.fixture
def shots(request: pytest.FixtureRequest, console: Console) -> Iterator[None]:
    """A screenshot of the page after the test, passed or failed, named after it (test-artifacts/)."""
    yield
    console.page.screenshot(re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name))


def texts(page: Page, selector: str) -> list[str]:
    found: list[str] = page.evaluate(
        f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)"
    )
    return found


def test_loads_from_its_own_origin_only_under_its_policy(console: Console) -> None:
    page = console.page
    requested = page.requested()
    assert requested, "the page made no request at all"
    assert [url for url in requested if not url.startswith(console.base_url + "/")] == []
    assert {
        console.base_url + p for p in ("/ui", "/ui/console.js", "/ui/viewer.js", "/ui/console.css")
    } <= set(requested)
    assert page.problems() == []
    answer = requests.get(console.base_url + "/ui", timeout=5)
    assert "default-src 'self'" in answer.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    assert answer.headers["X-Frame-Options"] == "DENY"
    # The token lives in this tab's sessionStorage only, never in localStorage or a cookie.
    assert page.evaluate("localStorage.length") == 0 and page.evaluate("document.cookie") == ""
    assert bool(page.evaluate("sessionStorage.getItem('quineling.console.token')")) == bool(console.tokens)


def test_a_task_created_by_the_test_appears(console: Console, shots: None) -> None:
    page = console.page
    # One through the page's own form, one by another client; then the list shows both.
    marker = f"[{uuid.uuid4().int % 1000}, 2] | sum | report total"
    page.evaluate(f"document.getElementById('thought').value = {json.dumps(marker)}")
    page.evaluate("document.querySelector('#send-thought button[type=submit]').click()")
    sent = page.wait_for(
        "document.getElementById('task-id').textContent.includes('-') && document.getElementById('task-id').textContent"
    )
    other = console.send(text(SQUARE_SUM))
    page.evaluate("document.querySelector('#filters button[type=submit]').click()")
    page.wait_for(f"!!document.querySelector('[data-task-id=\"{other['id']}\"]')")
    assert sent in texts(page, "#tasks tbody button")
    assert marker in " ".join(texts(page, "#history li"))
    # Markup in a task's text is shown as text, never parsed.
    hostile = '<img src="/x" data-hostile="1"> | sum'
    page.evaluate(f"document.getElementById('thought').value = {json.dumps(hostile)}")
    page.evaluate("document.querySelector('#send-thought button[type=submit]').click()")
    page.wait_for(f"document.getElementById('history').textContent.includes({json.dumps(hostile)})")
    assert page.evaluate("document.querySelectorAll('[data-hostile]').length") == 0


def test_a_cancel_by_another_client_shows_within_a_second(console: Console, shots: None) -> None:
    page = console.page
    waiting = console.send(text("[1,2] | sum"))
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    page.evaluate(f"QuinelingConsole.selectTask({json.dumps(waiting['id'])})")
    page.evaluate("document.getElementById('follow').click()")
    page.wait_for(
        "[...document.querySelectorAll('#events li')].some(e => e.textContent.includes('INPUT_REQUIRED'))"
    )
    started = time.monotonic()
    console.call("POST", f"/tasks/{waiting['id']}:cancel", {})
    page.wait_for("document.getElementById('task-state').textContent === 'TASK_STATE_CANCELED'", timeout=1.0)
    assert time.monotonic() - started < 1.0
    assert any("TASK_STATE_CANCELED" in row for row in texts(page, "#events li"))


def test_a_restarted_server_is_followed_on_without_duplicates(console: Console, shots: None) -> None:
    if console.config["store"] == "memory":
        pytest.skip("the memory store does not outlive its server")
    page = console.page
    waiting = console.send(text("[1,2] | sum"))
    page.evaluate(f"QuinelingConsole.selectTask({json.dumps(waiting['id'])})")
    page.evaluate("document.getElementById('follow').click()")
    opening = page.wait_for("document.querySelector('#events li[data-event-id]')?.dataset.eventId")
    console.restart()
    # While the page reconnects, another client continues the task and ends it: the page must replay what it
    # missed from its last event on, once.
    console.send(text(SQUARE_SUM), task_id=waiting["id"])
    if console.call("GET", f"/tasks/{waiting['id']}")["status"]["state"] == "TASK_STATE_INPUT_REQUIRED":
        console.call("POST", f"/tasks/{waiting['id']}:cancel", {})
    page.wait_for(
        "['TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED'].includes(document.getElementById('task-state').textContent)",
        timeout=15,
    )
    page.wait_for("document.getElementById('live-status').textContent.startsWith('Task is')", timeout=5)
    shown = page.evaluate(
        "[...document.querySelectorAll('#events li')].map(e => [e.dataset.eventId || null, e.textContent])"
    )
    ids = [event_id for event_id, _ in shown]
    assert len(ids) == len(set(ids)), shown
    # Every event after the opening one, as the server's log has them (read as a resuming client would).
    expected = _event_ids_after(console, waiting["id"], opening)
    assert ids == [opening, *expected], shown


def _event_ids_after(console: Console, task_id: str, last_event_id: str) -> list[str]:
    headers = {**console.headers(), "Last-Event-ID": last_event_id, "Accept": "text/event-stream"}
    answer = requests.get(
        f"{console.base_url}/a2a/rest/tasks/{task_id}:subscribe", headers=headers, timeout=10
    )
    assert answer.status_code == 200, answer.text
    return re.findall(r"^id: (\S+)$", answer.text, re.MULTILINE)


def test_the_viewer_draws_the_frame_result(console: Console, shots: None) -> None:
    page = console.page
    created = console.send(
        data({"operation": "create", "thought": SQUARE_SUM, "options": {"repeats": 2, "seed": 7}})
    )
    artifact = created["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
    for name, value in (
        ("viewer-artifact", artifact),
        ("viewer-phase", "0.25"),
        ("viewer-budget", "3000"),
        ("viewer-crests", "3"),
    ):
        page.evaluate(f"document.getElementById({json.dumps(name)}).value = {json.dumps(value)}")
    assert page.evaluate("QuinelingConsole.drawFrame()") is True
    # The budget was kept within frame's limits.
    assert page.evaluate("document.getElementById('viewer-budget').value") == "4000"
    frame = console.send(
        data(
            {
                "operation": "frame",
                "artifactId": artifact,
                "phase": 0.25,
                "options": {"budget": 4000, "crests": 3},
            }
        )
    )
    expected = ridge_paths(frame["artifacts"][0]["parts"][0]["data"]["result"])
    drawn = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#viewer-picture path')].map(p => [p.dataset.ridges, p.getAttribute('d')]))"
    )
    assert set(drawn) == set(expected) and len(expected) > 2  # several owners, and seams between them
    for key, path in expected.items():
        want, got = _numbers(path), _numbers(drawn[key])
        assert len(got) == len(want), key
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) <= 0.011, key
    # Stepping the phase draws the next frame; playing steps on by itself until paused.
    page.evaluate("document.getElementById('viewer-step').click()")
    page.wait_for("document.getElementById('viewer-status').textContent.endsWith('phase 0.375')")
    page.evaluate("document.getElementById('viewer-play').click()")
    page.wait_for("document.getElementById('viewer-status').textContent.endsWith('phase 0.625')", timeout=15)
    page.evaluate("document.getElementById('viewer-play').click()")
    assert page.evaluate("document.getElementById('viewer-play').textContent") == "Play"
    assert (
        page.evaluate("document.getElementById('viewer-legend').children.length")
        == len(frame["artifacts"][0]["parts"][0]["data"]["result"]["nodeIds"]) + 1
    )


def _numbers(path: str) -> list[float]:
    return [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path)]


def test_only_an_operator_sees_the_operator_view(console: Console, shots: None) -> None:
    page = console.page
    console.send(text(SQUARE_SUM))  # so the principal's scope holds something
    page.wait_for("!document.getElementById('operator-section').hidden")
    page.evaluate("document.getElementById('operator-section').dataset.loaded = ''")
    page.evaluate("document.getElementById('operator-refresh').click()")
    page.wait_for("!!document.getElementById('operator-section').dataset.loaded")
    assert page.evaluate("document.getElementById('operator-ready').textContent").startswith("ok")
    assert "tasks" in texts(page, "#operator-scopes td")
    if console.config["store"] == "redis":
        # An agent in the registry this store keeps (quineling agents): the view lists it with its health.
        registry = AgentRegistry(SharedState.from_url(REDIS_URL, prefix=console.server.prefix))
        registry.register(console.base_url)
        registry.check(console.base_url)
        page.evaluate("document.getElementById('operator-refresh').click()")
        page.wait_for("document.querySelector('#operator-agents tbody td')?.textContent === 'Quineling'")
        assert texts(page, "#operator-agents tbody td")[1:3] == [console.base_url, "healthy"]
    if not console.tokens:
        return
    bob = requests.get(console.base_url + "/ui/api/operator", headers=console.headers("bob"), timeout=5)
    assert bob.status_code == 403
    assert requests.get(console.base_url + "/ui/api/operator", timeout=5).status_code == 401


def test_no_serious_accessibility_violation(console: Console) -> None:
    if not AXE.exists():
        unavailable("axe-core is not installed (bash tests/e2e/axe/install.sh)", REQUIRE_BROWSER)
    page = console.page
    page.evaluate(AXE.read_text())  # through the DevTools protocol: nothing the page or its CSP loads
    violations = page.evaluate(
        "axe.run(document).then(r => r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length})))",
        timeout=60,
    )
    assert [v for v in violations if v["impact"] in ("serious", "critical")] == []
