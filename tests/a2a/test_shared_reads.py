"""A task handed out by ``TaskStore.load_shared`` is shared with later reads of the same version, so nothing
that answers a read may change it: GetTask on both bindings and in v0.3, with and without historyLength,
and SubscribeToTask's opening task and its resume."""

from __future__ import annotations

import copy
from typing import Any

from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1


def test_answering_reads_never_changes_the_shared_task() -> None:
    app = make_app(config={"keepalive_seconds": 0.05, "subscribe_max_seconds": 0.2})
    store = app.extensions["quineling"].extras["task_store"]
    handed: list[tuple[Any, Any]] = []
    load_shared = store.load_shared

    def watched(scope: str, task_id: str) -> Any:
        got = load_shared(scope, task_id)
        if got.value is not None:
            handed.append((got.value, copy.deepcopy(got.value)))
        return got

    store.load_shared = watched
    client = app.test_client()

    def rpc(method: str, params: Any, headers: dict[str, str] | None = V1) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return client.post("/a2a/jsonrpc", json=body, headers=headers or {})

    sent = rpc("SendMessage", {"message": user_message(text(""))}).get_json()["result"]["task"]
    task_id = sent["id"]  # waits for input: subscribable, with history
    reply = rpc("SendMessage", {"message": user_message(text(""), taskId=task_id)}).get_json()
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"

    answers = [
        rpc("GetTask", {"id": task_id}).get_json()["result"],
        rpc("GetTask", {"id": task_id, "historyLength": 0}).get_json()["result"],
        rpc("GetTask", {"id": task_id, "historyLength": 1}).get_json()["result"],
        client.get(f"/a2a/rest/tasks/{task_id}?historyLength=1", headers=V1).get_json(),
        rpc("tasks/get", {"id": task_id, "historyLength": 1}, headers=None).get_json()["result"],
    ]
    assert [len(a.get("history", [])) for a in answers] == [len(sent["history"]) + 2, 0, 1, 1, 1]
    assert answers[4]["kind"] == "task"  # the v0.3 shape, made from the same shared value
    opening = list(rpc("SubscribeToTask", {"id": task_id}).response)
    assert b'"task"' in opening[0]
    event_id = opening[0].split(b"id: ", 1)[1].split(b"\n", 1)[0].decode()
    resumed = rpc("SubscribeToTask", {"id": task_id}, headers={**V1, "Last-Event-ID": event_id})
    assert resumed.status_code == 200
    list(resumed.response)

    assert len(handed) >= 7
    assert all(value is handed[0][0] for value, _ in handed)  # one version: one decoded value, shared
    for value, snapshot in handed:
        assert value == snapshot
