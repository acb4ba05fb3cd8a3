"""The wire of resumable streams, long-poll, conditional sends and idempotency keys on every binding: JSON-RPC,
HTTP+JSON and v0.3 JSON-RPC (headers ``Last-Event-ID`` and ``Idempotency-Key``, SSE ``id:``/``retry:``)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.a2a.conftest import text, user_message

V1 = {"A2A-Version": "1.0"}
DONE, VAGUE = "[1,2] | sum", "   "


def frames(body: bytes) -> list[dict[str, Any]]:
    """Every SSE frame as its fields (``id``, ``retry``, ``data``; comments left out)."""
    out = []
    for block in body.decode().split("\n\n"):
        fields: dict[str, Any] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
        if "data" in fields:
            out.append(fields)
    return out


def rpc(client: Any, method: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return client.post("/a2a/jsonrpc", json=body, headers={**V1, **(headers or {})})


def v03(client: Any, method: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return client.post("/a2a/jsonrpc", json=body, headers=headers or {})


def v03_message(value: str, **extra: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": value}],
        **extra,
    }


def test_streams_carry_ids_and_a_retry_hint_and_resume_on_every_binding(client: Any) -> None:
    paused = rpc(client, "SendMessage", {"message": user_message(text(VAGUE))}).get_json()["result"]["task"]
    cut = frames(
        rpc(client, "SendStreamingMessage", {"message": user_message(text(DONE), taskId=paused["id"])}).data
    )
    assert cut[0]["retry"] == "2000" and all(f["id"].startswith("g") for f in cut) and len(cut) == 4
    after = cut[1]["id"]  # the client saw the opening snapshot and WORKING, then the connection broke
    header = {"Last-Event-ID": after}
    by_jsonrpc = frames(rpc(client, "SubscribeToTask", {"id": paused["id"]}, header).data)
    by_rest = frames(client.get(f"/a2a/rest/tasks/{paused['id']}:subscribe", headers={**V1, **header}).data)
    by_v03 = frames(v03(client, "tasks/resubscribe", {"id": paused["id"]}, header).data)
    for resumed in (by_jsonrpc, by_rest, by_v03):
        assert [f["id"] for f in resumed] == [f["id"] for f in cut[2:]]
    assert '"artifactUpdate"' in by_jsonrpc[0]["data"] and "TASK_STATE_COMPLETED" in by_rest[-1]["data"]
    assert '"artifact-update"' in by_v03[0]["data"] and '"final":true' in by_v03[-1]["data"]


def test_a_stale_or_foreign_id_is_refused_on_every_binding(client: Any) -> None:
    task = rpc(client, "SendMessage", {"message": user_message(text(VAGUE))}).get_json()["result"]["task"]
    header = {"Last-Event-ID": "gAAAAAAAAAABAAAAAAAAAAAAAA"}
    error = rpc(client, "SubscribeToTask", {"id": task["id"]}, header).get_json()["error"]
    assert error["code"] == -32602 and "GetTask" in error["message"]
    rest = client.get(f"/a2a/rest/tasks/{task['id']}:subscribe", headers={**V1, **header})
    assert rest.status_code == 400 and "GetTask" in rest.get_json()["error"]["message"]
    legacy = frames(v03(client, "tasks/resubscribe", {"id": task["id"]}, header).data)
    assert '"code":-32602' in legacy[0]["data"]


def test_v03_streaming_send_frames_carry_ids(client: Any) -> None:
    stream = frames(v03(client, "message/stream", {"message": v03_message(DONE)}).data)
    assert stream[0]["retry"] == "2000" and len({f["id"] for f in stream}) == len(stream) == 4


def test_long_poll_and_conditional_send_over_http(client: Any) -> None:
    task = rpc(client, "SendMessage", {"message": user_message(text(VAGUE))}).get_json()["result"]["task"]
    assert task["metadata"]["generation"] == 4
    newer = client.get(f"/a2a/rest/tasks/{task['id']}?currentGeneration=3", headers=V1)
    assert newer.status_code == 200 and newer.get_json()["metadata"]["generation"] == 4
    bad = client.get(f"/a2a/rest/tasks/{task['id']}?currentGeneration=-2", headers=V1)
    assert bad.status_code == 400
    got = rpc(client, "GetTask", {"id": task["id"], "currentGeneration": 1}).get_json()["result"]
    assert got["metadata"]["generation"] == 4
    message = user_message(text(DONE), taskId=task["id"])
    stale = {"message": message, "configuration": {"ifGenerationMatch": 1}}
    details = {"taskId": task["id"], "expectedGeneration": "1", "currentGeneration": "4"}
    for method in ("SendMessage", "SendStreamingMessage"):
        error = rpc(client, method, stale).get_json()["error"]
        assert error["code"] == -32010, method
        assert (
            error["data"][0]["reason"] == "TASK_GENERATION_MISMATCH"
            and error["data"][0]["metadata"] == details
        )
    for path in ("/a2a/rest/message:send", "/a2a/rest/message:stream"):
        rest = client.post(path, json=stale, headers=V1)
        assert rest.status_code == 409 and rest.get_json()["error"]["status"] == "ABORTED", path
        assert rest.get_json()["error"]["details"][0]["reason"] == "TASK_GENERATION_MISMATCH"
    # The non-standard top-level spelling is refused, not honoured.
    top = rpc(client, "SendMessage", {"message": message, "ifGenerationMatch": 4}).get_json()["error"]
    assert top["code"] == -32602 and "configuration.ifGenerationMatch" in top["message"]
    fresh = {"message": message, "configuration": {"ifGenerationMatch": 4}}
    assert client.post("/a2a/rest/message:send", json=fresh, headers=V1).get_json()["task"]["metadata"] == {
        "generation": 7
    }
    # Ignored for a message that creates a task.
    new = rpc(
        client,
        "SendMessage",
        {"message": user_message(text(DONE)), "configuration": {"ifGenerationMatch": 9}},
    )
    assert new.get_json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", ["jsonrpc", "rest", "v03"])
def test_idempotency_key_header_on_every_binding(client: Any, binding: str) -> None:
    key = {"Idempotency-Key": f"key-{binding}"}

    def send(value: str, headers: dict[str, str]) -> Any:
        if binding == "jsonrpc":
            return rpc(client, "SendMessage", {"message": user_message(text(value))}, headers)
        if binding == "rest":
            return client.post(
                "/a2a/rest/message:send",
                json={"message": user_message(text(value))},
                headers={**V1, **headers},
            )
        return v03(client, "message/send", {"message": v03_message(value)}, headers)

    def task_id(response: Any) -> str:
        body = response.get_json()
        result = body["result"] if binding != "rest" else body
        return str(result["id"] if binding == "v03" else result["task"]["id"])

    first, again = task_id(send(DONE, key)), task_id(send(DONE, key))
    assert first == again
    changed = send("[5] | sum", key)
    if binding == "rest":
        assert changed.status_code == 409
        assert changed.get_json()["error"]["details"][0]["reason"] == "IDEMPOTENCY_KEY_REUSED"
    else:
        assert changed.get_json()["error"]["code"] == -32020
    malformed = send(DONE, {"Idempotency-Key": "has space"})
    if binding == "rest":
        assert malformed.status_code == 400 and "Idempotency-Key" in malformed.get_json()["error"]["message"]
    else:
        assert malformed.get_json()["error"]["code"] == -32602


def test_a_streaming_retry_replays_over_http(client: Any) -> None:
    key = {"Idempotency-Key": "stream-1"}
    params = {"message": user_message(text(DONE))}
    first = frames(client.post("/a2a/rest/message:stream", json=params, headers={**V1, **key}).data)
    params = {"message": user_message(text(DONE))}  # a retry with a fresh messageId
    again = frames(client.post("/a2a/rest/message:stream", json=params, headers={**V1, **key}).data)
    assert [f["data"] for f in again] == [f["data"] for f in first]
    assert [f["id"] for f in again] == [f["id"] for f in first]
