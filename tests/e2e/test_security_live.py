"""The security findings' repros against a live gunicorn server with default settings (memory store, one
worker, the product's tenant default): a DNS-rebinding Host, a cross-site form POST, a foreign Origin — each
refused with nothing changed — while the health probes answer any Host."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import requests

from tests.support.bindings import V1
from tests.support.live import LiveServer, live_server
from tests.support.messages import text, user_message

pytestmark = pytest.mark.slow
TIMEOUT = 10


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(tenants="") as live:
        yield live


def waiting_task(server: LiveServer) -> str:
    body = {"message": user_message(text("[1,2,3] | sum"))}
    task = requests.post(server.url("/a2a/rest/message:send"), json=body, headers=V1, timeout=TIMEOUT).json()
    assert task["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id: str = task["task"]["id"]
    return task_id


def state_of(server: LiveServer, task_id: str) -> str:
    answer = requests.get(server.url(f"/a2a/rest/tasks/{task_id}"), headers=V1, timeout=TIMEOUT)
    state: str = answer.json()["status"]["state"]
    return state


def test_a_rebinding_host_is_misdirected(server: LiveServer) -> None:
    waiting_task(server)
    own = requests.get(server.url("/a2a/rest/tasks"), headers=V1, timeout=TIMEOUT)
    assert own.status_code == 200 and own.json()["tasks"]
    foreign = requests.get(
        server.url("/a2a/rest/tasks"), headers={"Host": "attacker.example", **V1}, timeout=TIMEOUT
    )
    assert foreign.status_code == 421 and "tasks" not in foreign.json()
    port = server.base_url.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", "localhost", f"[::1]:{port}"):
        answer = requests.get(server.url("/a2a/rest/tasks"), headers={"Host": host, **V1}, timeout=TIMEOUT)
        assert answer.status_code == 200, host
    probe = requests.get(server.url("/healthz"), headers={"Host": "10.244.3.17:8049"}, timeout=TIMEOUT)
    assert probe.status_code == 200


def test_a_cross_site_form_post_changes_nothing(server: LiveServer) -> None:
    task_id = waiting_task(server)
    url = server.url(f"/a2a/rest/tasks/{task_id}:cancel?A2A-Version=1.0")
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert requests.post(url, data=b"", headers=form, timeout=TIMEOUT).status_code == 415
    browser = {**form, "Origin": "https://attacker.example"}
    assert requests.post(url, data=b"", headers=browser, timeout=TIMEOUT).status_code == 403
    v03 = {"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": task_id}}
    simple = requests.post(server.url("/a2a/jsonrpc"), data=json.dumps(v03), timeout=TIMEOUT)
    assert simple.status_code == 400 and simple.json()["error"]["code"] == -32005
    assert state_of(server, task_id) == "TASK_STATE_INPUT_REQUIRED"
    # The README's cancel (the A2A-Version header, nothing else) still works.
    done = requests.post(server.url(f"/a2a/rest/tasks/{task_id}:cancel"), headers=V1, timeout=TIMEOUT)
    assert done.status_code == 200 and state_of(server, task_id) == "TASK_STATE_CANCELED"
