"""``Runtime.dispatch(…, attach=…)``: every outcome is committed together with the write built from it.

The runtime sees the write as an opaque object it hands to the store; here it is a plain
:class:`stores.base.TaskWrite` of a task store on the same memory backend, and the "task" just records which
outcome it was built from.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from quineling import QuinelingError, Runtime
from quineling.a2a.task_facts import describe_task
from quineling.runtime.context import Env, RuntimeLimits
from stores import ChangeSet, MemoryBackend, TaskConflict, TaskStore
from stores.base import TaskWrite

SQUARES = "[2,3,4] | square | sum | report total"
SCOPE = "acme"


class Recorder:
    """An ``attach`` callback: builds a task naming the outcome, and remembers every outcome it was given."""

    def __init__(self, tasks: TaskStore, expect: int | None = None, before_commit: Any = None) -> None:
        self.tasks = tasks
        self.expect = expect
        self.before_commit = before_commit
        self.outcomes: list[Any] = []

    def __call__(self, outcome: Any) -> TaskWrite:
        self.outcomes.append(outcome)
        if self.before_commit is not None:
            rival, self.before_commit = self.before_commit, None
            rival()
        if isinstance(outcome, QuinelingError):
            body = {"id": "t", "status": {"state": "TASK_STATE_FAILED"}, "error": outcome.code}
        else:
            body = {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "op": outcome["operation"]}
        return TaskWrite(self.tasks, f"{SCOPE}/user", body, ({"n": len(self.outcomes)},), self.expect)

    def stored(self) -> dict[str, Any] | None:
        return self.tasks.load(f"{SCOPE}/user", "t")


@pytest.fixture
def backend() -> MemoryBackend:
    return MemoryBackend()


def runtime(backend: MemoryBackend, **limits: int) -> Runtime:
    counter = itertools.count(1)
    env = Env(limits=RuntimeLimits(**limits), new_record_id=lambda: f"rec_{next(counter):032x}")
    return Runtime(store=backend.state_store(), env=env, scope=SCOPE)


def state(backend: MemoryBackend) -> Any:
    data = backend.state_store().data
    return dict(data.documents.get(SCOPE, {})), dict(data.counters.get(SCOPE, {}))


def test_a_committed_outcome_carries_its_write(backend: MemoryBackend) -> None:
    rt, attach = runtime(backend), Recorder(backend.task_store(describe=describe_task))
    outcome = rt.dispatch({"operation": "create", "thought": SQUARES}, attach=attach)
    assert attach.outcomes == [outcome]
    assert attach.stored() == {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "op": "create"}
    assert state(backend)[1]["artifacts"] == 1


@pytest.mark.parametrize(
    "request_",
    [
        {"operation": "inspect", "artifactId": "sha256:" + "0" * 64},  # a refusal from the handler
        {"operation": "nope"},  # refused before any read
        {"thought": "no operation"},
    ],
    ids=["not-found", "unknown-operation", "invalid-request"],
)
def test_an_error_commits_its_write_alone(backend: MemoryBackend, request_: dict[str, Any]) -> None:
    rt, attach = runtime(backend), Recorder(backend.task_store(describe=describe_task))
    with pytest.raises(QuinelingError) as caught:
        rt.dispatch(request_, attach=attach)
    assert attach.outcomes == [caught.value]
    assert attach.stored()["error"] == caught.value.code
    assert state(backend) == ({}, {})


def test_a_read_only_outcome_commits_its_write_alone(backend: MemoryBackend) -> None:
    rt = runtime(backend)
    artifact = rt.dispatch({"operation": "create", "thought": SQUARES}, scope=SCOPE)["result"]["artifact"]
    before = state(backend)
    attach = Recorder(backend.task_store(describe=describe_task))
    rt.dispatch({"operation": "inspect", "artifactId": artifact["id"]}, attach=attach)
    assert attach.stored()["op"] == "inspect"
    assert state(backend) == before


def test_capacity_refusal_replaces_the_outcome_write_with_the_error_write(backend: MemoryBackend) -> None:
    rt = runtime(backend, max_artifacts=1)
    rt.dispatch({"operation": "create", "thought": SQUARES})
    before = state(backend)
    attach = Recorder(backend.task_store(describe=describe_task))
    with pytest.raises(QuinelingError, match="capacity"):
        rt.dispatch({"operation": "create", "thought": "[5] | sum | report other"}, attach=attach)
    assert [type(o).__name__ for o in attach.outcomes] == ["dict", "QuinelingError"]
    assert attach.stored()["error"] == "resource-limit"
    assert state(backend) == before


def test_a_conflict_recomputes_and_rebuilds_the_write(backend: MemoryBackend) -> None:
    rt = runtime(backend)
    rival = lambda: rt.dispatch({"operation": "create", "thought": SQUARES})  # noqa: E731 - same artifact
    attach = Recorder(backend.task_store(describe=describe_task), before_commit=rival)
    outcome = rt.dispatch({"operation": "create", "thought": SQUARES}, attach=attach)
    assert len(attach.outcomes) == 2 and attach.outcomes[-1] == outcome  # the first commit conflicted
    assert attach.stored()["op"] == "create"
    assert state(backend)[1]["artifacts"] == 1  # the recomputation found the rival's artifact


def test_a_refused_write_commits_nothing_of_the_runtime(backend: MemoryBackend) -> None:
    tasks = backend.task_store(describe=describe_task)
    tasks.save(f"{SCOPE}/user", {"id": "t", "status": {"state": "TASK_STATE_WORKING"}})
    rt, attach = runtime(backend), Recorder(tasks, expect=0)  # "t" exists: the save conflicts
    with pytest.raises(TaskConflict):
        rt.dispatch({"operation": "create", "thought": SQUARES}, attach=attach)
    assert state(backend) == ({}, {})
    assert tasks.load(f"{SCOPE}/user", "t")["status"]["state"] == "TASK_STATE_WORKING"


def test_a_refusal_read_in_two_round_trips_is_rechecked_in_its_write_commit(backend: MemoryBackend) -> None:
    """The torn-read recheck rides along the write: a refusal whose reads straddled another commit is
    recomputed (and its write rebuilt), never answered from two states."""
    from quineling.runtime.operations import Operation

    rt = runtime(backend)
    state_store = backend.state_store()
    flag, other = ("doc", "flag"), ("doc", "other")
    state_store.commit(SCOPE, ChangeSet(expect={flag: 0}, put={flag: {"v": 1}}))
    rivals = [lambda: state_store.commit(SCOPE, ChangeSet(expect={flag: 1}, put={flag: {"v": 2}}))]

    def handler(args: dict[str, Any], view: Any, env: Any) -> Any:
        seen = view.get(*flag)["v"]
        if rivals:
            rivals.pop()()  # another worker commits between this request's two reads
        view.get(*other)
        raise QuinelingError("conflict", f"refused at flag {seen}")

    rt.operations = {**rt.operations, "probe": Operation("probe", lambda request, path: request, handler)}
    attach = Recorder(backend.task_store(describe=describe_task))
    with pytest.raises(QuinelingError, match="refused at flag 2"):
        rt.dispatch({"operation": "probe"}, attach=attach)
    assert [o.message for o in attach.outcomes] == ["refused at flag 1", "refused at flag 2"]
    assert attach.stored()["error"] == "conflict"
