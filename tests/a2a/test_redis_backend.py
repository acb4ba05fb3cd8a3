"""The A2A layer over the Redis backend (fakeredis): round-trip budget and cross-request streaming."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from tests.a2a.conftest import data, text, user_message
from tests.support.bindings import V1, JsonRpcBinding

fakeredis = pytest.importorskip("fakeredis")


@pytest.fixture
def backend() -> Any:
    from stores.redis import RedisBackend

    return RedisBackend("redis://fake", client=fakeredis.FakeRedis(), prefix="a2a-test")


@pytest.fixture
def redis_client(backend: Any) -> Any:
    config = {"keepalive_seconds": 0.2, "subscribe_max_seconds": 5}
    app = create_app(
        runtime=Runtime(store=backend.state_store()),
        task_store=backend.task_store(describe=describe_task),
        config=config,
    )
    return app.test_client()


def send(client: Any, thought: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": user_message(text(thought))},
    }
    return client.post("/a2a/jsonrpc", json=body, headers=V1).get_json()["result"]["task"]


def test_the_runtime_commits_each_task_in_its_own_commit(redis_client: Any) -> None:
    extras = redis_client.application.extensions["quineling"].extras
    assert extras["task_store"].joins(extras["runtime"].store)


@pytest.mark.parametrize(
    "thought",
    ["[2,3,4] | square | sum | report total", "[{n}] | sum | report fresh"],
    ids=["retained-artifact", "new-artifact"],
)
def test_new_task_send_is_two_round_trips(backend: Any, redis_client: Any, thought: str) -> None:
    """Runtime read + one commit of the runtime's change set together with the task and all its events —
    whether or not the request writes runtime state (a new artifact does, a retained one does not)."""
    send(redis_client, "[1] | sum | report warm")  # warm-up: script registration
    send(redis_client, "[2,3,4] | square | sum | report total")  # retained from here on
    before = backend.round_trips()
    task = send(redis_client, thought.format(n=7))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert backend.round_trips() - before == 2


def test_a_failed_request_is_two_round_trips(backend: Any, redis_client: Any) -> None:
    """A refusal commits no runtime state: the runtime's read, then the FAILED task committed alone."""
    send(redis_client, "[1] | sum | report warm")
    unknown = data({"operation": "inspect", "artifactId": "sha256:" + "0" * 64})
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message(unknown)}}
    before = backend.round_trips()
    task = redis_client.post("/a2a/jsonrpc", json=body, headers=V1).get_json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["metadata"]["quinelingError"]["code"] == "not-found"
    assert backend.round_trips() - before == 2


def test_subscribe_relays_follow_up(redis_client: Any) -> None:
    binding = JsonRpcBinding(redis_client)
    task = binding.call("SendMessage", {"message": user_message(text(""))}).value["task"]
    stream = iter(binding.stream("SubscribeToTask", {"id": task["id"]}).value)
    assert next(stream)["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    binding.call(
        "SendMessage",
        {"message": user_message(text("[2,3,4] | square | sum | report total"), taskId=task["id"])},
    )
    states = [e["statusUpdate"]["status"]["state"] for e in stream if "statusUpdate" in e]
    assert states[-1] == "TASK_STATE_COMPLETED"


def test_follow_up_and_cancel_add_no_round_trips_for_versions(backend: Any, redis_client: Any) -> None:
    """A follow-up is one versioned load + the runtime's read + one commit that carries the conditional
    save; a cancel is load + save."""
    binding = JsonRpcBinding(redis_client)
    for _ in range(2):  # the second pass runs with every script registered
        paused = binding.call("SendMessage", {"message": user_message(text(""))}).value["task"]
        before = backend.round_trips()
        follow_up = user_message(text("[2,3,4] | square | sum | report total"), taskId=paused["id"])
        done = binding.call("SendMessage", {"message": follow_up}).value["task"]
        follow_up_trips = backend.round_trips() - before
        other = binding.call("SendMessage", {"message": user_message(text(""))}).value["task"]
        before = backend.round_trips()
        canceled = binding.call("CancelTask", {"id": other["id"]}).value
        cancel_trips = backend.round_trips() - before
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert follow_up_trips == 3  # load, runtime read, runtime commit with the task save
    assert cancel_trips == 2
