"""A task handed out by ``TaskStore.load_shared`` is shared with later reads of the same version, so nothing
that answers a read may change it: GetTask on both bindings and in v0.3, with and without historyLength,
and SubscribeToTask's opening task and its resume."""

from __future__ import annotations

import copy
from typing import Any

from tests.a2a.conftest import data, make_app, text, user_message
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


def test_answering_sends_never_changes_a_shared_answer_or_artifact() -> None:
    """A retained create is answered from the runtime's memo and a run reads its artifact shared
    (``StateStore.read_shared``): one decoded value each, which the task built around it, its events, every
    binding's answer and the v0.3 translation only read."""
    from quineling.app import create_app

    app = create_app(config={"store_url": "memory://", "tenants": "*"})
    runtime = app.extensions["quineling"].extras["runtime"]
    memo, store = runtime.memo, runtime.store
    handed: list[tuple[Any, Any]] = []
    memo_get, read_shared = memo.get, store.read_shared

    def watched_get(key: str) -> Any:
        replay = memo_get(key)
        if replay is not None:
            handed.append((replay.outcome, copy.deepcopy(replay.outcome)))
        return replay

    def watched_read(scope: str, keys: Any) -> Any:
        read = read_shared(scope, keys)
        handed.extend((got.value, copy.deepcopy(got.value)) for got in read.values() if got.value is not None)
        return read

    memo.get, store.read_shared = watched_get, watched_read
    client = app.test_client()

    def rpc(method: str, params: Any, headers: dict[str, str] | None = V1) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return client.post("/a2a/jsonrpc", json=body, headers=headers or {})

    create = {"operation": "create", "thought": "[2,3,4] | square | sum | report total"}
    first = rpc("SendMessage", {"message": user_message(data(create))}).get_json()["result"]["task"]
    artifact_id = first["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
    run = {"operation": "run", "artifactId": artifact_id}
    answers = []
    for payload in (create, create, run, run):
        message = user_message(data(payload))
        answers.append(rpc("SendMessage", {"message": message}).get_json()["result"]["task"])
        rest = client.post("/a2a/rest/message:send", json={"message": message}, headers=V1)
        answers.append(rest.get_json()["task"])
        v03 = {**message, "kind": "message", "role": "user", "parts": [{"kind": "data", "data": payload}]}
        answers.append(rpc("message/send", {"message": v03}, headers=None).get_json()["result"])
        assert b'"artifactUpdate"' in b"".join(rpc("SendStreamingMessage", {"message": message}).response)
        assert b'"artifact-update"' in b"".join(
            rpc("message/stream", {"message": v03}, headers=None).response
        )
    assert all(answer["status"]["state"] in ("TASK_STATE_COMPLETED", "completed") for answer in answers)

    assert len(handed) >= 12
    for value, snapshot in handed:
        assert value == snapshot
    outcomes = [answer["artifacts"][0]["parts"][0]["data"] for answer in answers[:2]]
    assert outcomes[0] == outcomes[1] == first["artifacts"][0]["parts"][0]["data"]
