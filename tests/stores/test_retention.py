"""Retention conformance: leases, lazy expiry inside the commit, owners, extensions, version floors and the
operators' usage/reset, on every backend of tests/conftest.py (memory, fakeredis, real Redis).

Every store here decides expiry by the test's clock (``backend.state_store(clock=…)``), so boundaries are
exact: a document whose expiry is ``T`` is there at ``T - 0.001`` and gone at ``T``.
"""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from stores import Backend, ChangeSet, ConflictError, Quota, QuotaExceeded, StateStore, Versioned
from stores.base import TaskWrite
from stores.cache import CachingStateStore
from stores.changes import Key, Lease
from tests.conftest import FakeClock

A, B, C = ("artifact", "a"), ("artifact", "b"), ("artifact", "c")
OWNER, RECEIPT, DERIVATION = ("lineage", "main"), ("receipt", "r1"), ("derivation", "0")
LIMIT = 3


@pytest.fixture
def store(backend: Backend, clock: FakeClock) -> StateStore:
    return backend.state_store(clock=clock)


def insert(store: StateStore, key: Key, ttl: float | None, clock: FakeClock, limit: int = LIMIT) -> None:
    """A new document holding one ``slots`` unit, expiring ``ttl`` seconds from now (``None``: never)."""
    lease = {key: Lease(clock.now + ttl, holds={"slots": 1})} if ttl is not None else {}
    store.commit(
        "s",
        ChangeSet(
            expect={key: 0}, put={key: {"id": key[1]}}, quotas=(Quota("slots", 1, limit),), leases=lease
        ),
    )


def present(store: StateStore, *keys: Key) -> list[bool]:
    read = store.read("s", keys)
    return [read[key].value is not None for key in keys]


def test_a_document_is_there_until_its_expiry_and_absent_from_it(store: StateStore, clock: FakeClock) -> None:
    insert(store, A, 10, clock)
    clock.advance(9.999)
    assert store.read("s", [A])[A] == Versioned({"id": "a"}, 1)
    clock.advance(0.001)
    assert store.read("s", [A])[A] == Versioned(None, 0)  # exactly as one that never existed
    with pytest.raises(ConflictError):  # an expectation on the old version no longer holds
        store.commit("s", ChangeSet(expect={A: 1}))


def test_the_commit_drops_what_lapsed_and_gives_its_holds_back(store: StateStore, clock: FakeClock) -> None:
    insert(store, A, 10, clock)
    insert(store, B, 20, clock)
    insert(store, C, None, clock)  # no lease: never lapses
    assert store.counters("s", ["slots"]) == {"slots": 3}
    clock.advance(10)
    store.commit("s", ChangeSet(quotas=(Quota("other", 1, 5),)))  # any commit of the scope sweeps it
    assert store.counters("s", ["slots"]) == {"slots": 2}
    clock.advance(1000)
    store.commit("s", ChangeSet(quotas=(Quota("other", 1, 5),)))
    assert store.counters("s", ["slots"]) == {"slots": 1}
    assert present(store, A, B, C) == [False, False, True]


def test_at_capacity_a_put_is_refused_until_exactly_when_the_oldest_lapses(
    store: StateStore, clock: FakeClock
) -> None:
    insert(store, A, 30, clock)
    clock.advance(5)
    insert(store, B, 30, clock)
    insert(store, ("artifact", "x"), None, clock)
    oldest = clock.now - 5 + 30
    clock.advance(24.999)  # one millisecond before A lapses
    with pytest.raises(QuotaExceeded) as refused:
        insert(store, C, 30, clock)
    assert (refused.value.name, refused.value.limit, refused.value.frees_at) == ("slots", LIMIT, oldest)
    assert store.counters("s", ["slots"]) == {"slots": 3} and present(store, C) == [False]
    clock.advance(0.001)
    insert(store, C, 30, clock)  # A's slot, freed in the same atomic step
    assert store.counters("s", ["slots"]) == {"slots": 3}
    assert present(store, A, B, C) == [False, True, True]


def test_frees_at_names_the_first_holder_of_that_counter(store: StateStore, clock: FakeClock) -> None:
    """A document that expires sooner but holds another counter does not free this one."""
    other = ("record", "r")
    store.commit(
        "s",
        ChangeSet(
            expect={other: 0}, put={other: {}}, leases={other: Lease(clock.now + 1, holds={"records": 1})}
        ),
    )
    insert(store, A, None, clock, limit=1)
    with pytest.raises(QuotaExceeded) as refused:
        insert(store, B, 50, clock, limit=1)
    assert refused.value.frees_at is None  # the one holder of "slots" never lapses
    insert(store, ("artifact", "d"), 50, clock, limit=2)
    with pytest.raises(QuotaExceeded) as refused:
        insert(store, B, 50, clock, limit=2)
    assert refused.value.frees_at == clock.now + 50


