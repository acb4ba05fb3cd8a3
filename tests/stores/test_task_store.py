"""TaskStore conformance: capacity, eviction, expiry, events. Every backend in BACKENDS must pass these."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from stores import (
    Backend,
    MemoryBackend,
    RedisBackend,
    StoreError,
    TaskConflict,
    TaskLimits,
    TaskStore,
    TaskStoreFull,
    TaskTooLarge,
    Versioned,
)
from tests.support.redis_keys import snapshot

WORKING, COMPLETED, INPUT = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"


def task(
    task_id: str, state: str = COMPLETED, ts: Any = "2026-01-01T00:00:00Z", ctx: str = "ctx", **more: Any
):
    status: dict[str, Any] = {"state": state}
    if ts is not None:
        status["timestamp"] = ts
    return {"id": task_id, "contextId": ctx, "status": status, **more}


def ids(store: TaskStore, scope: str, candidates: list[str]) -> list[str]:
    return [t for t in candidates if store.load(scope, t) is not None]


def test_save_and_load(task_store: TaskStore) -> None:
    assert task_store.load("s", "t1") is None
    task_store.save("s", task("t1", history=[{"text": "héllo"}]))
    assert task_store.load("s", "t1") == task("t1", history=[{"text": "héllo"}])
    task_store.save("s", task("t1", WORKING))
    assert task_store.load("s", "t1")["status"]["state"] == WORKING


def test_tasks_are_scoped(task_store: TaskStore) -> None:
    task_store.save("alice", task("t1"))
    assert task_store.load("bob", "t1") is None
    task_store.save("bob", task("t1", WORKING))
    assert task_store.load("alice", "t1")["status"]["state"] == COMPLETED


def test_no_shared_references(task_store: TaskStore) -> None:
    original = task("t1", history=[1])
    task_store.save("s", original)
    original["history"].append(2)
    loaded = task_store.load("s", "t1")
    loaded["history"].append(3)
    assert task_store.load("s", "t1")["history"] == [1]


# --- shared reads (load_shared): kept by version, never served once the task changed ---------------------


def test_a_shared_read_is_kept_by_version_and_follows_every_save(make_task_store) -> None:
    """Two stores over one backend (two workers): the reader keeps what it decoded and answers the same
    version with it again, but a save by the other, a removal and a new task under the reused id are seen
    at once, each with the version load_versioned reports."""
    reader, writer = make_task_store(), make_task_store()
    writer.save("s", task("t1", WORKING, history=[{"n": 1}]))
    first = reader.load_shared("s", "t1")
    assert first == reader.load_versioned("s", "t1")
    assert reader.load_shared("s", "t1").value is first.value  # kept: not decoded again
    writer.save("s", task("t1", COMPLETED, history=[{"n": 1}, {"n": 2}]))
    second = reader.load_shared("s", "t1")
    assert second == reader.load_versioned("s", "t1") and second.version > first.version
    assert second.value["history"] == [{"n": 1}, {"n": 2}]
    assert first.value["history"] == [{"n": 1}]  # what was handed out earlier is left as it was


def test_a_shared_read_of_an_evicted_task_finds_nothing_and_a_reused_id_is_the_new_task(
    make_task_store, clock
) -> None:
    reader, writer = make_task_store(max_tasks=1), make_task_store(max_tasks=1)
    writer.save("s", task("t1", history=[{"n": "old"}]))
    assert reader.load_shared("s", "t1").value is not None
    clock.advance(1)
    writer.save("s", task("t2"))  # evicts t1
    assert reader.load_shared("s", "t1") == Versioned(None, 0)
    clock.advance(1)
    writer.save("s", task("t1", history=[{"n": "new"}]))  # evicts t2; t1 again, at a new version
    assert reader.load_shared("s", "t1").value["history"] == [{"n": "new"}]


def test_shared_reads_are_scoped(make_task_store) -> None:
    reader, writer = make_task_store(), make_task_store()
    writer.save("alice", task("t1", ctx="alice's"))
    assert reader.load_shared("alice", "t1").value["contextId"] == "alice's"
    assert reader.load_shared("bob", "t1") == Versioned(None, 0)
    writer.save("bob", task("t1", ctx="bob's"))
    assert reader.load_shared("bob", "t1").value["contextId"] == "bob's"
    assert reader.load_shared("alice", "t1").value["contextId"] == "alice's"


def test_eviction_takes_the_oldest_last_update_first(make_task_store, clock) -> None:
    """At capacity the terminal/paused task updated longest ago goes, not the one admitted first."""
    store = make_task_store(max_tasks=3)
    for name in ("a", "b", "c"):
        store.save("s", task(name))
        clock.advance(1)
    store.save("s", task("a", INPUT))  # a is now the most recently updated
    clock.advance(1)
    store.save("s", task("d"))
    assert ids(store, "s", ["a", "b", "c", "d"]) == ["a", "c", "d"]
    clock.advance(1)
    store.save("s", task("e", WORKING))
    assert ids(store, "s", ["a", "b", "c", "d", "e"]) == ["a", "d", "e"]


def test_eviction_spans_the_users_of_one_tenant(make_task_store, clock) -> None:
    """Capacity is per tenant: a full tenant evicts another user's finished task of the same tenant."""
    store = make_task_store(max_tasks=2)
    store.save("acme/bob", task("old"))
    clock.advance(1)
    store.save("acme/alice", task("mine", WORKING))
    clock.advance(1)
    store.save("acme/alice", task("new", WORKING))
    assert store.load("acme/bob", "old") is None
    assert store.load("acme/alice", "mine") and store.load("acme/alice", "new")


