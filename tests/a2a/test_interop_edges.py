"""Wire exchanges independent clients and validators check (issue 29): extensions echoed, card details, output
modes, the HTTP+JSON media type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quineling.a2a.card import IDEMPOTENCY_EXTENSION, LONG_POLL_EXTENSION
from tests.a2a.conftest import text, user_message
from tests.support.bindings import V1

RPC = "/a2a/jsonrpc"
UNKNOWN_EXTENSION = "https://example.com/ext/unknown/v1"
ASKED = f"{UNKNOWN_EXTENSION}, {IDEMPOTENCY_EXTENSION},{LONG_POLL_EXTENSION}"


def rpc_body(method: str, params: dict[str, Any], rpc_id: Any = 1) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})


def waiting_task(client: Any) -> str:
    body = rpc_body("SendMessage", {"message": user_message(text(""))})
    task_id: str = client.post(RPC, data=body, content_type="application/json", headers=V1).get_json()[
        "result"
    ]["task"]["id"]
    return task_id


# --- A2A-Extensions --------------------------------------------------------------------------------------


def test_activated_extensions_are_echoed_on_every_binding(client: Any) -> None:
    task_id = waiting_task(client)
    asked = {**V1, "A2A-Extensions": ASKED}
    echoed = f"{IDEMPOTENCY_EXTENSION}, {LONG_POLL_EXTENSION}"  # the declared ones, in the order asked
    answers = {
        # The lean path (a plain 1.0 call) and the Flask endpoint (a stream) alike.
        "jsonrpc": client.post(RPC, data=rpc_body("GetTask", {"id": task_id}), content_type="application/json",
                               headers=asked),
        "jsonrpc error": client.post(RPC, data=rpc_body("GetTask", {"id": "nope"}),
                                     content_type="application/json", headers=asked),
        "jsonrpc stream": client.post(RPC, data=rpc_body("SendStreamingMessage", {"message": user_message(text("x"))}),
                                      content_type="application/json", headers=asked),
        "rest": client.get(f"/a2a/rest/tasks/{task_id}", headers=asked),
        "rest send": client.post("/a2a/rest/message:send", json={"message": user_message(text("x"))}, headers=asked),
    }  # fmt: skip
    for what, response in answers.items():
        assert response.headers.get("A2A-Extensions") == echoed, what
    v03 = client.post(
        RPC,
        data=rpc_body("tasks/get", {"id": task_id}),
        content_type="application/json",
        headers={"X-A2A-Extensions": IDEMPOTENCY_EXTENSION},
    )
    assert v03.headers.get("X-A2A-Extensions") == IDEMPOTENCY_EXTENSION
    # Nothing asked, or nothing declared asked: no header.
    plain = client.get(f"/a2a/rest/tasks/{task_id}", headers=V1)
    unknown = client.get(f"/a2a/rest/tasks/{task_id}", headers={**V1, "A2A-Extensions": UNKNOWN_EXTENSION})
    assert "A2A-Extensions" not in plain.headers and "A2A-Extensions" not in unknown.headers
    card = client.get("/.well-known/agent-card.json", headers={"A2A-Extensions": IDEMPOTENCY_EXTENSION})
    assert "A2A-Extensions" not in card.headers  # only binding calls activate anything
