"""Conformance of the combined commit: a change set and a task save as one all-or-nothing store step.

``StateStore.commit(scope, changes, task=TaskWrite(...))`` must write both
halves or neither. Every failure test compares the backend's *raw* stored state (every dict of the memory
store, every Redis key under the prefix) before and after, so a half-applied write cannot hide behind the
public read API.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from stores import (
    Backend,
    ChangeSet,
    ConflictError,
    MemoryBackend,
    Quota,
    QuotaExceeded,
    TaskConflict,
    TaskLimits,
    TaskStore,
    TaskStoreFull,
    TaskTooLarge,
    Versioned,
)
from stores.base import TaskWrite
from tests.support.redis_keys import snapshot

WORKING, COMPLETED = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
DOC = ("artifact", "a")
SCOPE, TASKS = "acme", "acme/alice"  # the state scope and a task scope of the same tenant


def commit_with_task(backend: Backend, scope: str, changes: ChangeSet, write: TaskWrite) -> int:
    """The state commit with a task attached; returns the task's new version."""
    version = backend.state_store().commit(scope, changes, task=write)
    assert version is not None
    return version


def task(task_id: str, state: str = COMPLETED, **more: Any) -> dict[str, Any]:
    return {
        "id": task_id,
        "contextId": "ctx",
        "status": {"state": state, "timestamp": "2026-01-01T00:00:00Z"},
        **more,
    }


def raw(backend: Backend) -> Any:
    """Everything the backend stores, as plain comparable data."""
    if isinstance(backend, MemoryBackend):
        data = backend._data
        with data.lock:
            return copy.deepcopy(
                (
                    data.documents,
                    data.versions,
                    data.counters,
                    {p: dict(tasks) for p, tasks in data.tasks.items()},
                    data.events,
                    data.next_sequence,
                    data.next_task_version,
                    {s: (x.expiries, x.owners, x.dependents, x.holds) for s, x in data.leases.items()},
                    data.floors,
                )
            )
    return snapshot(backend.connection.client, backend.prefix)  # type: ignore[attr-defined]


@pytest.fixture
def tasks(backend: Backend, clock: Any) -> TaskStore:
    return backend.task_store(
        TaskLimits(max_tasks=3, max_total_bytes=4000, max_task_bytes=1000),
        clock=clock,
        describe=describe_task,
    )


def write(tasks: TaskStore, body: dict[str, Any], expect: int | None = 0, scope: str = TASKS) -> TaskWrite:
    return TaskWrite(tasks, scope, body, ({"event": body["id"]},), expect)


def create_doc(value: dict[str, Any], quota: int = 5) -> ChangeSet:
    return ChangeSet(expect={DOC: 0}, put={DOC: value}, quotas=(Quota("artifacts", 1, quota),))


def test_success_writes_the_change_set_and_the_task(backend: Backend, tasks: TaskStore) -> None:
    version = commit_with_task(backend, SCOPE, create_doc({"n": 1}), write(tasks, task("t1", WORKING)))
    state = backend.state_store()
    assert state.read(SCOPE, [DOC])[DOC] == Versioned({"n": 1}, 1)
    assert state.counters(SCOPE, ["artifacts"]) == {"artifacts": 1}
    assert tasks.load_versioned(TASKS, "t1") == Versioned(task("t1", WORKING), version)
    assert [e.payload for e in tasks.read_events(TASKS, "t1", None, 0)] == [{"event": "t1"}]
    # The state commit's return value through StateStore.commit is the same task version.
    again = state.commit(
        SCOPE, ChangeSet(expect={DOC: 1}, put={DOC: {"n": 2}}), task=write(tasks, task("t1"), version)
    )
    assert again is not None and again > version
    assert tasks.load_versioned(TASKS, "t1").version == again


def test_an_empty_change_set_with_a_task_is_a_plain_save(backend: Backend, tasks: TaskStore) -> None:
    version = backend.state_store().commit(SCOPE, ChangeSet(), task=write(tasks, task("t1")))
    assert tasks.load_versioned(TASKS, "t1").version == version


FailureSetup = Callable[[Backend, TaskStore], tuple[ChangeSet, TaskWrite]]


def _stale_state(backend: Backend, tasks: TaskStore) -> tuple[ChangeSet, TaskWrite]:
    return ChangeSet(expect={DOC: 0}, put={DOC: {"n": 9}}), write(tasks, task("new"))


def _quota(backend: Backend, tasks: TaskStore) -> tuple[ChangeSet, TaskWrite]:
    return ChangeSet(expect={DOC: 1}, put={DOC: {"n": 9}}, quotas=(Quota("artifacts", 1, 1),)), write(
        tasks, task("new")
    )


def _too_large(backend: Backend, tasks: TaskStore) -> tuple[ChangeSet, TaskWrite]:
    return ChangeSet(expect={DOC: 1}, put={DOC: {"n": 9}}), write(tasks, task("new", pad="x" * 2000))


def _task_conflict(backend: Backend, tasks: TaskStore) -> tuple[ChangeSet, TaskWrite]:
    return ChangeSet(expect={DOC: 1}, put={DOC: {"n": 9}}), write(tasks, task("old"), expect=0)


