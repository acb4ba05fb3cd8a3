"""The lean JSON-RPC path (quineling/a2a/http/lean_jsonrpc.py) answers exactly what the Flask endpoint answers.

Every request here goes to two apps, one with the lean path and one without (``lean_jsonrpc`` off), and the
answers are compared whole — status, headers, body — with only what is fresh per app (task ids, timestamps,
request ids) normalized. A counting wrapper around the Flask app behind the lean path shows which requests the
lean path served itself and which it handed on; both kinds are covered, so a difference on either side fails.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from quineling.a2a.card import IDEMPOTENCY_EXTENSION
from quineling.a2a.http.lean_jsonrpc import LeanJsonRpc
from quineling.app import create_app
from quineling.observe import metrics
from tests.support.principals import keys_file

RPC = "/a2a/jsonrpc"
SQUARES = "[2,3,4] | square | sum | report total"
_FRESH = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"rec_[0-9a-f]+"), "<record>"),
    (re.compile(r'"nextPageToken":"[^"]+"'), '"nextPageToken":"<cursor>"'),  # names the store instance
    (re.compile(r"(?m)^id: \S+$"), "id: <event id>"),  # an SSE event id: opaque, bound to the task
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])"), "<message id>"),  # a hash's 64 digits stay
]


def rpc(method: str, params: Any, rpc_id: Any = 1, **extra: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params, **extra}).encode()


def message(data: Any, **fields: Any) -> dict[str, Any]:
    part = {"mediaType": "application/json", "data": data}
    return {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [part], **fields}}


class Served:
    """An app and how many requests its Flask app (behind the lean path, if any) was handed."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.client = app.test_client()
        self.flask_calls = 0
        if isinstance(app.wsgi_app, LeanJsonRpc):
            inner = app.wsgi_app.app

            def counting(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
                self.flask_calls += 1
                return inner(environ, start_response)

            app.wsgi_app.app = counting

    def post(self, body: bytes, headers: dict[str, str], path: str = RPC) -> tuple[int, list[Any], str]:
        response = self.client.post(path, data=body, headers=headers)
        kept = sorted((k, v) for k, v in response.headers.items() if k not in ("X-Request-ID",))
        text = response.get_data(as_text=True)
        for pattern, stand_in in _FRESH:
            text = pattern.sub(stand_in, text)
        return response.status_code, kept, text


def pair(**config: Any) -> tuple[Served, Served]:
    base = {"tenants": "acme", **config}
    return Served(create_app(config=base)), Served(create_app(config={**base, "lean_jsonrpc": False}))


JSON = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def requests(task_id: str) -> list[tuple[str, bytes, dict[str, str], bool]]:
    """(what, body, headers, served by the lean path) for a task of this app."""
    run = {"operation": "run", "artifactId": "sha256:" + "0" * 64, "inputs": {"xs": [1]}}
    return [
        ("GetTask", rpc("GetTask", {"id": task_id}), JSON, True),
        ("GetTask with history", rpc("GetTask", {"id": task_id, "historyLength": 1}, "s"), JSON, True),
        ("GetTask unknown", rpc("GetTask", {"id": "nope"}), JSON, True),
        ("GetTask bad params", rpc("GetTask", {"id": 5}), JSON, True),
        ("create again", rpc("SendMessage", message({"operation": "create", "thought": SQUARES})), JSON, True),
        ("run a missing artifact", rpc("SendMessage", message(run)), JSON, True),
        ("follow-up of a finished task", rpc("SendMessage", message({"operation": "parse", "thought": SQUARES},
                                                                    taskId=task_id)), JSON, True),  # fmt: skip
        ("ListTasks", rpc("ListTasks", {"pageSize": 2}), JSON, True),
        ("ListTasks bad", rpc("ListTasks", {"pageSize": -1}), JSON, True),
        ("CancelTask", rpc("CancelTask", {"id": task_id}), JSON, True),
        ("a tenant served", rpc("GetTask", {"id": task_id, "tenant": "acme"}), JSON, True),
        ("push config", rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "x"}), JSON, True),
        ("extended card", rpc("GetExtendedAgentCard", None), JSON, True),
        ("null id", rpc("GetTask", {"id": task_id}, None), JSON, True),
        ("extensions asked", rpc("GetTask", {"id": task_id}), {**JSON, "A2A-Extensions": IDEMPOTENCY_EXTENSION},
         True),
        # Handed on to Flask:
        ("a tenant not served", rpc("GetTask", {"id": task_id, "tenant": "other"}), JSON, False),
        ("v0.3 method", rpc("tasks/get", {"id": task_id}), {"Content-Type": "application/json"}, False),
        ("no version", rpc("GetTask", {"id": task_id}), {"Content-Type": "application/json"}, False),
        ("an unknown method", rpc("Frobnicate", {}), JSON, False),
        ("a stream", rpc("SendStreamingMessage", message({"operation": "parse", "thought": SQUARES})), JSON, False),
        ("boolean id", rpc("GetTask", {"id": task_id}, True), JSON, False),
        ("a notification", json.dumps({"jsonrpc": "2.0", "method": "GetTask", "params": {"id": task_id}}).encode(),
         JSON, False),
        ("not 2.0", json.dumps({"jsonrpc": "1.0", "id": 1, "method": "GetTask"}).encode(), JSON, False),
        # Judged by the one core (quineling/a2a/rpc.py) before any table lookup: once a TypeError (unhashable).
        ("method a list", json.dumps({"jsonrpc": "2.0", "id": 1, "method": ["GetTask"]}).encode(), JSON, False),
        ("method an object", json.dumps({"jsonrpc": "2.0", "id": 1, "method": {"a": 1}}).encode(), JSON, False),
        ("a member named twice", b'{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"GetTask","params":{}}',
         JSON, False),
        ("extra member", rpc("GetTask", {"id": task_id}, extra=1), JSON, False),
        ("params not an object", rpc("GetTask", [task_id]), JSON, False),
        ("not JSON", b"{nope", JSON, False),
        ("a batch", b"[]", JSON, False),
        ("NaN", b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":NaN}}', JSON, False),
        ("text/plain", rpc("GetTask", {"id": task_id}), {**JSON, "Content-Type": "text/plain"}, False),
        ("a browser's Origin", rpc("GetTask", {"id": task_id}), {**JSON, "Origin": "https://evil.example"}, False),
        ("a foreign Host", rpc("GetTask", {"id": task_id}), {**JSON, "Host": "evil.example"}, False),
    ]  # fmt: skip


