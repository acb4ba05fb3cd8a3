"""The three bindings agree: the request sequence covering all sixteen runtime operations (and refusals) of
tests/runtime/test_transport_equivalence.py gives the same results over JSON-RPC, HTTP+JSON and gRPC, each on a
fresh app, and as direct dispatch; so do the task methods around them."""

from __future__ import annotations

from typing import Any

from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from tests.a2a.conftest import data, user_message
from tests.a2a.grpc.conftest import grpc_stack
from tests.runtime.test_transport_equivalence import direct, masked, scenario, transported
from tests.support.bindings import JsonRpcBinding, RestBinding
from tests.support.grpc_binding import GrpcBinding


def test_all_sixteen_operations_give_the_same_results_on_the_three_bindings() -> None:
    expected = [(name, masked(outcome)) for name, outcome in scenario(direct(Runtime()))]
    results: dict[str, Any] = {}
    for name, binding in (("jsonrpc", JsonRpcBinding), ("rest", RestBinding)):
        client = create_app(config={"store_url": "memory://"}).test_client()
        results[name] = [(op, masked(outcome)) for op, outcome in scenario(transported(binding(client)))]
    with grpc_stack(store_url="memory://") as stack:
        grpc_log = scenario(transported(GrpcBinding(stack.stub)))
    results["grpc"] = [(op, masked(outcome)) for op, outcome in grpc_log]
    assert len(expected) > 16
    for name, actual in results.items():
        assert actual == expected, name


def task_methods(binding: Any) -> dict[str, Any]:
    """GetTask, ListTasks, CancelTask, a stream and the refused methods, as each binding answers them."""

    def send(part: dict[str, Any], **fields: str) -> dict[str, Any]:
        outcome = binding.call("SendMessage", {"message": user_message(part, **fields), "tenant": "eq"})
        assert outcome.ok, outcome.raw
        task: dict[str, Any] = outcome.value["task"]
        return task

    created = send(data({"operation": "create", "thought": "[1,2] | sum | report total"}))
    asked = send({"text": " "})
    streamed = binding.stream(
        "SendStreamingMessage",
        {
            "message": user_message(data({"operation": "run", "artifactId": "sha256:" + "0" * 64})),
            "tenant": "eq",
        },
    )
    assert streamed.ok, streamed.raw
    events = list(streamed.value)
    answers = {
        "get": binding.call("GetTask", {"id": created["id"], "tenant": "eq", "historyLength": 0}),
        "list": binding.call("ListTasks", {"tenant": "eq", "contextId": created["contextId"], "pageSize": 3}),
        "cancel": binding.call("CancelTask", {"id": asked["id"], "tenant": "eq"}),
        "cancel-done": binding.call("CancelTask", {"id": created["id"], "tenant": "eq"}),
        "missing": binding.call("GetTask", {"id": "missing", "tenant": "eq"}),
        "card": binding.call("GetExtendedAgentCard", {"tenant": "eq"}),
        "push": binding.call(
            "GetTaskPushNotificationConfig", {"taskId": created["id"], "id": "c", "tenant": "eq"}
        ),
    }
    shapes: dict[str, Any] = {
        name: (outcome.error, None if outcome.value is None else masked_task(outcome.value))
        for name, outcome in answers.items()
    }
    shapes["stream"] = [sorted(event) for event in events]
    shapes["stream-states"] = [
        event.get("statusUpdate", event.get("task", {})).get("status", {}).get("state") for event in events
    ]
    return shapes


FRESH = {"id", "contextId", "taskId", "messageId", "timestamp", "eventId", "createdAt"}


def masked_task(value: Any, key: str | None = None) -> Any:
    """Ids and timestamps are fresh per app; numbers compare by value (a Struct's numbers are doubles); a
    field at its proto default ("", [], {}) is as good as absent, as proto3 JSON leaves it out."""
    if key in FRESH:
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: masked_task(v, k) for k, v in value.items() if v not in ("", [], {})}
    if isinstance(value, list):
        return [masked_task(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def test_the_task_methods_answer_alike_on_the_three_bindings() -> None:
    answers = {}
    for name, binding in (("jsonrpc", JsonRpcBinding), ("rest", RestBinding)):
        answers[name] = task_methods(binding(create_app(config={"tenants": "*"}).test_client()))
    with grpc_stack() as stack:
        answers["grpc"] = task_methods(GrpcBinding(stack.stub))
    assert answers["grpc"] == answers["jsonrpc"] == answers["rest"]
