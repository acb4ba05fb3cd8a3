"""Every task-lifecycle scenario, run once per binding (JSON-RPC and HTTP+JSON)."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a import errors
from tests.a2a.conftest import data, text, user_message

TS = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"


def send(binding: Any, message: dict[str, Any], **params: Any) -> dict[str, Any]:
    outcome = binding.call("SendMessage", {"message": message, **params})
    assert outcome.ok, outcome.raw
    return outcome.value["task"]


def result_of(task: dict[str, Any]) -> dict[str, Any]:
    (artifact,) = task["artifacts"]
    assert artifact["artifactId"] == artifact["name"] == "quineling-result"
    (part,) = artifact["parts"]
    assert part["mediaType"] == "application/json"
    return part["data"]


def test_text_part_creates(binding: Any, app: Any) -> None:
    """A single text part is create with that exact thought, and completes the task."""
    task = send(binding, user_message(text("  [1] | sum  ")))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["id"] and task["contextId"]
    assert result_of(task) == {
        "operation": "create",
        "result": {"status": "created", "artifact": {"id": "sha256:abc"}},
    }
    runtime = app.extensions["quineling"].extras["runtime"]
    assert runtime.calls[-1] == {"operation": "create", "thought": "  [1] | sum  "}
    assert task["status"]["timestamp"].endswith("Z")
    assert task["history"][0]["role"] == "ROLE_USER"


@pytest.mark.parametrize("media_type", ["application/json", None, "application/json; charset=utf-8"])
def test_data_part_dispatches_request(binding: Any, app: Any, media_type: str | None) -> None:
    """A data part with mediaType application/json (or none) is passed to dispatch unchanged."""
    request = {"operation": "create", "thought": "[2,3] | sum"}
    task = send(binding, user_message(data(request, media_type)))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert app.extensions["quineling"].extras["runtime"].calls[-1] == request


def test_client_context_id_is_kept(binding: Any) -> None:
    task = send(binding, user_message(text("x"), contextId="ctx-mine"))
    assert task["contextId"] == "ctx-mine"


@pytest.mark.parametrize(
    "message",
    [
        user_message(),
        user_message(text("a"), text("b")),
        user_message({"url": "https://example.com/a.txt", "mediaType": "text/plain"}),
        user_message(data({"operation": "create", "thought": "x"}, "text/csv")),
        {"messageId": "m-agent", "role": "ROLE_AGENT", "parts": [text("x")]},
    ],
    ids=["no-parts", "two-parts", "file-part", "wrong-media-type", "agent-role"],
)
def test_bad_envelope_fails_new_task(binding: Any, message: dict[str, Any]) -> None:
    task = send(binding, message)
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    status_message = task["status"]["message"]
    assert status_message["role"] == "ROLE_AGENT"
    assert status_message["parts"][0]["text"]
    assert status_message["metadata"]["quinelingError"]["code"] == "invalid-request"
    assert "artifacts" not in task


def test_clarify_follow_up_completes_and_keeps_history(binding: Any) -> None:
    first = send(binding, user_message(text("   ")))
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert result_of(first)["result"]["status"] == "clarify"
    clarification = first["status"]["message"]
    follow = user_message(text("[1] | sum"), taskId=first["id"], contextId=first["contextId"])
    second = send(binding, follow)
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    assert result_of(second)["result"]["status"] == "created"  # replaced, not appended
    ids = [m["messageId"] for m in second["history"]]
    assert ids == [first["history"][0]["messageId"], clarification["messageId"], follow["messageId"]]
    assert second["history"][2]["parts"] == [text("[1] | sum")]


def test_follow_up_with_only_task_id_infers_context(binding: Any) -> None:
    first = send(binding, user_message(text("")))
    second = send(binding, user_message(text("ok"), taskId=first["id"]))
    assert second["contextId"] == first["contextId"]
    assert second["history"][-1]["contextId"] == first["contextId"]


def test_malformed_follow_up_keeps_input_required(binding: Any) -> None:
    first = send(binding, user_message(text("")))
    bad = user_message(text("a"), text("b"), taskId=first["id"])
    second = send(binding, bad)
    assert second["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert second["status"]["message"]["metadata"]["quinelingError"]["code"] == "invalid-request"
    assert bad["messageId"] in [m["messageId"] for m in second["history"]]
    third = send(binding, user_message(text("fine"), taskId=first["id"]))
    assert third["status"]["state"] == "TASK_STATE_COMPLETED"
    ids = [m["messageId"] for m in third["history"]]
    assert len(ids) == 5 and ids[2] == bad["messageId"]  # user, clarify, bad, its error, fix


def test_valid_follow_up_failing_runtime_fails_task(binding: Any) -> None:
    first = send(binding, user_message(text("")))
    second = send(
        binding, user_message(data({"operation": "inspect", "artifactId": "x"}), taskId=first["id"])
    )
    assert second["status"]["state"] == "TASK_STATE_FAILED"


def test_failed_task_keeps_quineling_error_in_get_task(binding: Any) -> None:
    task = send(binding, user_message(data({"operation": "inspect", "artifactId": "sha256:none"})))
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    expected = {"code": "not-found", "message": "unknown artifact 'sha256:none'", "path": "artifactId"}
    assert task["status"]["message"]["metadata"]["quinelingError"] == expected
    again = binding.call("GetTask", {"id": task["id"]}).value
    assert again["status"]["message"]["metadata"]["quinelingError"] == expected


@pytest.mark.parametrize("thought", ["unsupported thing", "inconsistent thing"])
def test_rejected_keeps_diagnostics(binding: Any, thought: str) -> None:
    task = send(binding, user_message(text(thought)))
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert result_of(task)["result"]["diagnostics"]


def test_unknown_task_is_not_found(binding: Any) -> None:
    assert binding.call("GetTask", {"id": "missing"}).error is errors.TaskNotFoundError
    outcome = binding.call("SendMessage", {"message": user_message(text("x"), taskId="missing")})
    assert outcome.error is errors.TaskNotFoundError
    assert binding.call("CancelTask", {"id": "missing"}).error is errors.TaskNotFoundError


def test_wrong_context_is_invalid_params(binding: Any) -> None:
    task = send(binding, user_message(text("")))
    message = user_message(text("x"), taskId=task["id"], contextId="other")
    assert binding.call("SendMessage", {"message": message}).error is errors.InvalidParamsError


def test_message_to_terminal_task_is_unsupported(binding: Any) -> None:
    task = send(binding, user_message(text("done")))
    message = user_message(text("more"), taskId=task["id"])
    assert binding.call("SendMessage", {"message": message}).error is errors.UnsupportedOperationError


def test_missing_message_is_invalid_params(binding: Any) -> None:
    assert binding.call("SendMessage", {}).error is errors.InvalidParamsError
    assert binding.call("SendMessage", {"message": {"role": "ROLE_USER"}}).error is errors.InvalidParamsError


def test_cancel_input_required_then_idempotent(binding: Any) -> None:
    """Cancel of INPUT_REQUIRED → CANCELED; cancel again returns it unchanged."""
    task = send(binding, user_message(text("")))
    canceled = binding.call("CancelTask", {"id": task["id"]}).value
    assert canceled["id"] == task["id"] and canceled["status"]["state"] == "TASK_STATE_CANCELED"
    again = binding.call("CancelTask", {"id": task["id"]}).value
    assert again == canceled
    follow = binding.call("SendMessage", {"message": user_message(text("x"), taskId=task["id"])})
    assert follow.error is errors.UnsupportedOperationError


def test_cancel_completed_is_not_cancelable(binding: Any) -> None:
    task = send(binding, user_message(text("done")))
    assert binding.call("CancelTask", {"id": task["id"]}).error is errors.TaskNotCancelableError


def test_history_length(binding: Any) -> None:
    first = send(binding, user_message(text("")))
    send(binding, user_message(text("ok"), taskId=first["id"]))
    full = binding.call("GetTask", {"id": first["id"]}).value
    assert len(full["history"]) == 3
    assert "history" not in binding.call("GetTask", {"id": first["id"], "historyLength": 0}).value
    last = binding.call("GetTask", {"id": first["id"], "historyLength": 2}).value
    assert last["history"] == full["history"][-2:]
    negative = binding.call("GetTask", {"id": first["id"], "historyLength": -1})
    assert negative.error is errors.InvalidParamsError
    sent = binding.call(
        "SendMessage", {"message": user_message(text("x")), "configuration": {"historyLength": 0}}
    )
    assert "history" not in sent.value["task"]


def test_return_immediately_returns_the_task(binding: Any) -> None:
    """Work is synchronous: returnImmediately still returns the task after dispatch."""
    outcome = binding.call(
        "SendMessage", {"message": user_message(text("x")), "configuration": {"returnImmediately": True}}
    )
    assert outcome.value["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_push_config_methods_not_supported(binding: Any) -> None:
    task = send(binding, user_message(text("x")))
    calls = [
        ("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": "https://example.com/hook"}),
        ("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"}),
        ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
        ("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"}),
    ]
    for method, params in calls:
        assert binding.call(method, params).error is errors.PushNotificationNotSupportedError, method


def test_extended_card_unsupported(binding: Any) -> None:
    assert binding.call("GetExtendedAgentCard", {}).error is errors.UnsupportedOperationError


def test_snake_case_and_unknown_fields_accepted(binding: Any) -> None:
    message = {"message_id": "snake-1", "role": "ROLE_USER", "parts": [text("x")], "tckUnknownField": 1}
    task = send(binding, message, tckExtraParam=True)
    assert task["history"][0] == {
        "messageId": "snake-1",
        "role": "ROLE_USER",
        "parts": [text("x")],
        "taskId": task["id"],
        "contextId": task["contextId"],
    }


def test_statuses_have_millisecond_utc_timestamps(binding: Any) -> None:
    import re

    task = send(binding, user_message(text("")))
    assert re.match(TS, task["status"]["timestamp"])
