"""The task store's event numbering (``TaskStore``, "Event log") and idempotency claims (``KeyClaim``), on every
backend (memory, fakeredis, real Redis)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stores.base import KeyClaim, TaskStore, TaskWrite
from stores.changes import ChangeSet
from stores.errors import ClaimsFull, KeyClaimed, TaskConflict
from tests.conftest import FakeClock

WORKING, COMPLETED = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"


def task(task_id: str, generation: int | None, state: str = WORKING) -> dict[str, Any]:
    body: dict[str, Any] = {"id": task_id, "contextId": "c", "status": {"state": state}}
    if generation is not None:
        body["metadata"] = {"generation": generation}
    return body


def numbers(store: TaskStore, after: str | None = None) -> list[str]:
    return [e.event_id for e in store.read_events("s", "t", after, 0)]


def test_events_are_numbered_by_the_tasks_generation(task_store: TaskStore) -> None:
    task_store.save("s", task("t", 3), [{"n": 1}, {"n": 2}, {"n": 3}], expect_version=0)
    assert numbers(task_store) == ["1-0", "2-0", "3-0"]
    task_store.save("s", task("t", 5), [{"n": 4}, {"n": 5}])
    assert numbers(task_store, "3-0") == ["4-0", "5-0"]
    assert [e.payload for e in task_store.read_events("s", "t", "4-0", 0)] == [{"n": 5}]
    assert task_store.last_event_id("s", "t") == "5-0"


def test_without_a_generation_events_follow_the_newest(task_store: TaskStore) -> None:
    task_store.save("s", task("t", None), [{"n": 1}])
    task_store.save("s", task("t", None), [{"n": 2}, {"n": 3}])
    assert numbers(task_store) == ["1-0", "2-0", "3-0"]


def test_a_number_not_above_the_newest_restarts_the_log(task_store: TaskStore) -> None:
    task_store.save("s", task("t", 4), [{"n": 1}])
    task_store.save("s", task("t", 2), [{"n": 2}])  # an earlier numbering: the log starts again
    assert [(e.event_id, e.payload) for e in task_store.read_events("s", "t", None, 0)] == [("2-0", {"n": 2})]


def test_an_impossible_generation_is_refused_before_anything_is_written(task_store: TaskStore) -> None:
    with pytest.raises(ValueError, match="generation 1"):
        task_store.save("s", task("t", 1), [{"n": 1}, {"n": 2}])
    assert task_store.load("s", "t") is None


def claim(key: str = "k", record: Any = None, ttl: float = 60.0) -> KeyClaim:
    return KeyClaim(key, record if record is not None else {"taskId": "t"}, ttl)


def test_a_claim_is_recorded_with_its_save_and_refuses_a_second(task_store: TaskStore) -> None:
    assert task_store.load_claim("s", "k") is None
    task_store.save(
        "s", task("t", 1), [{"n": 1}], expect_version=0, claim=claim(record={"taskId": "t", "n": 1})
    )
    assert task_store.load_claim("s", "k") == {"taskId": "t", "n": 1}
    with pytest.raises(KeyClaimed) as refused:
        task_store.save("s", task("t2", 1), [{"n": 1}], expect_version=0, claim=claim())
    assert refused.value.record == {"taskId": "t", "n": 1}
    assert task_store.load("s", "t2") is None  # nothing of the refused save was written
    assert task_store.read_events("s", "t2", None, 0) == []
    assert task_store.load_claim("other", "k") is None  # claims are per scope
    task_store.save("other", task("t", 1), [], expect_version=0, claim=claim())


def test_a_version_conflict_is_reported_before_a_claim(task_store: TaskStore) -> None:
    task_store.save("s", task("t", 1), [], claim=claim())
    with pytest.raises(TaskConflict):
        task_store.save("s", task("t", 2), [{"n": 2}], expect_version=99, claim=claim())


def test_claims_lapse_after_their_ttl(task_store: TaskStore, clock: FakeClock) -> None:
    task_store.save("s", task("t", 1), [], claim=claim(ttl=10))
    clock.advance(9.5)
    assert task_store.load_claim("s", "k") is not None
    clock.advance(0.5)
    assert task_store.load_claim("s", "k") is None  # lapsed at its expiry
    task_store.save("s", task("t2", 1), [], claim=claim(record={"taskId": "t2"}, ttl=10))
    assert task_store.load_claim("s", "k") == {"taskId": "t2"}


def test_live_claims_are_bounded_per_partition(
    make_task_store: Callable[..., TaskStore], clock: FakeClock
) -> None:
    store = make_task_store(max_claims=2)
    store.save("p/a", task("t1", 1), [], claim=claim("k1", ttl=10))
    store.save("p/b", task("t2", 1), [], claim=claim("k2", ttl=20))
    with pytest.raises(ClaimsFull):
        store.save("p/a", task("t3", 1), [], claim=claim("k3"))
    assert store.load("p/a", "t3") is None
    store.save("q/a", task("t3", 1), [], claim=claim("k3"))  # another tenant has its own bound
    clock.advance(10)  # k1 lapses: its room is free again
    store.save("p/a", task("t3", 1), [], claim=claim("k3"))
    assert store.load_claim("p/a", "k1") is None and store.load_claim("p/a", "k3") is not None


def test_a_claim_commits_with_a_change_set_or_not_at_all(backend: Any, task_store: TaskStore) -> None:
    state = backend.state_store()
    write = TaskWrite(task_store, "s/u", task("t", 1), ({"n": 1},), 0, claim("k"))
    state.commit("s", ChangeSet(expect={("doc", "d"): 0}, put={("doc", "d"): {"v": 1}}), task=write)
    assert task_store.load_claim("s/u", "k") == {"taskId": "t"}
    again = TaskWrite(task_store, "s/u", task("t2", 1), ({"n": 1},), 0, claim("k"))
    with pytest.raises(KeyClaimed):
        state.commit("s", ChangeSet(put={("doc", "e"): {"v": 1}}), task=again)
    assert state.read("s", [("doc", "e")])[("doc", "e")].value is None  # the change set did not commit
    assert task_store.load("s/u", "t2") is None