def test_every_answer_is_the_flask_endpoints() -> None:
    lean, plain = pair()
    tasks = []
    for served in (lean, plain):
        created = served.client.post(RPC, data=rpc("SendMessage", message({"operation": "create",
                                                                           "thought": SQUARES})), headers=JSON)  # fmt: skip
        tasks.append(created.get_json()["result"]["task"]["id"])
    lean.flask_calls = 0
    for (what, body, headers, served_lean), (_, other_body, _, _) in zip(
        requests(tasks[0]), requests(tasks[1]), strict=True
    ):
        before = lean.flask_calls
        assert lean.post(body, headers) == plain.post(other_body, headers), what
        assert (lean.flask_calls == before) is served_lean, what


def test_a_query_string_or_a_trailing_slash_goes_to_flask() -> None:
    lean, plain = pair()
    body = rpc("GetTask", {"id": "nope"})
    for path in (RPC + "?A2A-Version=1.0", RPC + "/"):
        assert lean.post(body, JSON, path) == plain.post(body, JSON, path), path
    assert lean.flask_calls == 2


def test_credentials_are_checked_as_flask_checks_them(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, "alice", "bob")
    lean, plain = pair(auth_keys_file=str(path))
    alice, bob = ({**JSON, "Authorization": f"Bearer {tokens[n]}"} for n in ("alice", "bob"))
    made = [
        s.client.post(RPC, data=rpc("SendMessage", message({"operation": "create", "thought": SQUARES})),
                      headers=alice).get_json()["result"]["task"]["id"]
        for s in (lean, plain)
    ]  # fmt: skip
    lean.flask_calls = 0
    cases = [
        ("owner", alice, True),
        ("another principal: not found", bob, True),
        ("no token", JSON, False),
        ("a wrong token", {**JSON, "Authorization": "Bearer qk_wrong"}, False),
    ]
    for what, headers, served_lean in cases:
        before = lean.flask_calls
        answer = lean.post(rpc("GetTask", {"id": made[0]}), headers)
        assert answer == plain.post(rpc("GetTask", {"id": made[1]}), headers), what
        assert (lean.flask_calls == before) is served_lean, what
    assert "TASK_NOT_FOUND" in lean.post(rpc("GetTask", {"id": made[0]}), bob)[2]


def test_a_rate_limited_call_is_counted_once_and_refused_by_flask() -> None:
    lean, plain = pair(rate_limit="3/minute")
    body = rpc("GetTask", {"id": "nope"})
    answers = [(lean.post(body, JSON), plain.post(body, JSON)) for _ in range(5)]
    for mine, theirs in answers:
        assert mine == theirs
    remaining = [dict(mine[1]).get("RateLimit-Remaining") for mine, _ in answers]
    assert remaining == ["2", "1", "0", "0", "0"]  # counted once each: a second count would skip a number
    assert [mine[0] for mine, _ in answers] == [200, 200, 200, 429, 429]
    assert lean.flask_calls == 2  # the refusals, which the lean path counted and handed on


def test_a_lean_call_is_counted_timed_and_logged_like_any_other(caplog: pytest.LogCaptureFixture) -> None:
    lean, _ = pair()
    labels = {"binding": "jsonrpc", "method": "GetTask", "outcome": "TASK_NOT_FOUND"}
    before = metrics.REGISTRY.get_sample_value("quineling_requests_total", labels) or 0.0
    with caplog.at_level(logging.INFO, logger="quineling.request"):
        response = lean.client.post(
            RPC, data=rpc("GetTask", {"id": "nope"}), headers={**JSON, "X-Request-ID": "r-1"}
        )
    assert lean.flask_calls == 0
    assert response.headers["X-Request-ID"] == "r-1"
    assert metrics.REGISTRY.get_sample_value("quineling_requests_total", labels) == before + 1
    [line] = [r for r in caplog.records if r.getMessage() == "request"]
    assert (line.request_id, line.binding, line.method, line.outcome, line.status, line.task_id) == (  # type: ignore[attr-defined]
        "r-1", "jsonrpc", "GetTask", "TASK_NOT_FOUND", 200, "nope",
    )  # fmt: skip
