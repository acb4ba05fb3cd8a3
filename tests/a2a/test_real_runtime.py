"""End to end over the real Runtime (memory store): the README's square/sum example through both bindings."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.app import create_app
from tests.a2a.conftest import data, text, user_message
from tests.support.bindings import JsonRpcBinding, RestBinding

pytest.importorskip("quineling.runtime.build_ops")


@pytest.fixture(params=["jsonrpc", "rest"])
def real(request: Any) -> Any:
    client = create_app(config={"store_url": "memory://"}).test_client()
    return JsonRpcBinding(client) if request.param == "jsonrpc" else RestBinding(client)


def result(binding: Any, message: dict[str, Any]) -> tuple[str, Any]:
    task = binding.call("SendMessage", {"message": message}).value["task"]
    payload = task["artifacts"][0]["parts"][0]["data"] if task.get("artifacts") else None
    return task["status"]["state"], payload


def test_create_then_run_totals_29(real: Any) -> None:
    state, created = result(real, user_message(text("[2,3,4] | square | sum | report total")))
    assert state == "TASK_STATE_COMPLETED" and created["operation"] == "create"
    artifact_id = created["result"]["artifact"]["id"]
    state, ran = result(real, user_message(data({"operation": "run", "artifactId": artifact_id})))
    assert state == "TASK_STATE_COMPLETED" and ran["result"]["outputs"]["total"] == 29


def test_unknown_artifact_fails_with_runtime_error(real: Any) -> None:
    task = real.call(
        "SendMessage", {"message": user_message(data({"operation": "run", "artifactId": "nope"}))}
    )
    status = task.value["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert set(status["message"]["metadata"]["quinelingError"]) == {"code", "message", "path"}


def test_unknown_operation_fails(real: Any) -> None:
    state, _ = result(real, user_message(data({"operation": "launchRockets"})))
    assert state == "TASK_STATE_FAILED"
