"""The read cache (stores/cache.py) in front of every backend: hits are unconfirmed copies, a stale hit costs
one conflict and is then forgotten, commits keep it current, and it stays within its bounds."""

from __future__ import annotations

import pytest

from quineling.a2a.task_facts import describe_task
from stores import Backend, ChangeSet, ConflictError, StateStore, TaskWrite, Versioned
from stores.cache import CachingStateStore

A, B, W = ("artifact", "a"), ("artifact", "b"), ("world", "main")


def cached(store: StateStore, **bounds: int) -> CachingStateStore:
    return CachingStateStore(store, ["artifact"], **bounds)


def test_a_hit_is_an_unconfirmed_private_copy(state_store: StateStore) -> None:
    state_store.commit("s", ChangeSet(expect={A: 0, W: 0}, put={A: {"n": [1]}, W: {"r": 1}}))
    cache = cached(state_store)
    first = cache.read("s", [A, W])
    assert first == {A: Versioned({"n": [1]}, 1), W: Versioned({"r": 1}, 1)}  # a miss reads the store
    first[A].value["n"].append(2)  # type: ignore[index]
    second = cache.read("s", [A, W])
    assert second[A] == Versioned({"n": [1]}, 1, confirmed=False)
    assert second[W] == Versioned({"r": 1}, 1)  # kinds not listed always come from the store
    assert (cache.hits, cache.misses) == (1, 1)


def test_absent_documents_are_not_cached(state_store: StateStore) -> None:
    cache = cached(state_store)
    assert cache.read("s", [A])[A] == Versioned(None, 0)
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": 1}}))
    assert cache.read("s", [A])[A] == Versioned({"n": 1}, 1)


def test_scopes_are_cached_apart(state_store: StateStore) -> None:
    for scope, n in (("s", 1), ("t", 2)):
        state_store.commit(scope, ChangeSet(expect={A: 0}, put={A: {"n": n}}))
    cache = cached(state_store)
    for _ in range(2):
        assert cache.read("s", [A])[A].value == {"n": 1}
        assert cache.read("t", [A])[A].value == {"n": 2}


def test_a_stale_hit_conflicts_once_then_reads_fresh(state_store: StateStore) -> None:
    """Another process (here: the store itself, behind the cache's back) changes a cached document."""
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": 1}}))
    cache = cached(state_store)
    cache.read("s", [A])
    state_store.commit("s", ChangeSet(expect={A: 1}, put={A: {"n": 2}}))
    stale = cache.read("s", [A])[A]
    assert stale == Versioned({"n": 1}, 1, confirmed=False)
    with pytest.raises(ConflictError):
        cache.commit("s", ChangeSet(expect={A: stale.version}))
    assert cache.read("s", [A])[A] == Versioned({"n": 2}, 2)  # forgotten: confirmed, from the store
    assert state_store.read("s", [A])[A] == Versioned({"n": 2}, 2)  # the failed commit wrote nothing


def test_a_commit_keeps_the_cache_current(state_store: StateStore) -> None:
    cache = cached(state_store)
    cache.commit("s", ChangeSet(expect={A: 0, W: 0}, put={A: {"n": 1}, W: {"r": 1}}))
    assert cache.read("s", [A])[A] == Versioned({"n": 1}, 1, confirmed=False)  # remembered as written
    assert cache.read("s", [W])[W] == Versioned({"r": 1}, 1)
    cache.commit("s", ChangeSet(expect={A: 1}, delete=frozenset({A})))
    assert cache.read("s", [A])[A] == Versioned(None, 0)
    assert len(cache) == 0


def test_bounded_by_entries_least_recently_used_first(state_store: StateStore) -> None:
    keys = [("artifact", str(i)) for i in range(4)]
    state_store.commit("s", ChangeSet(expect=dict.fromkeys(keys, 0), put={k: {"k": k[1]} for k in keys}))
    cache = cached(state_store, max_entries=2)
    cache.read("s", keys[:2])
    cache.read("s", [keys[0]])  # now the most recently used
    cache.read("s", [keys[2]])  # evicts keys[1]
    assert len(cache) == 2
    assert not cache.read("s", [keys[0]])[keys[0]].confirmed
    assert cache.read("s", [keys[1]])[keys[1]].confirmed


def test_bounded_by_bytes(state_store: StateStore) -> None:
    big = {"x": "y" * 100}
    state_store.commit("s", ChangeSet(expect={A: 0, B: 0}, put={A: big, B: big}))
    cache = cached(state_store, max_bytes=150)
    cache.read("s", [A, B])
    assert len(cache) == 1
    tiny = cached(state_store, max_bytes=50)  # a document larger than the whole cache is not kept
    tiny.read("s", [A])
    assert len(tiny) == 0 and tiny.read("s", [A])[A].confirmed


def test_bad_bounds_are_refused(state_store: StateStore) -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        cached(state_store, max_entries=0)


def test_a_task_store_still_commits_with_the_cached_store(backend: Backend) -> None:
    """The atomic commit of a change set and a task sees through the cache (``StateStore.origin``)."""
    tasks = backend.task_store(describe=describe_task)
    cache = cached(backend.state_store())
    assert tasks.joins(cache) and cache.origin is backend.state_store().origin
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    version = cache.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": 1}}), task=TaskWrite(tasks, "s", task))
    assert version == tasks.load_versioned("s", "t").version
    assert backend.state_store().read("s", [A])[A] == Versioned({"n": 1}, 1)


def test_a_shared_hit_is_decoded_once_per_entry_and_never_outlives_it(state_store: StateStore) -> None:
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": [1]}}))
    cache = cached(state_store)
    cache.read("s", [A])  # a miss: now kept
    first = cache.read_shared("s", [A])[A]
    assert first == Versioned({"n": [1]}, 1, confirmed=False)
    assert cache.read_shared("s", [A])[A].value is first.value  # one decode for every shared hit
    assert cache.read("s", [A])[A].value is not first.value  # a plain hit is still the caller's own
    cache.commit("s", ChangeSet(expect={A: 1}, put={A: {"n": [2]}}))  # the entry is the new text
    assert cache.read_shared("s", [A])[A] == Versioned({"n": [2]}, 2, confirmed=False)
    state_store.commit("s", ChangeSet(expect={A: 2}, put={A: {"n": [3]}}))  # behind the cache's back
    stale = cache.read_shared("s", [A])[A]
    assert stale.version == 2 and not stale.confirmed  # stale as a plain hit is: the commit finds it out
    with pytest.raises(ConflictError):
        cache.commit("s", ChangeSet(expect={A: stale.version}))
    assert cache.read_shared("s", [A])[A] == Versioned({"n": [3]}, 3)  # forgotten: read from the store
