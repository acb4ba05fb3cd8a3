"""The service and executor without HTTP: store round trips, eager stream errors, store failures."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a import errors
from quineling.a2a.context import CallContext
from quineling.a2a.executor import QuinelingExecutor, request_of
from quineling.a2a.generations import generation_of
from quineling.a2a.service import A2AService
from quineling.a2a.task_facts import describe_task
from quineling.runtime.errors import QuinelingError
from stores import backend_from_url
from stores.errors import TaskStoreFull, TaskTooLarge
from tests.a2a.conftest import FakeRuntime, text, user_message

SAVES = ("save", "save_with_changes")  # a plain save, and one inside the runtime's commit


class CountingStore:
    """A task store proxy that counts calls per method."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}
        self.fail: Exception | None = None

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            if self.fail is not None and name in SAVES:
                raise self.fail
            return target(*args, **kwargs)

        return call


@pytest.fixture
def backend() -> Any:
    return backend_from_url("memory://")


@pytest.fixture
def store(backend: Any) -> CountingStore:
    return CountingStore(backend.task_store(describe=describe_task))


@pytest.fixture
def service(store: CountingStore, backend: Any) -> A2AService:
    return A2AService(FakeRuntime(backend.state_store()), store, lambda _v: {})  # type: ignore[arg-type]


CTX = CallContext()


def test_new_task_is_saved_once_and_logs_every_change_numbered_by_generation(
    service: A2AService, store: CountingStore
) -> None:
    """One save per new task (no separate SUBMITTED save). Every change is logged, the first save's too (a
    cut streaming send resumes from the log), and the log's entry ``n`` is the change of generation ``n``."""
    task = service.send_message({"message": user_message(text(" "))}, CTX)["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["metadata"]["generation"] == 4  # SUBMITTED, WORKING, the artifact, INPUT_REQUIRED
    assert {name: n for name, n in store.calls.items() if name in SAVES} == {"save_with_changes": 1}
    first = store.inner.read_events(CTX.scope, task["id"], None, 0)
    assert [e.event_id for e in first] == ["1-0", "2-0", "3-0", "4-0"]
    assert [generation_of(next(iter(e.payload.values()))) for e in first] == [1, 2, 3, 4]

    after = service.send_message({"message": user_message(text("x"), taskId=task["id"])}, CTX)["task"]
    assert after["metadata"]["generation"] == 7
    events = store.inner.read_events(CTX.scope, task["id"], "4-0", 0)
    assert [e.event_id for e in events] == ["5-0", "6-0", "7-0"]
    payloads = [e.payload for e in events]
    assert [next(iter(e)) for e in payloads] == ["statusUpdate", "artifactUpdate", "statusUpdate"]
    assert payloads[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p[next(iter(p))]["metadata"]["generation"] for p in payloads] == [5, 6, 7]
    assert service.get_task({"id": task["id"]}, CTX)["metadata"]["generation"] == 7


def test_a_blocking_send_that_settles_a_new_task_leaves_no_log_a_stream_or_a_keyed_send_does(
    service: A2AService, store: CountingStore
) -> None:
    """Nothing can read the log of a task a plain send created and finished: no event id was issued and a
    terminal task takes no new subscription. A streaming send's log is what a cut stream resumes from, and a
    keyed send's is what its replay reads, so both keep theirs."""
    done = service.send_message({"message": user_message(text("x"))}, CTX)["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED" and done["metadata"]["generation"] == 4
    assert store.inner.read_events(CTX.scope, done["id"], None, 0) == []
    assert store.inner.last_event_id(CTX.scope, done["id"]) is None

    streamed = list(service.send_message_stream({"message": user_message(text("x"))}, CTX))
    task_id = streamed[0]["task"]["id"]
    assert [e.event_id for e in store.inner.read_events(CTX.scope, task_id, None, 0)] == [
        "1-0", "2-0", "3-0", "4-0"
    ]  # fmt: skip

    keyed = CallContext(idempotency_key="one-send")
    task = service.send_message({"message": user_message(text("x"))}, keyed)["task"]
    assert len(store.inner.read_events(CTX.scope, task["id"], None, 0)) == 4
    replayed = list(service.send_message_stream({"message": user_message(text("x"))}, keyed))
    assert [next(iter(e)) for e in replayed] == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]


def test_stream_errors_are_eager(service: A2AService) -> None:
    with pytest.raises(errors.TaskNotFoundError):
        service.send_message_stream({"message": user_message(text("x"), taskId="nope")}, CTX)
    with pytest.raises(errors.TaskNotFoundError):
        service.subscribe_to_task({"id": "nope"}, CTX)


@pytest.mark.parametrize(
    ("failure", "needle"), [(TaskTooLarge("big"), "size limit"), (TaskStoreFull("full"), "full")]
)
def test_store_limits_become_internal_errors(
    service: A2AService, store: CountingStore, failure: Exception, needle: str
) -> None:
    store.fail = failure
    with pytest.raises(errors.InternalError, match=needle):
        service.send_message({"message": user_message(text("x"))}, CTX)


def test_scopes_are_separate(service: A2AService) -> None:
    task = service.send_message({"message": user_message(text("x"))}, CallContext(tenant="a"))["task"]
    with pytest.raises(errors.TaskNotFoundError):
        service.get_task({"id": task["id"]}, CallContext(tenant="b"))
    with pytest.raises(errors.TaskNotFoundError):
        service.get_task({"id": task["id"]}, CallContext(tenant="a", user="someone-else"))
    assert service.get_task({"id": task["id"]}, CallContext(tenant="a"))["id"] == task["id"]


def test_history_length_is_capped(service: A2AService) -> None:
    task = service.send_message({"message": user_message(text("x"))}, CTX)["task"]
    assert service.get_task({"id": task["id"], "historyLength": 10**6}, CTX)["history"]


def test_request_of_rules() -> None:
    assert request_of({"role": "ROLE_USER", "parts": [text("")]}) == {"operation": "create", "thought": ""}
    with pytest.raises(QuinelingError) as caught:
        request_of({"role": "ROLE_USER", "parts": [{"raw": "AAAA"}]})
    assert caught.value.code == "invalid-request"


def test_executor_timestamps_come_from_clock() -> None:
    executor = QuinelingExecutor(clock=lambda: "2026-01-01T00:00:00.000Z")
    pending = executor.prepare_start("t", "c", {"messageId": "m", "role": "ROLE_USER", "parts": [text("x")]})
    outcome = {"operation": "create", "result": {"status": "created", "artifact": {"id": "sha256:abc"}}}
    execution = pending.finish(outcome)
    assert execution.task["status"] == {
        "state": "TASK_STATE_COMPLETED",
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
