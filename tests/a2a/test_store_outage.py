"""A store outage answers every request with one clear, retryable error and changes nothing."""

from __future__ import annotations

import logging

import fakeredis
import pytest

from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from stores.redis import RedisBackend
from tests.support.bindings import V1

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


def test_runtime_store_outage_is_a_retryable_internal_error(outage, caplog) -> None:
    client, server = outage
    server.connected = False
    with caplog.at_level(logging.WARNING):
        reply = client.post("/a2a/jsonrpc", json=SEND, headers=V1).get_json()
    assert reply["error"]["code"] == -32603
    assert reply["error"]["message"] == "Storage is unavailable; retry later"
    assert not any(record.exc_info for record in caplog.records)  # a line, not a traceback, per request

    rest = client.post("/a2a/rest/message:send", json=SEND["params"], headers=V1)
    assert (
        rest.status_code == 500
        and rest.get_json()["error"]["message"] == "Storage is unavailable; retry later"
    )

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
    assert reply["error"] == {"code": -32603, "message": "Storage is unavailable; retry later"}