def test_an_extension_moves_the_expiry_later_never_earlier_and_keeps_the_version(
    store: StateStore, clock: FakeClock
) -> None:
    insert(store, A, 10, clock)
    store.commit("s", ChangeSet(extend={A: clock.now + 100}))
    store.commit("s", ChangeSet(extend={A: clock.now + 50}))  # earlier: no effect
    clock.advance(99.999)
    assert store.read("s", [A])[A] == Versioned({"id": "a"}, 1)
    clock.advance(0.001)
    assert present(store, A) == [False]


def test_an_extension_leaves_absent_unleased_and_owned_documents_alone(
    store: StateStore, clock: FakeClock
) -> None:
    insert(store, C, None, clock)
    put_owned(store, clock, ttl=10)
    store.commit("s", ChangeSet(extend={B: clock.now + 5, C: clock.now + 5, RECEIPT: clock.now + 5}))
    clock.advance(6)
    assert present(store, B, C, RECEIPT) == [False, True, True]  # nothing got an expiry it did not have
    clock.advance(4)
    assert present(store, RECEIPT) == [False]  # still lapses with its owner, not later


def put_owned(store: StateStore, clock: FakeClock, ttl: float) -> None:
    """An owner expiring in ``ttl`` seconds that owns a receipt (holding one ``receipts``) and a derivation."""
    store.commit(
        "s",
        ChangeSet(
            expect={OWNER: 0, RECEIPT: 0, DERIVATION: 0},
            put={OWNER: {"n": 1}, RECEIPT: {"r": 1}, DERIVATION: {"d": 0}},
            quotas=(Quota("receipts", 1, 10),),
            leases={
                OWNER: Lease(clock.now + ttl),
                RECEIPT: Lease(owner=OWNER, holds={"receipts": 1}),
                DERIVATION: Lease(owner=OWNER),
            },
        ),
    )


def test_owned_documents_live_and_lapse_with_their_owner(store: StateStore, clock: FakeClock) -> None:
    put_owned(store, clock, ttl=10)
    store.commit("s", ChangeSet(extend={OWNER: clock.now + 20}))  # using the owner keeps what it owns
    clock.advance(19.999)
    assert present(store, OWNER, RECEIPT, DERIVATION) == [True, True, True]
    with pytest.raises(QuotaExceeded) as refused:
        store.commit("s", ChangeSet(quotas=(Quota("receipts", 10, 10),)))
    assert refused.value.frees_at == clock.now + 0.001  # the receipt frees its slot when its owner lapses
    clock.advance(0.001)
    assert present(store, OWNER, RECEIPT, DERIVATION) == [False, False, False]
    store.commit("s", ChangeSet(quotas=(Quota("other", 1, 5),)))
    assert store.counters("s", ["receipts"]) == {"receipts": 0}


def test_a_document_whose_owner_is_absent_is_absent(store: StateStore, clock: FakeClock) -> None:
    store.commit(
        "s", ChangeSet(expect={RECEIPT: 0}, put={RECEIPT: {"r": 1}}, leases={RECEIPT: Lease(owner=OWNER)})
    )
    assert present(store, RECEIPT) == [False]
    store.commit("s", ChangeSet(expect={OWNER: 0}, put={OWNER: {}}))  # an owner without a lease: forever
    assert present(store, RECEIPT) == [True]


def test_deleting_an_owner_takes_what_it_owns_with_it(store: StateStore, clock: FakeClock) -> None:
    put_owned(store, clock, ttl=100)
    version = store.read("s", [OWNER])[OWNER].version
    store.commit("s", ChangeSet(expect={OWNER: version}, delete=frozenset({OWNER})))
    assert present(store, OWNER, RECEIPT, DERIVATION) == [False, False, False]
    assert store.counters("s", ["receipts"]) == {"receipts": 0}  # the owned receipt gave its slot back


def test_a_put_replaces_the_lease_whole(store: StateStore, clock: FakeClock) -> None:
    insert(store, A, 10, clock)
    store.commit("s", ChangeSet(expect={A: 1}, put={A: {"id": "a", "v": 2}}))  # no lease: kept for good
    clock.advance(1000)
    store.commit("s", ChangeSet(quotas=(Quota("other", 1, 5),)))
    assert store.read("s", [A])[A] == Versioned({"id": "a", "v": 2}, 2)
    assert store.counters("s", ["slots"]) == {"slots": 1}  # nothing held any more, nothing given back
    store.commit("s", ChangeSet(expect={A: 2}, put={A: {"id": "a"}}, leases={A: Lease(clock.now + 5)}))
    clock.advance(5)
    assert present(store, A) == [False]


