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


def test_a_run_retried_with_its_idempotency_key_creates_no_second_execution_record() -> None:
    app = create_app(config={"store_url": "memory://"})
    client = app.test_client()
    backend = app.extensions["quineling"].extras["backend"]

    def send(part: dict[str, Any], **headers: str) -> Any:
        body = {"message": user_message(part)}  # a fresh messageId on every retry
        return client.post(
            "/a2a/rest/message:send", json=body, headers={"A2A-Version": "1.0", **headers}
        ).get_json()

    created = send(text("[2,3,4] | square | sum | report total"))["task"]
    artifact_id = created["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
    run = data({"operation": "run", "artifactId": artifact_id})
    first = send(run, **{"Idempotency-Key": "run-1"})["task"]
    assert backend.usage("default").counters["records"] == 1
    again = send(run, **{"Idempotency-Key": "run-1"})["task"]
    assert again == first and backend.usage("default").counters["records"] == 1
    send(run)  # without a key a resent run is a fresh execution, as the product specification says
    assert backend.usage("default").counters["records"] == 2
