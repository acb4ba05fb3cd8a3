"""The gRPC servicer in process: every method, its errors as google.rpc.Status with ErrorInfo, streams with
resumable event ids, idempotency keys, long-poll, extensions, size limits, metrics and log lines."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import grpc
import pytest
from a2a.types import a2a_pb2
from google.protobuf import json_format

from quineling.a2a.card import IDEMPOTENCY_EXTENSION
from quineling.observe import metrics
from tests.a2a.grpc.conftest import SQUARE_SUM, Stack, data, grpc_stack, message, refusal, result_of

CREATE = {"operation": "create", "thought": SQUARE_SUM}


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with grpc_stack(tenants="acme", long_poll_seconds=0.4) as live:
        yield live


def test_create_run_get_list_and_cancel(stack: Stack) -> None:
    created = stack.send(data(CREATE))
    assert created["status"]["state"] == "TASK_STATE_COMPLETED"
    artifact_id = result_of(created)["result"]["artifact"]["id"]
    ran = stack.send(data({"operation": "run", "artifactId": artifact_id}))
    assert result_of(ran)["result"]["outputs"] == {"total": 29}
    got = json_format.MessageToDict(
        stack.stub.GetTask(a2a_pb2.GetTaskRequest(id=ran["id"], history_length=0))
    )
    assert got["id"] == ran["id"] and "history" not in got and result_of(got) == result_of(ran)
    page = stack.stub.ListTasks(a2a_pb2.ListTasksRequest(context_id=ran["contextId"], page_size=5))
    assert [task.id for task in page.tasks] == [ran["id"]] and page.total_size == 1 and page.page_size == 5
    asked = stack.send({"text": " "})
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    canceled = stack.stub.CancelTask(a2a_pb2.CancelTaskRequest(id=asked["id"]))
    assert a2a_pb2.TaskState.Name(canceled.status.state) == "TASK_STATE_CANCELED"
    assert refusal(stack.stub.CancelTask, a2a_pb2.CancelTaskRequest(id=ran["id"]))[:2] == (
        "FAILED_PRECONDITION",
        "TASK_NOT_CANCELABLE",
    )


def test_refusals_carry_the_error_tables_code_and_error_info(stack: Stack) -> None:
    stub = stack.stub
    assert refusal(stub.GetTask, a2a_pb2.GetTaskRequest(id="nope")) == (
        "NOT_FOUND",
        "TASK_NOT_FOUND",
        {"taskId": "nope"},
    )
    assert refusal(stub.SubscribeToTask, a2a_pb2.SubscribeToTaskRequest(id="nope"))[:2] == (
        "NOT_FOUND",
        "TASK_NOT_FOUND",
    )
    push = [
        (
            stub.CreateTaskPushNotificationConfig,
            a2a_pb2.TaskPushNotificationConfig(task_id="t", url="https://x"),
        ),
        (
            stub.GetTaskPushNotificationConfig,
            a2a_pb2.GetTaskPushNotificationConfigRequest(task_id="t", id="c"),
        ),
        (stub.ListTaskPushNotificationConfigs, a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id="t")),
        (
            stub.DeleteTaskPushNotificationConfig,
            a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id="t", id="c"),
        ),
    ]
    for method, request in push:
        assert refusal(method, request)[:2] == ("FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED")
    card = refusal(stub.GetExtendedAgentCard, a2a_pb2.GetExtendedAgentCardRequest())
    assert card[:2] == ("FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
    assert refusal(stub.ListTasks, a2a_pb2.ListTasksRequest(page_size=500))[:2] == (
        "INVALID_ARGUMENT",
        "INVALID_PARAMS",
    )
    old = refusal(stub.GetTask, a2a_pb2.GetTaskRequest(id="x"), metadata=(("a2a-version", "0.3"),))
    assert old == ("FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", {"requestedVersion": "0.3"})
    tenant = message({"text": SQUARE_SUM})
    tenant.tenant = "elsewhere"
    assert refusal(stub.SendMessage, tenant)[:2] == ("INVALID_ARGUMENT", "INVALID_PARAMS")
    done = stack.send({"text": SQUARE_SUM})
    follow = refusal(stub.SendMessage, message({"text": SQUARE_SUM}, taskId=done["id"]))
    assert follow[:2] == ("FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")


def test_a_tenant_served_is_a_scope_of_its_own(stack: Stack) -> None:
    request = message(data(CREATE))
    request.tenant = "acme"
    task = stack.stub.SendMessage(request).task
    assert refusal(stack.stub.GetTask, a2a_pb2.GetTaskRequest(id=task.id))[:2] == (
        "NOT_FOUND",
        "TASK_NOT_FOUND",
    )
    assert stack.stub.GetTask(a2a_pb2.GetTaskRequest(id=task.id, tenant="acme")).id == task.id


def kinds(events: list[a2a_pb2.StreamResponse]) -> list[tuple[str, str]]:
    out = []
    for event in events:
        kind = event.WhichOneof("payload")
        value = getattr(event, kind)
        state = a2a_pb2.TaskState.Name(value.status.state) if kind in ("task", "status_update") else ""
        out.append((kind, state))
    return out


def event_id(event: a2a_pb2.StreamResponse) -> str:
    value = getattr(event, event.WhichOneof("payload"))
    return str(json_format.MessageToDict(value.metadata)["eventId"])


def test_streams_in_order_with_event_ids_and_resume_after_any_of_them(stack: Stack) -> None:
    events = list(stack.stub.SendStreamingMessage(message(data(CREATE))))
    order = kinds(events)
    assert order[0] == ("task", "TASK_STATE_SUBMITTED")
    assert ("artifact_update", "") in order[:-1] and order[-1] == ("status_update", "TASK_STATE_COMPLETED")
    ids = [event_id(event) for event in events]
    assert len(set(ids)) == len(ids)
    task_id = events[0].task.id
    resumed = list(
        stack.stub.SubscribeToTask(
            a2a_pb2.SubscribeToTaskRequest(id=task_id), metadata=(("last-event-id", ids[0]),)
        )
    )
    assert [event_id(event) for event in resumed] == ids[1:]
    assert kinds(resumed) == order[1:]
    foreign = refusal(
        stack.stub.SubscribeToTask,
        a2a_pb2.SubscribeToTaskRequest(id=task_id),
        metadata=(("last-event-id", "g-not-an-id"),),
    )
    assert foreign[:2] == ("INVALID_ARGUMENT", "INVALID_PARAMS")


def test_an_idempotency_key_answers_a_retry_with_the_first_task(stack: Stack) -> None:
    keyed = (("idempotency-key", "k-grpc-1"),)
    first = stack.stub.SendMessage(
        message(data({"operation": "worldCreate", "worldKey": "g1", "seed": 3})), metadata=keyed
    )
    again = stack.stub.SendMessage(
        message(data({"operation": "worldCreate", "worldKey": "g1", "seed": 3})), metadata=keyed
    )
    assert again.task.id == first.task.id
    reused = refusal(stack.stub.SendMessage, message(data(CREATE)), metadata=keyed)
    assert reused[:2] == ("ALREADY_EXISTS", "IDEMPOTENCY_KEY_REUSED")


def test_get_task_long_polls_with_the_current_generation(stack: Stack) -> None:
    task = stack.send(data(CREATE))
    generation = str(int(task["metadata"]["generation"]))
    started = time.monotonic()
    stack.stub.GetTask(a2a_pb2.GetTaskRequest(id=task["id"]))
    quick = time.monotonic() - started
    started = time.monotonic()
    waited = stack.stub.GetTask(
        a2a_pb2.GetTaskRequest(id=task["id"]), metadata=(("quineling-current-generation", generation),)
    )
    assert time.monotonic() - started >= 0.35 > quick  # nothing changed: the bounded wait, then the task
    assert waited.id == task["id"]
    bad = refusal(
        stack.stub.GetTask,
        a2a_pb2.GetTaskRequest(id=task["id"]),
        metadata=(("quineling-current-generation", "-1"),),
    )
    assert bad[:2] == ("INVALID_ARGUMENT", "INVALID_PARAMS")


def test_requested_extensions_the_card_declares_are_echoed(stack: Stack) -> None:
    asked = f"{IDEMPOTENCY_EXTENSION}, https://example.com/unknown"
    _, call = stack.stub.SendMessage.with_call(message(data(CREATE)), metadata=(("a2a-extensions", asked),))
    assert dict(call.initial_metadata())["a2a-extensions"] == IDEMPOTENCY_EXTENSION
    _, plain = stack.stub.SendMessage.with_call(message(data(CREATE)))
    assert "a2a-extensions" not in dict(plain.initial_metadata())


def test_each_call_is_counted_and_logged_with_its_method_and_outcome(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    labels = {"binding": "grpc", "method": "GetTask", "outcome": "TASK_NOT_FOUND"}
    before = metrics.REGISTRY.get_sample_value("quineling_requests_total", labels) or 0.0
    with caplog.at_level(logging.INFO, logger="quineling.request"):
        refusal(stack.stub.GetTask, a2a_pb2.GetTaskRequest(id="gone"), metadata=(("x-request-id", "g-1"),))
    assert metrics.REGISTRY.get_sample_value("quineling_requests_total", labels) == before + 1
    [line] = [r for r in caplog.records if r.getMessage() == "request" and r.request_id == "g-1"]  # type: ignore[attr-defined]
    fields = (line.binding, line.method, line.outcome, line.status, line.task_id, line.path)  # type: ignore[attr-defined]
    assert fields == ("grpc", "GetTask", "TASK_NOT_FOUND", 404, "gone", "/lf.a2a.v1.A2AService/GetTask")


def test_a_request_over_the_size_limit_is_refused() -> None:
    with grpc_stack(request_limit_bytes=4096) as small:
        with pytest.raises(grpc.RpcError) as info:
            small.stub.SendMessage(message({"text": "x" * 8192}))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert small.send({"text": SQUARE_SUM})["status"]["state"] == "TASK_STATE_COMPLETED"