def test_one_tenant_never_evicts_another_tenants_tasks(make_task_store, clock) -> None:
    """Each tenant has the whole capacity to itself: a full tenant evicts its own tasks or is refused."""
    store = make_task_store(max_tasks=2)
    store.save("other/bob", task("theirs"))
    clock.advance(1)
    store.save("acme/alice", task("mine", WORKING))
    store.save("acme/alice", task("also-mine", WORKING))
    with pytest.raises(TaskStoreFull):
        store.save("acme/alice", task("one-too-many", WORKING))
    assert store.load("other/bob", "theirs") is not None
    store.save("other/bob", task("second"))  # the other tenant still has room of its own
    assert store.load("other/bob", "theirs") and store.load("other/bob", "second")


def test_active_tasks_are_never_evicted(make_task_store, clock) -> None:
    store = make_task_store(max_tasks=3)
    store.save("s", task("w1", WORKING))
    clock.advance(1)
    store.save("s", task("w2", "TASK_STATE_SUBMITTED"))
    clock.advance(1)
    store.save("s", task("done"))
    clock.advance(1)
    store.save("s", task("w3", WORKING))
    assert ids(store, "s", ["w1", "w2", "done", "w3"]) == ["w1", "w2", "w3"]


def test_save_into_a_store_full_of_active_tasks_changes_nothing(make_task_store, clock) -> None:
    store = make_task_store(max_tasks=2)
    store.save("s", task("w1", WORKING), [{"n": 1}])
    store.save("s", task("w2", WORKING))
    with pytest.raises(TaskStoreFull):
        store.save("s", task("w3", COMPLETED), [{"n": 2}])
    assert ids(store, "s", ["w1", "w2", "w3"]) == ["w1", "w2"]
    assert store.last_event_id("s", "w3") is None
    # Replacing a retained task needs no room and still works.
    store.save("s", task("w1", COMPLETED))
    assert store.load("s", "w1")["status"]["state"] == COMPLETED


def size(value: dict) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_eviction_is_committed_only_if_the_task_then_fits(make_task_store, clock) -> None:
    """If evicting every eligible task would still not make room, none of them is evicted."""
    done, busy, huge = (
        task("done", pad="x" * 100),
        task("busy", WORKING, pad="x" * 300),
        task("huge", WORKING),
    )
    store = make_task_store(max_tasks=10, max_total_bytes=size(done) + size(busy) + size(huge) - 1)
    store.save("s", done)
    clock.advance(1)
    store.save("s", busy)
    huge["pad"] = "x" * (size(done) + 100)
    with pytest.raises(TaskStoreFull):
        store.save("s", huge)
    assert ids(store, "s", ["done", "busy", "huge"]) == ["done", "busy"]