def test_a_version_is_never_reused_after_a_lapse(store: StateStore, clock: FakeClock) -> None:
    insert(store, A, 10, clock)
    store.commit("s", ChangeSet(expect={A: 1}, put={A: {"v": 2}}, leases={A: Lease(clock.now + 10)}))
    clock.advance(10)
    assert store.read("s", [A])[A] == Versioned(None, 0)
    written: dict[Key, int] = {}
    store.commit("s", ChangeSet(expect={A: 0, B: 0}, put={A: {"v": 3}, B: {}}), versions=written)
    assert written[A] > 2 and written[B] > 2  # above everything the scope's lapsed documents had
    assert store.read("s", [A])[A] == Versioned({"v": 3}, written[A])
    fresh = store.read("other", [A])  # other scopes keep their own versions
    store.commit("other", ChangeSet(expect={A: fresh[A].version}, put={A: {}}))
    assert store.read("other", [A])[A].version == 1


def test_a_commit_reports_the_versions_it_wrote(store: StateStore, backend: Backend) -> None:
    written: dict[Key, int] = {}
    store.commit("s", ChangeSet(expect={A: 0, B: 0}, put={A: {}, B: {}}), versions=written)
    assert written == {A: 1, B: 1}
    tasks = backend.task_store(describe=describe_task)
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    written.clear()
    store.commit(
        "s", ChangeSet(expect={A: 1}, put={A: {"n": 2}}), task=TaskWrite(tasks, "s", task), versions=written
    )
    assert written == {A: 2}


def test_a_lapse_inside_a_commit_with_a_task_is_atomic_with_it(
    store: StateStore, backend: Backend, clock: FakeClock
) -> None:
    insert(store, A, 10, clock, limit=1)
    clock.advance(10)
    tasks = backend.task_store(describe=describe_task, clock=clock)
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    change = ChangeSet(expect={B: 0}, put={B: {}}, quotas=(Quota("slots", 1, 1),))
    store.commit("s", change, task=TaskWrite(tasks, "s/u", task, expect_version=0))
    assert store.counters("s", ["slots"]) == {"slots": 1}
    assert present(store, A, B) == [False, True]


def test_a_read_cache_never_serves_a_lapsed_document(backend: Backend, clock: FakeClock) -> None:
    """A cached copy confirms against the store: once its document lapsed, that is one conflict, and the
    document then reads as absent; a re-created document gets a version the cache has never seen."""
    store = backend.state_store(clock=clock)
    cache = CachingStateStore(store, ["artifact"])
    cache.commit("s", ChangeSet(expect={A: 0}, put={A: {"v": 1}}, leases={A: Lease(clock.now + 10)}))
    hit = cache.read("s", [A])[A]
    assert hit == Versioned({"v": 1}, 1, confirmed=False)  # remembered at the version the store gave it
    clock.advance(10)
    with pytest.raises(ConflictError):
        cache.commit("s", ChangeSet(expect={A: hit.version}))
    assert cache.read("s", [A])[A] == Versioned(None, 0)
    store.commit("s", ChangeSet(expect={A: 0}, put={A: {"v": "new"}}))
    again = cache.read("s", [A])[A]
    assert again.value == {"v": "new"} and again.version != hit.version
    # What the cache writes itself after a lapse it remembers at the version the store really gave it.
    cache.commit("s", ChangeSet(expect={B: 0}, put={B: {"b": 1}}))
    remembered = cache.read("s", [B])[B]
    assert not remembered.confirmed and remembered == Versioned(
        {"b": 1}, store.read("s", [B])[B].version, False
    )
    assert remembered.version > 1  # above the lapsed document's version


def test_a_lease_is_checked_when_it_is_made() -> None:
    with pytest.raises(ValueError, match="either an expiry time or an owner"):
        Lease()
    with pytest.raises(ValueError, match="either an expiry time or an owner"):
        Lease(1.0, owner=A)
    with pytest.raises(ValueError, match="plain quota names"):
        Lease(1.0, holds={"a b": 1})
    with pytest.raises(ValueError, match="non-negative integer"):
        Lease(1.0, holds={"n": -1})
    with pytest.raises(ValueError, match="finite"):
        Lease(float("inf"))
    with pytest.raises(ValueError, match="with a put"):
        ChangeSet(leases={A: Lease(1.0)})
    with pytest.raises(ValueError, match="own itself"):
        ChangeSet(expect={A: 0}, put={A: {}}, leases={A: Lease(owner=A)})


# -- operators: scopes, usage, reset --------------------------------------------------------------------


