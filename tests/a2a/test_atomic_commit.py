"""One atomic commit per SendMessage: the runtime's change set and the task are stored together or not at all.

Runs on every backend (memory, fakeredis, real Redis) with the real runtime. The failures are injected
after the runtime has computed its change set — at the moment the runtime asks for the task write — and
make the task half of the commit fail (too large, or a rival's save in between): the runtime's state must
then be exactly as before (docs/decisions/0004-one-atomic-commit-per-request.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from quineling.a2a import errors
from quineling.a2a.context import CallContext
from quineling.a2a.service import A2AService
from quineling.a2a.task_facts import describe_task
from quineling.runtime.runtime import Runtime
from stores import Backend, MemoryBackend, TaskLimits, TaskStore
from stores.redis import keys
from tests.a2a.conftest import text, user_message

CTX = CallContext(tenant="acme", user="alice")
NEW_ARTIFACT = "[2,3,4] | square | sum | report total"
COMPLETED, INPUT, CANCELED = "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"


class RivalBeforeCommit:
    """The real runtime, but ``rival()`` runs when the runtime asks for its task write — after computing
    the change set, right before the combined commit."""

    def __init__(self, runtime: Runtime) -> None:
        self.inner = runtime
        self.store = runtime.store
        self.rival: Callable[[], Any] | None = None

    def dispatch(self, request: Any, *, scope: str | None = None, attach: Any = None) -> Any:
        def racing(outcome: Any) -> Any:
            rival, self.rival = self.rival, None
            if rival is not None:
                rival()
            return attach(outcome)

        return self.inner.dispatch(request, scope=scope, attach=None if attach is None else racing)


def runtime_state(backend: Backend) -> Any:
    """Every runtime document, version and counter of the tenant, read raw from the backend."""
    if isinstance(backend, MemoryBackend):
        data = backend.state_store().data
        return [
            dict(table.get(CTX.partition, {})) for table in (data.documents, data.versions, data.counters)
        ]
    client = backend.connection.client  # type: ignore[attr-defined]
    build = (keys.documents, keys.versions, keys.counters)
    return [client.hgetall(key(backend.prefix, CTX.partition)) for key in build]  # type: ignore[attr-defined]


def make_service(backend: Backend, **limits: Any) -> tuple[A2AService, RivalBeforeCommit, TaskStore]:
    runtime = RivalBeforeCommit(Runtime(store=backend.state_store()))
    tasks = backend.task_store(TaskLimits(**limits), describe=describe_task)
    service = A2AService(runtime, tasks, lambda _version: {})
    return service, runtime, tasks


def send(service: A2AService, thought: str, **extra: Any) -> dict[str, Any]:
    return service.send_message({"message": user_message(text(thought), **extra)}, CTX)["task"]


def test_the_runtime_scope_is_the_tenant(backend: Backend) -> None:
    service, _, tasks = make_service(backend)
    task = send(service, NEW_ARTIFACT)
    assert task["status"]["state"] == COMPLETED
    assert backend.state_store().counters("acme", ["artifacts"]) == {"artifacts": 1}
    assert backend.state_store().counters("default", ["artifacts"]) == {"artifacts": 0}
    assert tasks.load(CTX.scope, task["id"]) is not None


def test_a_task_too_large_to_save_leaves_the_runtime_state_unchanged(backend: Backend) -> None:
    """The create computed a new artifact; its completed task does not fit: neither is stored."""
    service, _, tasks = make_service(backend, max_task_bytes=1500)
    before = runtime_state(backend)
    with pytest.raises(errors.InternalError, match="per-task size limit"):
        send(service, NEW_ARTIFACT)
    assert runtime_state(backend) == before
    assert backend.state_store().counters("default", ["artifacts"]) == {"artifacts": 0}  # nor elsewhere
    assert tasks.list(CTX.scope, _all()).total_size == 0


def test_a_follow_up_losing_to_a_cancel_commits_nothing(backend: Backend) -> None:
    service, runtime, tasks = make_service(backend)
    paused = send(service, "   ")
    assert paused["status"]["state"] == INPUT
    before = runtime_state(backend)
    runtime.rival = lambda: service.cancel_task({"id": paused["id"]}, CTX)
    with pytest.raises(errors.InternalError) as caught:
        send(service, NEW_ARTIFACT, taskId=paused["id"])
    assert "committed nothing" in caught.value.message
    assert caught.value.metadata["taskState"] == CANCELED
    assert runtime_state(backend) == before  # the artifact computed for the lost follow-up is not stored
    assert tasks.load(CTX.scope, paused["id"])["status"]["state"] == CANCELED


def test_a_follow_up_losing_to_a_still_paused_task_is_dispatched_again(backend: Backend) -> None:
    """Nothing of the first attempt was committed, so the message is applied — and dispatched — afresh."""
    service, runtime, tasks = make_service(backend)
    paused = send(service, "   ")
    runtime.rival = lambda: send(service, "   ", taskId=paused["id"])  # asks for clarification again
    done = send(service, NEW_ARTIFACT, taskId=paused["id"])
    assert done["status"]["state"] == COMPLETED
    assert backend.state_store().counters(CTX.partition, ["artifacts"]) == {"artifacts": 1}
    users = [m for m in tasks.load(CTX.scope, paused["id"])["history"] if m["role"] == "ROLE_USER"]
    assert len(users) == 3  # the first message, the rival's, then ours


def _all() -> Any:
    from stores import TaskQuery

    return TaskQuery(page_size=100)
