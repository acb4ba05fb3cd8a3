"""ListTasks over both bindings: paging, filters, includeArtifacts, totalSize, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a import errors
from tests.a2a.conftest import text, user_message


def create(binding: Any, thought: str, **extra: Any) -> dict[str, Any]:
    return binding.call("SendMessage", {"message": user_message(text(thought), **extra)}).value["task"]


def test_paging_with_cursor(binding: Any) -> None:
    ids = [create(binding, f"t{i}")["id"] for i in range(5)]
    seen: list[str] = []
    token = ""
    while True:
        params: dict[str, Any] = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        page = binding.call("ListTasks", params).value
        assert set(page) == {"tasks", "nextPageToken", "pageSize", "totalSize"}
        assert page["pageSize"] == 2 and page["totalSize"] == 5
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
    assert seen == list(reversed(ids))  # newest first


def test_empty_listing_has_all_four_fields(binding: Any) -> None:
    page = binding.call("ListTasks", {}).value
    assert page == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}


def test_filters(binding: Any) -> None:
    a = create(binding, "x", contextId="ctx-a")
    create(binding, "", contextId="ctx-b")
    create(binding, "y", contextId="ctx-a")
    by_context = binding.call("ListTasks", {"contextId": "ctx-a"}).value
    assert by_context["totalSize"] == 2
    paused = binding.call("ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED"}).value
    assert [t["status"]["state"] for t in paused["tasks"]] == ["TASK_STATE_INPUT_REQUIRED"]
    by_number = binding.call("ListTasks", {"status": 6}).value
    assert by_number["totalSize"] == 1
    after = binding.call("ListTasks", {"statusTimestampAfter": a["status"]["timestamp"]}).value
    assert after["totalSize"] == 3  # inclusive: a task updated exactly at the timestamp is listed
    future = binding.call("ListTasks", {"statusTimestampAfter": "2999-01-01T00:00:00+02:00"}).value
    assert future["totalSize"] == 0


def test_include_artifacts_and_history_length(binding: Any) -> None:
    create(binding, "x")
    plain = binding.call("ListTasks", {}).value["tasks"][0]
    assert "artifacts" not in plain and plain["history"]
    full = binding.call("ListTasks", {"includeArtifacts": True, "historyLength": 0}).value["tasks"][0]
    assert full["artifacts"][0]["artifactId"] == "quineling-result" and "history" not in full


@pytest.mark.parametrize(
    "params",
    [
        {"pageSize": 0},
        {"pageSize": 101},
        {"historyLength": -1},
        {"pageToken": "not-a-token"},
        {"statusTimestampAfter": "yesterday"},
        {"status": "TASK_STATE_BOGUS"},
    ],
)
def test_bad_parameters(binding: Any, params: dict[str, Any]) -> None:
    assert binding.call("ListTasks", params).error is errors.InvalidParamsError


def test_cursor_bound_to_filters(binding: Any) -> None:
    for i in range(3):
        create(binding, f"t{i}", contextId="ctx")
    token = binding.call("ListTasks", {"pageSize": 1, "contextId": "ctx"}).value["nextPageToken"]
    assert token
    reused = binding.call("ListTasks", {"pageSize": 1, "contextId": "other", "pageToken": token})
    assert reused.error is errors.InvalidParamsError
