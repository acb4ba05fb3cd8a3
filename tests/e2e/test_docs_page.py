"""The interactive API page renders the HTTP+JSON operations in a real headless browser, offline.

Debian's chromium loads ``/a2a/rest/docs`` from a live server on a loopback port (werkzeug's, in a thread:
it starts at once, and the page needs no workers) with every host name but the loopback address unresolvable, so the page can only render if its script, style and document come from this server.
Without chromium the test is skipped, unless ``QUINELING_REQUIRE_BROWSER`` is set (CI), then it fails.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from quineling.app import create_app
from tests.support.browser import FLAGS, browser

pytestmark = pytest.mark.slow


@contextmanager
def live_app() -> Iterator[str]:
    """The app (serving any tenant) on a free loopback port; yields its base URL."""
    server = make_server("127.0.0.1", 0, create_app(config={"tenants": "*"}), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()


def render(url: str, profile: Path) -> tuple[str, set[str]]:
    """The DOM after the page's scripts ran, and every URL the browser requested."""
    net_log = profile / "net.json"
    completed = subprocess.run(
        [
            browser(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--log-net-log={net_log}",
            # Virtual time runs the page's scripts to idle without waiting in real time.
            "--virtual-time-budget=10000",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout, _urls(json.loads(net_log.read_text()))


def _urls(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["url"]} if isinstance(value.get("url"), str) else set()
        return found.union(*(_urls(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_urls(item) for item in value))
    return set()


def test_docs_page_renders_the_operations_offline() -> None:
    browser()  # skip (or fail) before starting a server
    with live_app() as base_url, tempfile.TemporaryDirectory(prefix="quineling-chromium-") as profile:
        # Deep link: Swagger UI opens GetTask, so its parameters and error answers are rendered too.
        dom, urls = render(base_url + "/a2a/rest/docs#/Tasks/GetTask", Path(profile))

    for path in ("/a2a/rest/message:send", "/a2a/rest/tasks/{task_id}", "/a2a/rest/{tenant}/message:send"):
        assert f'data-path="{path}"' in dom, path
    for operation_id in ("SendMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask"):
        assert f'opblock-summary-operation-id">{operation_id}<' in dom, operation_id
    # The opened operation shows the A2A-Version header and the documented error answers.
    assert "A2A-Version" in dom and "TASK_NOT_FOUND" in dom and "VERSION_NOT_SUPPORTED" in dom
    assert "Failed to load API definition" not in dom and "errors-wrapper" not in dom

    served = {url.removeprefix(base_url) for url in urls if url.startswith(base_url)}
    assert {
        "/a2a/rest/openapi.json",
        "/a2a/rest/docs/assets/swagger-ui.css",
        "/a2a/rest/docs/assets/swagger-ui-bundle.js",
        "/a2a/rest/docs/assets/swagger-ui-standalone-preset.js",
    } <= served