def _full(backend: Backend, tasks: TaskStore) -> tuple[ChangeSet, TaskWrite]:
    # Three active tasks fill the tenant (max 3): nothing can be evicted for a fourth.
    tasks.save(TASKS, task("old", WORKING))
    for i in range(2):
        tasks.save(TASKS, task(f"busy{i}", WORKING))
    return ChangeSet(expect={DOC: 1}, put={DOC: {"n": 9}}), write(tasks, task("new", WORKING))


@pytest.mark.parametrize(
    ("setup", "error"),
    [
        (_stale_state, ConflictError),
        (_quota, QuotaExceeded),
        (_too_large, TaskTooLarge),
        (_task_conflict, TaskConflict),
        (_full, TaskStoreFull),
    ],
    ids=["state-conflict", "quota", "task-too-large", "task-conflict", "task-store-full"],
)
def test_every_refusal_writes_neither_half(
    backend: Backend, tasks: TaskStore, setup: FailureSetup, error: type[Exception]
) -> None:
    commit_with_task(backend, SCOPE, create_doc({"n": 1}, quota=5), write(tasks, task("old")))
    changes, attached = setup(backend, tasks)
    before = raw(backend)
    with pytest.raises(error):
        commit_with_task(backend, SCOPE, changes, attached)
    assert raw(backend) == before


def test_state_refusals_are_reported_before_task_refusals(backend: Backend, tasks: TaskStore) -> None:
    """The runtime recomputes on a state conflict and fails the request on a quota; both decide what task
    is written, so they come first (see StateStore.commit)."""
    commit_with_task(backend, SCOPE, create_doc({"n": 1}, quota=1), write(tasks, task("old")))
    huge_and_conflicting = write(tasks, task("old", pad="x" * 2000), expect=0)
    with pytest.raises(ConflictError):
        commit_with_task(backend, SCOPE, ChangeSet(expect={DOC: 0}, put={DOC: {}}), huge_and_conflicting)
    over_quota = ChangeSet(expect={DOC: 1}, put={DOC: {}}, quotas=(Quota("artifacts", 1, 1),))
    with pytest.raises(QuotaExceeded):
        commit_with_task(backend, SCOPE, over_quota, huge_and_conflicting)
    with pytest.raises(TaskTooLarge):  # size before version, as for a plain save
        commit_with_task(backend, SCOPE, ChangeSet(expect={DOC: 1}), huge_and_conflicting)


def test_eviction_rides_along_only_a_successful_commit(
    backend: Backend, tasks: TaskStore, clock: Any
) -> None:
    for name in ("done1", "done2", "done3"):
        tasks.save(TASKS, task(name))
        clock.advance(1)
    at_quota = ChangeSet(expect={DOC: 0}, put={DOC: {}}, quotas=(Quota("artifacts", 1, 0),))
    before = raw(backend)
    with pytest.raises(QuotaExceeded):  # would have evicted done1: the refusal keeps it
        commit_with_task(backend, SCOPE, at_quota, write(tasks, task("new")))
    assert raw(backend) == before
    commit_with_task(backend, SCOPE, create_doc({}), write(tasks, task("new")))
    assert [tasks.load(TASKS, t) is not None for t in ("done1", "done2", "done3", "new")] == [
        False,
        True,
        True,
        True,
    ]
    assert backend.state_store().read(SCOPE, [DOC])[DOC].version == 1


def test_capacity_is_the_tenants_own(backend: Backend, tasks: TaskStore) -> None:
    """Another tenant's tasks are never evicted to admit this tenant's commit."""
    for i in range(3):
        tasks.save("other/bob", task(f"theirs{i}"))
    for i in range(3):
        commit_with_task(backend, SCOPE, ChangeSet(), write(tasks, task(f"mine{i}", WORKING)))
    with pytest.raises(TaskStoreFull):
        commit_with_task(backend, SCOPE, create_doc({}), write(tasks, task("one-more", WORKING)))
    assert all(tasks.load("other/bob", f"theirs{i}") for i in range(3))
    assert backend.state_store().read(SCOPE, [DOC])[DOC].value is None


def test_the_task_must_belong_to_the_committing_tenant(backend: Backend, tasks: TaskStore) -> None:
    """One atomic step is one slot: a task of another tenant cannot ride along."""
    with pytest.raises(ValueError, match="partition"):
        commit_with_task(backend, SCOPE, create_doc({}), write(tasks, task("t"), scope="other/alice"))
    assert backend.state_store().read(SCOPE, [DOC])[DOC].value is None


def test_the_task_store_must_be_of_the_same_backend(backend: Backend, make_backend: Any) -> None:
    foreign = (
        make_backend(prefix="elsewhere").task_store(describe=describe_task)
        if make_backend.shared
        else MemoryBackend().task_store(describe=describe_task)
    )
    with pytest.raises(ValueError, match="same"):
        commit_with_task(backend, SCOPE, create_doc({}), write(foreign, task("t")))


def test_a_combined_commit_is_one_round_trip(backend: Backend, tasks: TaskStore) -> None:
    before = backend.round_trips()
    commit_with_task(backend, SCOPE, create_doc({}), write(tasks, task("t")))
    assert backend.round_trips() - before == (0 if isinstance(backend, MemoryBackend) else 1)