def test_byte_capacity_evicts_until_the_task_fits(make_task_store, clock) -> None:
    small = [task(name, pad="x" * 150) for name in ("a", "b", "c")]
    big = task("big", WORKING, pad="x" * 300)
    store = make_task_store(max_tasks=10, max_total_bytes=size(small[1]) + size(small[2]) + size(big))
    for value in small:
        store.save("s", value)
        clock.advance(1)
    store.save("s", big)
    assert ids(store, "s", ["a", "b", "c", "big"]) == ["b", "c", "big"]


def test_eviction_can_take_many_victims_for_one_save(make_task_store, clock) -> None:
    """One large save may need more victims than a backend examines at once (Redis pages by 16)."""
    names = [f"t{i:02d}" for i in range(40)]
    small = [task(name, pad="x" * 100) for name in names]
    big = task("big", WORKING, pad="x" * (35 * size(small[0])))
    store = make_task_store(max_tasks=100, max_total_bytes=5 * size(small[0]) + size(big))
    for value in small:
        store.save("s", value)
        clock.advance(1)
    store.save("s", big)
    assert ids(store, "s", [*names, "big"]) == [*names[-5:], "big"]


def test_growing_a_task_in_place_counts_only_its_new_size(make_task_store) -> None:
    store = make_task_store(max_tasks=10, max_total_bytes=size(task("a", WORKING, pad="x" * 300)))
    store.save("s", task("a", WORKING, pad="x" * 100))
    store.save("s", task("a", WORKING, pad="x" * 300))
    with pytest.raises(TaskStoreFull):
        store.save("s", task("a", WORKING, pad="x" * 301))
    assert len(store.load("s", "a")["pad"]) == 300


def test_too_large_task_is_refused_and_changes_nothing(make_task_store) -> None:
    store = make_task_store(max_task_bytes=200)
    store.save("s", task("t", WORKING))
    with pytest.raises(TaskTooLarge):
        store.save("s", task("t", COMPLETED, pad="x" * 300), [{"n": 1}])
    assert store.load("s", "t") == task("t", WORKING)
    assert store.last_event_id("s", "t") is None


def test_paused_tasks_expire_after_the_ttl(make_task_store, clock) -> None:
    store = make_task_store(paused_ttl_seconds=60)
    store.save("s", task("paused", INPUT))
    store.save("s", task("auth", "TASK_STATE_AUTH_REQUIRED"))
    store.save("s", task("busy", WORKING))
    store.save("s", task("done"))
    clock.advance(59)
    assert store.load("s", "paused") is not None  # polling ...
    clock.advance(1)
    assert store.load("s", "paused") is None  # ... did not extend its life
    assert ids(store, "s", ["auth", "busy", "done"]) == ["busy", "done"]


def test_an_update_restarts_the_paused_clock(make_task_store, clock) -> None:
    store = make_task_store(paused_ttl_seconds=60)
    store.save("s", task("p", INPUT))
    clock.advance(50)
    store.save("s", task("p", INPUT, history=[1]))
    clock.advance(50)
    assert store.load("s", "p") is not None


def test_expiry_is_lazy_on_list_and_save(make_task_store, clock) -> None:
    store = make_task_store(paused_ttl_seconds=60, max_tasks=2)
    store.save("s", task("p", INPUT))
    store.save("s", task("w", WORKING))
    clock.advance(61)
    assert [t["id"] for t in store.list("s", _query()).tasks] == ["w"]
    store.save("s", task("w2", WORKING))  # room was freed by expiry, not by evicting active work
    assert ids(store, "s", ["p", "w", "w2"]) == ["w", "w2"]


def test_an_expired_id_saved_again_is_a_new_task(make_task_store, clock) -> None:
    store = make_task_store(paused_ttl_seconds=60)
    store.save("s", task("p", INPUT), [{"n": 1}])
    clock.advance(60)
    store.save("s", task("p", WORKING), [{"n": 2}])
    assert [e.payload for e in store.read_events("s", "p", None, 0)] == [{"n": 2}]


