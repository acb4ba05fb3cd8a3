"""A store outage answers every request with one clear, retryable error and changes nothing: HTTP 503 with
``Retry-After``, and in JSON-RPC -32603 whose ``data`` says ``retryable``."""

from __future__ import annotations

import logging

import fakeredis
import pytest

from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from stores.redis import RedisBackend
from tests.support.bindings import V1
from tests.support.sse import sse_events

SEND = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "SendMessage",
    "params": {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "[1] | sum | report t"}]}
    },
}


@pytest.fixture
def outage():  # type: ignore[no-untyped-def]
    """An app on a fakeredis server that can be switched off and on."""
    server = fakeredis.FakeServer()
    backend = RedisBackend("redis://fake", client=fakeredis.FakeRedis(server=server), prefix="outage")
    app = create_app(
        runtime=Runtime(store=backend.state_store()), task_store=backend.task_store(describe=describe_task)
    )
    return app.test_client(), server


RETRYABLE = {"retryable": "true", "retryAfterSeconds": "1"}
UNAVAILABLE_RPC = {
    "code": -32603,
    "message": "Storage is unavailable; retry later",
    "data": [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "INTERNAL_ERROR",
            "domain": "a2a-protocol.org",
            "metadata": RETRYABLE,
        }
    ],
}


def assert_rest_unavailable(response) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    error = response.get_json()["error"]
    assert error["code"] == 503 and error["status"] == "UNAVAILABLE"
    assert error["message"] == "Storage is unavailable; retry later"
    assert error["details"][0]["metadata"] == RETRYABLE


def test_runtime_store_outage_is_a_retryable_internal_error(outage, caplog) -> None:
    client, server = outage
    server.connected = False
    with caplog.at_level(logging.WARNING):
        reply = client.post("/a2a/jsonrpc", json=SEND, headers=V1).get_json()
    assert reply["error"] == UNAVAILABLE_RPC
    assert not any(record.exc_info for record in caplog.records)  # a line, not a traceback, per request

    assert_rest_unavailable(client.post("/a2a/rest/message:send", json=SEND["params"], headers=V1))

    server.connected = True  # nothing was half-written: the next request starts clean
    task = client.post("/a2a/jsonrpc", json=SEND, headers=V1).get_json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    listed = client.get("/a2a/rest/tasks", headers=V1).get_json()
    assert listed["totalSize"] == 1


def test_task_store_outage_on_read_is_a_retryable_internal_error(outage) -> None:
    client, server = outage
    server.connected = False
    reply = client.post(
        "/a2a/jsonrpc",
        json={"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "t"}},
        headers=V1,
    ).get_json()
    assert reply["error"] == UNAVAILABLE_RPC
    assert_rest_unavailable(client.get("/a2a/rest/tasks/t", headers=V1))
    assert_rest_unavailable(client.get("/a2a/rest/tasks", headers=V1))


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_an_outage_mid_stream_ends_it_with_the_retryable_error(binding: str, caplog) -> None:  # type: ignore[no-untyped-def]
    """The stream was answered 200 before the store failed, so the failure is its last event: the same
    retryable error, in the binding's shape, and a log line rather than a traceback."""
    server = fakeredis.FakeServer()
    backend = RedisBackend("redis://fake", client=fakeredis.FakeRedis(server=server), prefix="outage")
    client = create_app(
        runtime=Runtime(store=backend.state_store()),
        task_store=backend.task_store(describe=describe_task),
        config={"keepalive_seconds": 0.05},
    ).test_client()
    waiting = {**SEND["params"], "message": {**SEND["params"]["message"], "parts": [{"text": "[1] | sum"}]}}
    task = client.post("/a2a/rest/message:send", json=waiting, headers=V1).get_json()["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    if binding == "jsonrpc":
        body = {"jsonrpc": "2.0", "id": 5, "method": "SubscribeToTask", "params": {"id": task["id"]}}
        response = client.post("/a2a/jsonrpc", json=body, headers=V1)
    else:
        response = client.post(f"/a2a/rest/tasks/{task['id']}:subscribe", headers=V1)
    assert response.status_code == 200
    chunks = iter(response.response)
    assert b"\ndata: " in next(chunks)  # the task snapshot
    assert next(chunks) == b": keepalive\n\n"  # the store answers, nothing happens
    server.connected = False
    with caplog.at_level(logging.WARNING):
        events = sse_events(b"".join(chunks))
    assert [kind for kind, _ in events] == ["error"]
    error = events[0][1]
    if binding == "jsonrpc":
        assert error == {"jsonrpc": "2.0", "id": 5, "error": UNAVAILABLE_RPC}
    else:
        assert error["error"]["code"] == 503 and error["error"]["details"][0]["metadata"] == RETRYABLE
    assert any("store unavailable" in r.getMessage() for r in caplog.records)
    assert not any(record.exc_info for record in caplog.records)


def test_which_store_failures_are_outages(caplog) -> None:  # type: ignore[no-untyped-def]
    """Passing conditions (unreachable, no task left to evict) are the retryable 503; a task over the size
    limit or any other store failure stays a 500, and only those are logged with a traceback."""
    from quineling.a2a.errors import InternalError, UnavailableError, store_failure
    from stores.errors import StoreError, StoreUnavailable, TaskStoreFull, TaskTooLarge

    with caplog.at_level(logging.WARNING):
        for passing in (StoreUnavailable("down"), TaskStoreFull("full")):
            error = store_failure(passing)
            assert isinstance(error, UnavailableError) and error.status_code == 503
            assert error.metadata == RETRYABLE and error.retry_after == 1
        assert not any(record.exc_info for record in caplog.records)
        for failing in (TaskTooLarge("big"), StoreError("bug")):
            error = store_failure(failing)
            assert (
                type(error) is InternalError
                and error.status_code == 500
                and "retryable" not in error.metadata
            )
    assert [bool(r.exc_info) for r in caplog.records if r.levelname == "ERROR"] == [True]
