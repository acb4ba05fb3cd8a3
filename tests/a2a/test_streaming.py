"""SendStreamingMessage and SubscribeToTask over both bindings."""

from __future__ import annotations

from typing import Any

from quineling.a2a import errors
from tests.a2a.conftest import text, user_message


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [next(iter(e)) for e in events]


def state_of(event: dict[str, Any]) -> str:
    payload = event.get("task") or event.get("statusUpdate")
    return payload["status"]["state"]


def test_stream_event_order(binding: Any) -> None:
    outcome = binding.stream("SendStreamingMessage", {"message": user_message(text("x"))})
    events = list(outcome.value)
    assert kinds(events) == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert [state_of(events[i]) for i in (0, 1, 3)] == [
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    task_id = events[0]["task"]["id"]
    for event in events[1:]:
        body = next(iter(event.values()))
        assert body["taskId"] == task_id and body["contextId"] == events[0]["task"]["contextId"]
    assert events[2]["artifactUpdate"]["artifact"]["artifactId"] == "quineling-result"
    assert events[2]["artifactUpdate"]["lastChunk"] is True  # the one chunk closes the artifact


def test_stream_closes_at_input_required_and_follow_up_streams(binding: Any) -> None:
    events = list(binding.stream("SendStreamingMessage", {"message": user_message(text(""))}).value)
    assert state_of(events[-1]) == "TASK_STATE_INPUT_REQUIRED"
    task_id = events[0]["task"]["id"]
    follow = list(
        binding.stream("SendStreamingMessage", {"message": user_message(text("ok"), taskId=task_id)}).value
    )
    assert kinds(follow)[0] == "task" and kinds(follow)[-2:] == ["artifactUpdate", "statusUpdate"]
    assert state_of(follow[-1]) == "TASK_STATE_COMPLETED"


def test_stream_early_errors_are_plain(binding: Any) -> None:
    outcome = binding.stream("SendStreamingMessage", {"message": user_message(text("x"), taskId="nope")})
    assert outcome.error is errors.TaskNotFoundError
    assert binding.stream("SendStreamingMessage", {}).error is errors.InvalidParamsError


def test_subscribe_first_event_is_task_and_closes_at_terminal(binding: Any) -> None:
    first = binding.call("SendMessage", {"message": user_message(text(""))}).value["task"]
    outcome = binding.stream("SubscribeToTask", {"id": first["id"]})
    stream = iter(outcome.value)
    opening = next(stream)
    assert opening["task"]["id"] == first["id"]
    assert opening["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    # Another request completes the task; the open subscription relays it and ends.
    binding.call("SendMessage", {"message": user_message(text("done"), taskId=first["id"])})
    rest = list(stream)
    assert kinds(rest) == ["statusUpdate", "artifactUpdate", "statusUpdate"]
    assert state_of(rest[-1]) == "TASK_STATE_COMPLETED"


def test_subscribe_sees_cancel(binding: Any) -> None:
    first = binding.call("SendMessage", {"message": user_message(text(""))}).value["task"]
    stream = iter(binding.stream("SubscribeToTask", {"id": first["id"]}).value)
    next(stream)
    binding.call("CancelTask", {"id": first["id"]})
    assert [state_of(e) for e in stream] == ["TASK_STATE_CANCELED"]


def test_subscribe_errors(binding: Any) -> None:
    assert binding.stream("SubscribeToTask", {"id": "nope"}).error is errors.TaskNotFoundError
    done = binding.call("SendMessage", {"message": user_message(text("x"))}).value["task"]
    assert binding.stream("SubscribeToTask", {"id": done["id"]}).error is errors.UnsupportedOperationError


def test_subscribe_keepalive_and_bounded_wait() -> None:
    """An idle subscription sends ``: keepalive`` comments and ends after subscribe_max_seconds."""
    from tests.a2a.conftest import make_app
    from tests.support.bindings import V1

    client = make_app(config={"keepalive_seconds": 0.05, "subscribe_max_seconds": 0.3}).test_client()
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message(text(""))}}
    task = client.post("/a2a/jsonrpc", json=body, headers=V1).get_json()["result"]["task"]
    subscribe = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task["id"]}}
    chunks = list(client.post("/a2a/jsonrpc", json=subscribe, headers=V1).response)
    assert chunks[0].startswith(b"retry: 2000\nid: g") and b"\ndata: " in chunks[0]
    assert b": keepalive\n\n" in chunks[1:]
