"""The Redis backend's books stay exact, read off the raw keys after every step.

The write scripts read a partition's stats once and write them back once (count, bytes and both sequence
counters), reuse the sizes the eviction plan read, and leave out the bookkeeping that cannot apply to what is
known to be new: a task that was not there is in neither the evictable nor the paused set, and a document a
commit found absent has no lease entries. These tests hold those shortcuts to the books: after each step the
stats equal what the hashes hold, every index names only stored tasks or documents, and a version or sequence
is never reused.
"""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from stores import ChangeSet, Quota, RedisBackend, TaskLimits, TaskStore
from stores.base import TaskWrite, task_partition
from stores.changes import Key, Lease
from stores.redis import keys as store_keys
from tests.conftest import BACKENDS, FakeClock

from .test_task_store import INPUT, WORKING, task

REDIS_BACKENDS = [BACKENDS["fakeredis"], BACKENDS["redis"], BACKENDS["cluster"]]
SCOPE = "s"


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def task_books(backend: RedisBackend, scope: str = SCOPE) -> dict[str, Any]:
    """The partition's task keys, checked against each other; returns the stats and the stored task ids."""
    redis = backend.connection.shared
    names = store_keys.task_keys(backend.prefix, task_partition(scope))
    data = {_text(f): _text(v) for f, v in redis.hgetall(names["data"]).items()}
    stats = {_text(f): int(v) for f, v in redis.hgetall(names["stats"]).items()}
    fields = set(data)
    assert stats.get("count", 0) == len(data)
    assert stats.get("bytes", 0) == sum(len(body.encode()) for body in data.values())
    for index in ("info", "seq", "version"):
        assert {_text(f) for f in redis.hkeys(names[index])} == fields, index
    for ordered in ("evictable", "paused"):
        assert {_text(f) for f in redis.zrange(names[ordered], 0, -1)} <= fields, ordered
    versions = [int(v) for v in redis.hvals(names["version"])]
    sequences = [int(v) for v in redis.hvals(names["seq"])]
    assert len(set(versions)) == len(versions) and max(versions, default=0) <= stats.get("next_ver", 0)
    assert len(set(sequences)) == len(sequences) and max(sequences, default=0) <= stats.get("next_seq", 0)
    return {"stats": stats, "ids": sorted(field.rpartition("/")[2] for field in fields)}


def document_books(backend: RedisBackend, scope: str = SCOPE) -> set[str]:
    """The scope's documents; every lease entry belongs to one of them (or, for an owner, names one)."""
    redis = backend.connection.shared
    documents = {_text(f) for f in redis.hkeys(store_keys.documents(backend.prefix, scope))}
    versioned = {_text(f) for f in redis.hkeys(store_keys.versions(backend.prefix, scope))} - {"#floor"}
    assert versioned == documents
    expiries, owners, dependents, holds = store_keys.retention(backend.prefix, scope)
    assert {_text(f) for f in redis.zrange(expiries, 0, -1)} <= documents
    assert {_text(f) for f in redis.hkeys(owners)} <= documents
    assert {_text(f) for f in redis.hkeys(holds)} <= documents
    for member in redis.zrange(dependents, 0, -1):
        owner, _, owned = _text(member).partition("|")
        assert owned in documents and owner in documents
    return documents


def make_store(backend: RedisBackend, clock: FakeClock, **limits: Any) -> TaskStore:
    return backend.task_store(TaskLimits(**limits), clock=clock, describe=describe_task)