def fill(backend: Backend, clock: FakeClock, scope: str) -> Any:
    """A scope with a leased document, a permanent one, an owned one, and two tasks of two users."""
    store = backend.state_store(clock=clock)
    store.commit(
        scope,
        ChangeSet(
            expect={A: 0, B: 0, RECEIPT: 0},
            put={A: {"a": 1}, B: {"b": 2}, RECEIPT: {"r": 3}},
            quotas=(Quota("slots", 2, 10), Quota("receipts", 1, 10)),
            leases={
                A: Lease(clock.now + 10, holds={"slots": 1}),
                RECEIPT: Lease(owner=A, holds={"receipts": 1}),
            },
        ),
    )
    tasks = backend.task_store(describe=describe_task, clock=clock)
    for n, user in enumerate(("alice", "bob")):
        body = {"id": f"t{n}", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        tasks.save(f"{scope}/{user}", body, [{"event": n}])
    return store, tasks


def test_usage_reports_documents_counters_tasks_and_when_slots_free(
    backend: Backend, clock: FakeClock
) -> None:
    fill(backend, clock, "acme")
    usage = backend.usage("acme", now=clock.now)
    assert usage.counters == {"slots": 2, "receipts": 1}
    assert usage.frees_at == {"slots": clock.now + 10, "receipts": clock.now + 10}
    assert (usage.documents, usage.tasks) == (3, 2)
    assert usage.document_bytes == len('{"a":1}') + len('{"b":2}') + len('{"r":3}')
    assert usage.task_bytes > 0
    later = backend.usage("acme", now=clock.now + 10)  # drops what lapsed first, exactly as a commit would
    assert (later.counters, later.frees_at, later.documents) == ({"slots": 1}, {}, 1)


def test_scopes_lists_every_admitted_scope(backend: Backend, clock: FakeClock) -> None:
    """One registry of scopes (stores/scopes.py): what a server admits before it writes is what operators see,
    written by no commit (on a cluster a commit stays in its scope's slot)."""
    assert backend.scopes() == []
    registry = backend.scope_registry(clock=clock)
    for scope in ("acme", "{odd}:scope%", "tasks-only", "state-only"):
        registry.admit(scope)
    fill(backend, clock, "acme")
    fill(backend, clock, "{odd}:scope%")
    tasks = backend.task_store(describe=describe_task)
    tasks.save("tasks-only/u", {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}})
    backend.state_store().commit("state-only", ChangeSet(expect={A: 0}, put={A: {}}))
    assert backend.scopes() == sorted(["acme", "{odd}:scope%", "tasks-only", "state-only"])


def test_a_scope_whose_entries_all_lapsed_stays_registered(backend: Backend, clock: FakeClock) -> None:
    """It leaves the registry only when reclaimed: a writer holding a renewal may write in it again."""
    backend.scope_registry(clock=clock).admit("s")
    store = backend.state_store(clock=clock)
    insert(store, A, 10, clock)
    usage = backend.usage("s", now=clock.now + 10)
    assert usage.is_empty and backend.scopes() == ["s"]


def test_reset_drops_one_scope_whole_and_nothing_else(backend: Backend, clock: FakeClock) -> None:
    registry = backend.scope_registry(clock=clock)
    registry.admit("acme")
    registry.admit("other")
    store, tasks = fill(backend, clock, "acme")
    fill(backend, clock, "other")
    held = backend.reset("acme")
    assert (held.documents, held.tasks, held.counters) == (3, 2, {"slots": 2, "receipts": 1})
    assert present_in(store, "acme") == [False, False, False]
    assert store.counters("acme", ["slots", "receipts"]) == {"slots": 0, "receipts": 0}
    assert tasks.load("acme/alice", "t0") is None and tasks.load("acme/bob", "t1") is None
    assert tasks.read_events("other/alice", "t0", None, 0) != []  # events were logged…
    assert tasks.read_events("acme/alice", "t0", None, 0) == []  # …and went with their scope
    assert backend.usage("acme").is_empty and backend.scopes() == ["acme", "other"]  # still admitted
    assert present_in(store, "other") == [True, True, True]
    assert tasks.load("other/alice", "t0") is not None


def test_after_a_reset_no_version_is_reused(backend: Backend, clock: FakeClock) -> None:
    store, tasks = fill(backend, clock, "acme")
    old_doc = store.read("acme", [B])[B].version
    old_task = tasks.load_versioned("acme/alice", "t0").version
    backend.reset("acme")
    store.commit("acme", ChangeSet(expect={B: 0}, put={B: {}}))
    version = tasks.save(
        "acme/alice", {"id": "t0", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    )
    assert store.read("acme", [B])[B].version > old_doc and version > old_task


def present_in(store: StateStore, scope: str) -> list[bool]:
    read = store.read(scope, [A, B, RECEIPT])
    return [read[key].value is not None for key in (A, B, RECEIPT)]