def _query(**fields: Any):
    from stores import TaskQuery

    return TaskQuery(**fields)


# ---- event log ----


def test_events_are_appended_in_order_and_read_after_a_position(task_store: TaskStore) -> None:
    assert task_store.last_event_id("s", "t") is None
    assert task_store.read_events("s", "t", None, 0) == []
    task_store.save("s", task("t", WORKING), [{"n": 1}, {"n": 2}])
    task_store.save("s", task("t", COMPLETED), [{"n": 3}])
    events = task_store.read_events("s", "t", None, 0)
    assert [e.payload for e in events] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert len({e.event_id for e in events}) == 3
    assert task_store.last_event_id("s", "t") == events[-1].event_id
    later = task_store.read_events("s", "t", events[0].event_id, 0)
    assert [e.payload for e in later] == [{"n": 2}, {"n": 3}]
    assert task_store.read_events("s", "t", events[-1].event_id, 0) == []
    assert task_store.read_events("other", "t", None, 0) == []


def _streams(backend: Backend) -> set[str]:
    """The task event logs the backend holds: (scope, id) refs in memory, stream key names in Redis."""
    if isinstance(backend, MemoryBackend):
        with backend._data.lock:
            return {"/".join(ref) for ref in backend._data.events}
    assert isinstance(backend, RedisBackend)
    streams = {
        key.decode() for key in snapshot(backend.connection.client, backend.prefix) if b":events:" in key
    }
    return {key.rpartition(":events:")[2] for key in streams}


def test_an_evicted_or_expired_task_takes_its_event_log_with_it(backend: Backend, clock) -> None:
    store = backend.task_store(
        TaskLimits(max_tasks=2, paused_ttl_seconds=60), clock=clock, describe=describe_task
    )
    store.save("s", task("old"), [{"n": 1}])
    clock.advance(1)
    store.save("s", task("paused", INPUT), [{"n": 1}])
    clock.advance(1)
    store.save("s", task("new"), [{"n": 1}])  # evicts "old", updated longest ago
    assert store.load("s", "old") is None and store.read_events("s", "old", None, 0) == []
    clock.advance(60)
    assert store.load("s", "paused") is None  # expired
    assert store.read_events("s", "paused", None, 0) == [] and store.last_event_id("s", "paused") is None
    assert _streams(backend) == {"s/new"}


def test_blocking_read_times_out_empty(task_store: TaskStore) -> None:
    task_store.save("s", task("t", WORKING), [{"n": 1}])
    last = task_store.last_event_id("s", "t")
    started = time.monotonic()
    assert task_store.read_events("s", "t", last, 0.3) == []
    assert 0.25 <= time.monotonic() - started < 3


def test_blocking_read_wakes_when_an_event_arrives(task_store: TaskStore) -> None:
    task_store.save("s", task("t", WORKING), [{"n": 1}])
    last = task_store.last_event_id("s", "t")
    timer = threading.Timer(0.2, lambda: task_store.save("s", task("t", COMPLETED), [{"n": 2}]))
    timer.start()
    started = time.monotonic()
    try:
        events = task_store.read_events("s", "t", last, 5)
    finally:
        timer.join()
    assert [e.payload for e in events] == [{"n": 2}]
    assert time.monotonic() - started < 4


# ---- versions and conditional saves (optimistic concurrency) ----


def raw_state(backend: Backend) -> Any:
    """Everything the backend holds for tasks, so a refused save can be shown to have changed nothing."""
    if isinstance(backend, MemoryBackend):
        data = backend._data
        with data.lock:
            return (
                dict(data.tasks),
                {ref: list(log) for ref, log in data.events.items()},
                data.next_sequence,
                data.next_task_version,
            )
    assert isinstance(backend, RedisBackend)
    return snapshot(backend.connection.client, backend.prefix)


