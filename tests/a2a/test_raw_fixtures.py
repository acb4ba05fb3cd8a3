"""Raw HTTP fixtures: native 1.0 responses never carry v0.3 fields (``kind``, ``final``) or snake_case keys."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.a2a.conftest import text, user_message
from tests.support.bindings import V1
from tests.support.sse import parse_sse

# Free-form payloads (runtime results, metadata) are the application's, not the protocol's.
OPAQUE = {"data", "metadata"}


def keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            if key not in OPAQUE:
                yield from keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys(item)


def assert_native(value: Any) -> None:
    found = set(keys(value))
    assert not found & {"kind", "final"}, found
    assert not [k for k in found if "_" in k and not k.startswith("@")], found


def rpc(client: Any, method: str, params: dict[str, Any]) -> Any:
    raw = client.post(
        "/a2a/jsonrpc",
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        content_type="application/json",
        headers=V1,
    )
    return raw


def test_jsonrpc_responses_are_native(client: Any) -> None:
    first = rpc(client, "SendMessage", {"message": user_message(text(""))}).get_json()
    assert_native(first)
    task_id = first["result"]["task"]["id"]
    follow = {"message": user_message({"data": {"operation": "inspect", "artifactId": "x"}}, taskId=task_id)}
    for response in (
        rpc(client, "SendMessage", follow),
        rpc(client, "GetTask", {"id": task_id}),
        rpc(client, "ListTasks", {"includeArtifacts": True}),
        rpc(client, "GetTask", {"id": "missing"}),
    ):
        assert_native(response.get_json())
    stream = rpc(client, "SendStreamingMessage", {"message": user_message(text("x"))})
    for _kind, event in parse_sse([stream.data]):
        assert_native(event)


def test_rest_responses_are_native(client: Any) -> None:
    created = client.post("/a2a/rest/message:send", json={"message": user_message(text(""))}, headers=V1)
    assert_native(created.get_json())
    task_id = created.get_json()["task"]["id"]
    assert_native(client.get(f"/a2a/rest/tasks/{task_id}", headers=V1).get_json())
    assert_native(client.get("/a2a/rest/tasks?includeArtifacts=true", headers=V1).get_json())
    assert_native(client.post(f"/a2a/rest/tasks/{task_id}:cancel", headers=V1).get_json())
    stream = client.post("/a2a/rest/message:stream", json={"message": user_message(text("x"))}, headers=V1)
    events = [event for _kind, event in parse_sse([stream.data])]
    assert len(events) == 4
    for event in events:
        assert_native(event)


def test_sse_framing(client: Any) -> None:
    """Each event is an ``id:`` line (the first also a ``retry:`` hint before it) and one compact ``data:``
    line, followed by a blank line."""
    stream = client.post("/a2a/rest/message:stream", json={"message": user_message(text("x"))}, headers=V1)
    assert stream.headers["Cache-Control"] == "no-cache" and stream.headers["X-Accel-Buffering"] == "no"
    blocks = stream.data.decode().split("\n\n")
    assert blocks[-1] == ""
    assert blocks[0].startswith("retry: 2000\n")
    for index, block in enumerate(blocks[:-1]):
        lines = block.split("\n")[1:] if index == 0 else block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("id: g"), block
        assert lines[1].startswith("data: {") and ", " not in lines[1][:40]
