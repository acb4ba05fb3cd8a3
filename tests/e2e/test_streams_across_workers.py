"""Streams on real Redis with several gunicorn workers: SubscribeToTask relays events caused by a follow-up
served by another worker; SendStreamingMessage order; a client disconnect never cancels the task."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from tests.e2e.client import traced_server
from tests.support.http_bindings import BINDINGS, Binding
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM, result_of, text, user_message

pytestmark = pytest.mark.slow
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}


@pytest.fixture(scope="module")
def server(redis_store_url: str) -> Iterator[LiveServer]:
    # Short keep-alives: a subscriber that went away is noticed (and its thread freed) quickly.
    with traced_server(
        store_url=redis_store_url, workers=3, threads=6, keepalive_seconds=0.5, subscribe_max_seconds=30
    ) as live:
        yield live


@pytest.fixture(params=list(BINDINGS))
def binding(request: pytest.FixtureRequest, server: LiveServer) -> Binding:
    return BINDINGS[request.param](server, tenant=f"streams-{uuid.uuid4().hex[:8]}")


def clarification(binding: Binding) -> str:
    task = binding.send(user_message(text("   ")))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task["id"]


def state_of(event: dict) -> str | None:
    if "task" in event:
        return event["task"]["status"]["state"]
    if "statusUpdate" in event:
        return event["statusUpdate"]["status"]["state"]
    return None


@pytest.fixture(scope="module")
def second_host(server: LiveServer) -> Iterator[LiveServer]:
    """Another gunicorn master on the same store prefix: requests sent to it are served by another process by
    construction (how one master's workers share connections is up to the kernel and the worker class)."""
    with live_server(share_with=server, keepalive_seconds=0.5) as live:
        yield live


def test_subscriber_sees_follow_up_served_by_another_process(
    binding: Binding, server: LiveServer, second_host: LiveServer
) -> None:
    """Snapshot first, then the follow-up's working → artifact → completed events, ending the stream, when the
    subscription is held by one server process and the follow-up is served by another."""
    other = BINDINGS[binding.name](second_host, tenant=binding.tenant)
    for _ in range(2):
        task_id = clarification(binding)
        with binding.subscribe(task_id) as stream:
            first = next(stream)
            assert first["task"]["id"] == task_id
            assert first["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            follow_up = other.send(user_message(text(SQUARE_SUM), task_id=task_id))
            assert follow_up["status"]["state"] == "TASK_STATE_COMPLETED"
            rest = list(stream)  # the server closes the stream after the terminal event
        assert all("task" not in event for event in rest)
        for event in rest:
            update = event.get("statusUpdate") or event.get("artifactUpdate")
            assert update["taskId"] == task_id
        kinds = [next(iter(event)) for event in rest]
        assert kinds[-2:] == ["artifactUpdate", "statusUpdate"], kinds
        assert state_of(rest[-1]) == "TASK_STATE_COMPLETED"
        assert [state_of(e) for e in rest if "statusUpdate" in e] == [
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]
        artifact = rest[-2]["artifactUpdate"]["artifact"]
        assert artifact["artifactId"] == "quineling-result"
        assert artifact["parts"][0]["data"]["result"]["status"] == "created"


def test_send_streaming_message_order(binding: Binding) -> None:
    """Task snapshot first, artifact before the terminal status, and the stream ends at that status."""
    with binding.stream(user_message(text(SQUARE_SUM))) as stream:
        events = list(stream)
    assert "task" in events[0] and state_of(events[0]) not in TERMINAL
    task_id = events[0]["task"]["id"]
    kinds = [next(iter(event)) for event in events]
    assert kinds.count("task") == 1 and kinds.count("artifactUpdate") == 1
    assert kinds.index("artifactUpdate") < len(kinds) - 1 and kinds[-1] == "statusUpdate"
    assert state_of(events[-1]) == "TASK_STATE_COMPLETED"
    assert all(state_of(e) not in TERMINAL for e in events[:-1])
    assert binding.get_task(task_id)["status"]["state"] == "TASK_STATE_COMPLETED"


def test_streaming_clarification_ends_at_input_required(binding: Binding) -> None:
    """An interrupted streaming send closes after its INPUT_REQUIRED status, with the artifact before it."""
    with binding.stream(user_message(text("   "))) as stream:
        events = list(stream)
    kinds = [next(iter(event)) for event in events]
    assert kinds[0] == "task" and kinds[-2:] == ["artifactUpdate", "statusUpdate"]
    assert state_of(events[-1]) == "TASK_STATE_INPUT_REQUIRED"


def test_disconnecting_does_not_cancel(binding: Binding) -> None:
    """Dropping a SubscribeToTask or SendStreamingMessage connection mid-stream leaves the task alone."""
    task_id = clarification(binding)
    stream = binding.subscribe(task_id)
    assert next(stream)["task"]["id"] == task_id
    stream.close()
    time.sleep(0.7)  # past one keep-alive: the server has noticed the closed connection
    assert binding.get_task(task_id)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # The task still accepts its follow-up, and a new subscriber still works.
    with binding.subscribe(task_id) as again:
        assert state_of(next(again)) == "TASK_STATE_INPUT_REQUIRED"
    done = binding.send(user_message(text(SQUARE_SUM), task_id=task_id))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"

    sent = binding.stream(user_message(text(SQUARE_SUM)))
    streamed_id = next(sent)["task"]["id"]
    sent.close()
    task = binding.get_task(streamed_id)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert result_of(task)["result"]["status"] == "created"


def test_subscriber_stays_through_input_required_and_ends_at_cancel(binding: Binding) -> None:
    """A malformed follow-up keeps the task INPUT_REQUIRED and the subscription open; a cancel from another
    connection then ends it at TASK_STATE_CANCELED."""
    task_id = clarification(binding)
    with binding.subscribe(task_id) as stream:
        assert state_of(next(stream)) == "TASK_STATE_INPUT_REQUIRED"
        malformed = {**user_message(text(SQUARE_SUM), task_id=task_id), "role": "ROLE_AGENT"}
        assert binding.send(malformed)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        update = next(stream)
        assert state_of(update) == "TASK_STATE_INPUT_REQUIRED"
        error = update["statusUpdate"]["status"]["message"]["metadata"]["quinelingError"]
        assert error["code"] == "invalid-request"
        assert binding.cancel(task_id)["status"]["state"] == "TASK_STATE_CANCELED"
        rest = list(stream)
    assert [state_of(event) for event in rest] == ["TASK_STATE_CANCELED"]