def test_versions_start_at_zero_and_grow_with_every_save(task_store: TaskStore) -> None:
    assert task_store.load_versioned("s", "t") == Versioned(None, 0)
    first = task_store.save("s", task("t", INPUT))
    assert first > 0
    assert task_store.load_versioned("s", "t") == Versioned(task("t", INPUT), first)
    second = task_store.save("s", task("t", INPUT, history=[1]))
    assert second > first
    third = task_store.save("s", task("t", COMPLETED), expect_version=second)
    assert third > second
    assert task_store.load_versioned("s", "t") == Versioned(task("t", COMPLETED), third)
    assert task_store.load("s", "t") == task("t", COMPLETED)
    # Versions are per task: another task's save moves this one's version on no further.
    task_store.save("s", task("other"))
    task_store.save("elsewhere", task("t"))
    assert task_store.load_versioned("s", "t").version == third


def test_expect_zero_inserts_only_a_new_task(task_store: TaskStore) -> None:
    version = task_store.save("s", task("t", INPUT), [{"n": 1}], expect_version=0)
    with pytest.raises(TaskConflict) as caught:
        task_store.save("s", task("t", COMPLETED), [{"n": 2}], expect_version=0)
    assert (caught.value.task_id, caught.value.expected, caught.value.current) == ("t", 0, version)
    assert isinstance(caught.value, StoreError)
    assert task_store.load_versioned("s", "t") == Versioned(task("t", INPUT), version)
    assert [e.payload for e in task_store.read_events("s", "t", None, 0)] == [{"n": 1}]
    # The same id in another scope is another task.
    task_store.save("other", task("t"), expect_version=0)


def test_a_stale_version_conflicts_and_changes_nothing(make_backend, clock) -> None:
    backend = make_backend()
    store = backend.task_store(TaskLimits(max_tasks=2), clock=clock, describe=describe_task)
    store.save("s", task("done"), [{"n": 0}])
    clock.advance(1)
    stale = store.save("s", task("t", INPUT), [{"n": 1}])
    clock.advance(1)
    fresh = store.save("s", task("t", INPUT, history=["rival"]), [{"n": 2}], expect_version=stale)
    before = raw_state(backend)
    clock.advance(1)
    with pytest.raises(TaskConflict) as caught:
        store.save("s", task("t", COMPLETED), [{"n": 3}], expect_version=stale)
    assert (caught.value.expected, caught.value.current) == (stale, fresh)
    # A task that does not exist is at version 0: expecting any other version conflicts, and the store,
    # although full, evicts nothing for it.
    with pytest.raises(TaskConflict) as caught:
        store.save("s", task("new", WORKING), [{"n": 4}], expect_version=fresh)
    assert caught.value.current == 0
    assert raw_state(backend) == before
    assert store.load_versioned("s", "t") == Versioned(task("t", INPUT, history=["rival"]), fresh)
    assert [e.payload for e in store.read_events("s", "t", None, 0)] == [{"n": 1}, {"n": 2}]
    assert store.last_event_id("s", "new") is None
    assert [t["id"] for t in store.list("s", _query()).tasks] == ["t", "done"]
    # The winner's version still works, and the capacity counters were not disturbed.
    store.save("s", task("t", COMPLETED), [{"n": 3}], expect_version=fresh)
    store.save("s", task("new", WORKING), expect_version=0)  # evicts "done", the oldest finished task
    assert ids(store, "s", ["done", "t", "new"]) == ["t", "new"]


def test_an_evicted_task_saved_with_its_old_version_conflicts(make_task_store, clock) -> None:
    store = make_task_store(max_tasks=1)
    old = store.save("s", task("a", INPUT), [{"n": 1}])
    clock.advance(1)
    store.save("s", task("b", WORKING))  # evicts a
    with pytest.raises(TaskConflict) as caught:
        store.save("s", task("a", COMPLETED), expect_version=old)
    assert caught.value.current == 0
    assert store.load("s", "a") is None and store.load("s", "b") is not None
    assert store.last_event_id("s", "b") is None