@pytest.mark.parametrize("make_backend", REDIS_BACKENDS, indirect=True)
def test_stats_and_indexes_stay_exact_through_saves_evictions_and_expiry(
    make_backend: Any, clock: FakeClock
) -> None:
    backend = make_backend()
    store = make_store(backend, clock, max_tasks=4, max_total_bytes=900, paused_ttl_seconds=60)
    seen_versions: list[int] = []

    def save(value: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        seen_versions.append(store.save(SCOPE, value, **kwargs))
        return task_books(backend)

    save(task("a"), expect_version=0)
    save(task("b", INPUT))  # paused
    save(task("c", WORKING))  # active: never evicted
    books = save(task("a", history=["x" * 40]))  # replaced in place, larger
    assert books["ids"] == ["a", "b", "c"] and books["stats"]["count"] == 3
    books = save(task("d"))
    books = save(task("e"))  # over four tasks: the oldest last update that may go (b) goes
    assert books["ids"] == ["a", "c", "d", "e"]
    books = save(task("f", history=["y" * 300]))  # over the bytes too: as many victims as it takes
    assert "c" in books["ids"] and "f" in books["ids"] and books["stats"]["bytes"] <= 900
    save(task("g", INPUT))
    clock.advance(61)  # g's pause lapses; the next save drops it before planning
    books = save(task("h"), expect_version=0)
    assert "g" not in books["ids"] and "h" in books["ids"]
    books = save(
        task("h", WORKING), expect_version=seen_versions[-1]
    )  # active again: out of the evictable set
    redis = backend.connection.shared
    evictable = store_keys.task_keys(backend.prefix, task_partition(SCOPE))["evictable"]
    assert store_keys.task_field(SCOPE, "h") not in {_text(f) for f in redis.zrange(evictable, 0, -1)}
    assert seen_versions == sorted(seen_versions) and len(set(seen_versions)) == len(seen_versions)


@pytest.mark.parametrize("make_backend", REDIS_BACKENDS, indirect=True)
def test_an_evictable_entry_whose_task_is_gone_frees_nothing_and_is_cleaned_up(
    make_backend: Any, clock: FakeClock
) -> None:
    backend = make_backend()
    store = make_store(backend, clock, max_tasks=2)
    store.save(SCOPE, task("a"))
    store.save(SCOPE, task("b"))
    redis = backend.connection.shared
    names = store_keys.task_keys(backend.prefix, task_partition(SCOPE))
    ghost = store_keys.task_field(SCOPE, "ghost")
    redis.zadd(names["evictable"], {ghost: -1})  # oldest of all, but nothing is stored under it
    store.save(SCOPE, task("c"))  # needs one slot: the ghost frees none, so the oldest real task (a) goes
    books = task_books(backend)
    assert books["ids"] == ["b", "c"] and books["stats"]["count"] == 2
    assert ghost not in {_text(f) for f in redis.zrange(names["evictable"], 0, -1)}


@pytest.mark.parametrize("make_backend", REDIS_BACKENDS, indirect=True)
def test_a_reused_task_id_starts_a_fresh_log_and_a_new_sequence(make_backend: Any, clock: FakeClock) -> None:
    backend = make_backend()
    store = make_store(backend, clock, max_tasks=1)
    store.save(SCOPE, task("a"), [{"n": 1}, {"n": 2}])
    first = task_books(backend)["stats"]
    store.save(SCOPE, task("b"))  # evicts a, its log with it
    store.save(SCOPE, task("a"), [{"n": "again"}])  # evicts b; a is a new task under an old id
    books = task_books(backend)
    assert books["ids"] == ["a"]
    assert books["stats"]["next_seq"] == first["next_seq"] + 2
    assert [event.payload for event in store.read_events(SCOPE, "a", None, 0)] == [{"n": "again"}]


@pytest.mark.parametrize("make_backend", REDIS_BACKENDS, indirect=True)
def test_document_versions_and_leases_stay_exact_for_new_and_replaced_documents(
    make_backend: Any, clock: FakeClock
) -> None:
    backend = make_backend()
    state = backend.state_store(clock=clock)
    tasks = make_store(backend, clock)
    a: Key = ("record", "a")
    b: Key = ("record", "b")
    owned: Key = ("receipt", "r")
    slots = (Quota("slots", 1, 10),)
    written: dict[Key, int] = {}
    lease = Lease(clock.now + 10, holds={"slots": 1})
    state.commit(
        SCOPE,
        ChangeSet(expect={a: 0}, put={a: {"v": 1}}, quotas=slots, leases={a: lease}),
        task=TaskWrite(tasks, SCOPE, task("t1"), expect_version=0),
        versions=written,
    )
    assert written == {a: 1} and document_books(backend) == {"record/a"}
    # Replaced with an expectation: its version moves on, its lease is the new one (owned, no expiry).
    state.commit(SCOPE, ChangeSet(expect={a: 1, b: 0}, put={b: {}}, quotas=slots,
                                  leases={b: Lease(clock.now + 100, holds={"slots": 1})}))  # fmt: skip
    replaced = ChangeSet(expect={a: 1}, put={a: {"v": 2}}, leases={a: Lease(owner=b)})
    state.commit(SCOPE, replaced, versions=written)
    assert written[a] == 2
    redis = backend.connection.shared
    expiries = store_keys.retention(backend.prefix, SCOPE)[0]
    assert _text(redis.zscore(expiries, "record/a") or "none") == "none"  # the old expiry went with the lease
    assert document_books(backend) == {"record/a", "record/b"}
    # Gone with its owner; a new document under its name starts above every version the scope gave out.
    clock.advance(100)
    state.commit(SCOPE, ChangeSet(expect={a: 0, owned: 0}, put={a: {"v": 3}, owned: {}},
                                  leases={owned: Lease(owner=a)}), versions=written)  # fmt: skip
    assert written[a] > 2 and written[owned] > 2
    assert document_books(backend) == {"record/a", "receipt/r"}
    # b's hold came back when it lapsed; a's went with its replaced lease (a put never gives a hold back).
    assert state.counters(SCOPE, ["slots"]) == {"slots": 1}
    # Put without an expectation (the store cannot know whether it is there): the lease bookkeeping still runs.
    state.commit(SCOPE, ChangeSet(put={a: {"v": 4}}))
    assert document_books(backend) == {"record/a", "receipt/r"}
    assert state.read(SCOPE, [a])[a].version == written[a] + 1