def test_a_reused_id_never_reuses_a_version(make_task_store, clock) -> None:
    """Evicted, then saved anew under the same id: a writer holding the old version still conflicts."""
    store = make_task_store(max_tasks=1)
    old = store.save("s", task("a", INPUT))
    clock.advance(1)
    store.save("s", task("b"))  # evicts a
    clock.advance(1)
    again = store.save("s", task("a", INPUT), expect_version=0)  # evicts b; a is back
    assert again != old
    with pytest.raises(TaskConflict):
        store.save("s", task("a", COMPLETED), expect_version=old)
    assert store.load("s", "a") == task("a", INPUT)


def test_an_expired_task_saved_with_its_old_version_conflicts(make_task_store, clock) -> None:
    store = make_task_store(paused_ttl_seconds=60)
    version = store.save("s", task("p", INPUT))
    clock.advance(59)
    assert store.load_versioned("s", "p").version == version
    clock.advance(1)
    with pytest.raises(TaskConflict) as caught:
        store.save("s", task("p", COMPLETED), expect_version=version)
    assert caught.value.current == 0
    assert store.load_versioned("s", "p") == Versioned(None, 0)


def test_a_too_large_task_is_refused_before_its_version_is_checked(make_task_store) -> None:
    store = make_task_store(max_task_bytes=200)
    store.save("s", task("t", WORKING))
    with pytest.raises(TaskTooLarge):
        store.save("s", task("t", COMPLETED, pad="x" * 300), expect_version=0)


@pytest.mark.parametrize("bad", [-1, True, 1.0, "1"])
def test_expect_version_must_be_a_non_negative_integer(task_store: TaskStore, bad: Any) -> None:
    with pytest.raises(ValueError):
        task_store.save("s", task("t"), expect_version=bad)
    assert task_store.load("s", "t") is None


def test_racing_threads_lose_no_update(task_store: TaskStore) -> None:
    """Read-modify-write with retries: every thread's append lands exactly once."""
    task_store.save("s", task("t", INPUT, history=[]))
    threads, rounds = 6, 15

    def work(worker: int) -> None:
        for n in range(rounds):
            while True:
                current = task_store.load_versioned("s", "t")
                value = current.value
                assert value is not None
                value["history"].append(f"{worker}-{n}")
                try:
                    task_store.save("s", value, expect_version=current.version)
                    break
                except TaskConflict:
                    continue

    runners = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    history = task_store.load("s", "t")["history"]
    assert sorted(history) == sorted(f"{w}-{n}" for w in range(threads) for n in range(rounds))


# ---- round trips (Redis: each store call is one server round trip) ----


def test_each_redis_call_is_one_round_trip(make_backend, clock) -> None:
    """Redis: one server round trip per store call (list: two); the in-process store makes none."""
    from stores import ChangeSet, Quota

    backend: Backend = make_backend()

    state, tasks = (
        backend.state_store(),
        backend.task_store(TaskLimits(), clock=clock, describe=describe_task),
    )
    calls: list[tuple[str, Callable[[], object], int]] = [
        ("read", lambda: state.read("s", [("a", "1"), ("b", "2")]), 1),
        (
            "commit",
            lambda: state.commit(
                "s", ChangeSet({("a", "1"): 0}, {("a", "1"): {}}, quotas=(Quota("n", 1, 5),))
            ),
            1,
        ),
        ("save", lambda: tasks.save("s", task("t"), [{"n": 1}]), 1),
        ("load", lambda: tasks.load("s", "t"), 1),
        ("load_versioned", lambda: tasks.load_versioned("s", "t"), 1),
        (
            "conditional save",
            lambda: tasks.save(
                "s", task("t"), [{"n": 2}], expect_version=tasks.load_versioned("s", "t").version
            ),
            2,  # the load and the save
        ),
        (
            "conflicting save",
            lambda: pytest.raises(TaskConflict, tasks.save, "s", task("t"), expect_version=0),
            1,
        ),
        ("list", lambda: tasks.list("s", _query()), 2),
        ("last_event_id", lambda: tasks.last_event_id("s", "t"), 1),
        ("read_events", lambda: tasks.read_events("s", "t", None, 0), 1),
    ]
    for name, call, expected in calls:
        before = backend.round_trips()
        call()
        assert backend.round_trips() - before == (expected if make_backend.shared else 0), name
