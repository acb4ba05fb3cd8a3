"""Conformance of the scope registry (stores/scopes.py) on memory, fakeredis and real Redis: at most
``max_scopes`` live scopes, renewals, refusal with the time the oldest lease lapses, and the reclaim of an
idle scope that deletes everything it held in the same step."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quineling.a2a.task_facts import describe_task
from stores import Backend, ChangeSet, Lease, Quota, RedisBackend, ScopeLimitReached, ScopeLimits, TaskQuery
from stores.base import KeyClaim, TaskWrite
from stores.redis import keys as store_keys
from tests.conftest import BACKENDS, FakeClock
from tests.support.redis_keys import keys_under

IDLE = 100.0
DOC = ("artifact", "a")
LEASED = ("session", "s")  # with an expiry and a held amount
OWNED = ("receipt", "r")  # lapses with LEASED


def registry(backend: Backend, clock: FakeClock, max_scopes: int = 2) -> Any:
    return backend.scope_registry(ScopeLimits(max_scopes=max_scopes, idle_seconds=IDLE), clock=clock)


def fill(backend: Backend, scope: str, clock: FakeClock) -> None:
    """A document, a counter, documents with retention (an expiry, an owned one, held amounts), a task with an
    event, an idempotency claim and a listing identity in ``scope``."""
    tasks = backend.task_store(describe=describe_task, clock=clock)
    body = {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    write = TaskWrite(tasks, f"{scope}/u", body, claim=KeyClaim("k1", {"taskId": "t1"}, 10 * IDLE))
    leases = {LEASED: Lease(clock.now + 10 * IDLE, holds={"slots": 1}), OWNED: Lease(owner=LEASED)}
    changes = ChangeSet(
        expect={DOC: 0, LEASED: 0, OWNED: 0},
        put={DOC: {"n": 1}, LEASED: {}, OWNED: {}},
        quotas=(Quota("artifacts", 1, 10), Quota("slots", 1, 10)),
        leases=leases,
    )
    backend.state_store().commit(scope, changes, task=write)
    tasks.save(f"{scope}/u", body, [{"e": 1}], expect_version=None)
    for task_id, state in (("t2", "TASK_STATE_COMPLETED"), ("t3", "TASK_STATE_INPUT_REQUIRED")):
        tasks.save(f"{scope}/u", {**body, "id": task_id, "status": {"state": state}})
    tasks.list(f"{scope}/u", TaskQuery())


def holds(backend: Backend, scope: str, clock: FakeClock) -> bool:
    tasks = backend.task_store(describe=describe_task, clock=clock)
    doc = backend.state_store().read(scope, [DOC])[DOC].value
    counters = backend.state_store().counters(scope, ["artifacts"])["artifacts"]
    task = tasks.load(f"{scope}/u", "t1")
    listed = tasks.list(f"{scope}/u", TaskQuery()).total_size
    present = [doc is not None, counters > 0, task is not None, listed > 0]
    assert len(set(present)) == 1, f"{scope} is half there: {present}"
    return present[0]


def test_admits_up_to_the_limit_then_refuses_with_the_time_the_oldest_lease_lapses(
    backend: Backend, clock: FakeClock
) -> None:
    scopes = registry(backend, clock)
    scopes.admit("alice:default")
    clock.advance(10)
    scopes.admit("bob:default")
    clock.advance(5)
    with pytest.raises(ScopeLimitReached) as refused:
        scopes.admit("carol:default")
    assert refused.value.limit == 2
    assert refused.value.retry_after == pytest.approx(IDLE - 15)
    assert set(scopes.live()) == {"alice:default", "bob:default"}
    scopes.admit("alice:default")  # a live scope is never refused


def test_a_renewal_keeps_a_scope_live(backend: Backend, clock: FakeClock) -> None:
    scopes = registry(backend, clock)
    scopes.admit("alice")
    scopes.admit("bob")
    clock.advance(IDLE - 1)
    scopes.forget_renewals()  # as another process would: this one renewed too recently to ask the store
    scopes.admit("alice")
    clock.advance(2)  # bob is idle now, alice not
    scopes.admit("carol")
    assert set(scopes.live()) == {"alice", "carol"}
    assert scopes.live()["carol"] == clock.now


def test_an_idle_scope_is_reclaimed_with_everything_it_held(backend: Backend, clock: FakeClock) -> None:
    scopes = registry(backend, clock)
    for scope in ("alice:default", "bob:default"):
        scopes.admit(scope)
        fill(backend, scope, clock)
        if isinstance(backend, RedisBackend):  # as the earlier release left its recorded replies
            for name in store_keys.retired_keys(backend.prefix, scope):
                backend.connection.shared.hset(name, "op", "[]")
    clock.advance(IDLE - 1)
    with pytest.raises(ScopeLimitReached) as refused:
        scopes.admit("carol:default")
    assert refused.value.retry_after == pytest.approx(1)
    assert holds(backend, "alice:default", clock) and holds(backend, "bob:default", clock)
    clock.advance(1)  # exactly idle_seconds after alice's and bob's last admission
    scopes.admit("carol:default")
    assert [holds(backend, s, clock) for s in ("alice:default", "bob:default")].count(False) == 1
    assert len(scopes.live()) == 2 and "carol:default" in scopes.live()
    gone = next(s for s in ("alice:default", "bob:default") if s not in scopes.live())
    assert gone not in backend.scopes()  # the one registry: operators (store usage/reset) see the same
    if isinstance(backend, RedisBackend):  # nothing of the reclaimed partition is left but its event stream
        client = backend.connection.shared
        left = set(keys_under(client, backend.prefix))
        assert not left & {k.encode() for k in store_keys.partition_keys(backend.prefix, gone)}
        assert not left & {k.encode() for k in store_keys.retired_keys(backend.prefix, gone)}


@pytest.mark.parametrize("make_backend", [BACKENDS["fakeredis"], BACKENDS["redis"]], indirect=True)
def test_partition_keys_name_every_key_a_partitions_writes_create(
    make_backend: Any, clock: FakeClock
) -> None:
    """What a reclaim deletes is all there is (a new per-partition key must be added to partition_keys)."""
    backend = make_backend()
    assert isinstance(backend, RedisBackend)
    fill(backend, "alice:acme", clock)
    backend.state_store().commit("alice:acme", ChangeSet(put={("doc", "plain"): {}}))  # a commit of its own
    written = {k.decode() for k in keys_under(backend.connection.shared, backend.prefix)}
    streams = {k for k in written if ":events:" in k}
    operations = {k for k in written if ":op:" in k}  # every write's recorded reply, on its own TTL
    assert streams and operations, written
    client = backend.connection.shared
    assert all(0 < client.pttl(k) <= 120_000 for k in operations)
    assert written - streams - operations == set(store_keys.partition_keys(backend.prefix, "alice:acme"))


def test_renewals_are_remembered_so_admitting_a_live_scope_costs_no_round_trip(
    backend: Backend, clock: FakeClock
) -> None:
    scopes = registry(backend, clock)
    scopes.admit("alice")
    before = backend.round_trips()
    for _ in range(5):
        scopes.admit("alice")
    assert backend.round_trips() == before
    clock.advance(scopes.renew_seconds)
    scopes.admit("alice")
    assert backend.round_trips() == before + (0 if backend.local else 1)
    assert scopes.live()["alice"] == clock.now


def test_racing_admissions_never_pass_the_limit(make_backend: Any, clock: FakeClock) -> None:
    """Sixteen threads, each with a registry of its own (its own renewals, its own connection), admit
    sixteen distinct scopes against a limit of five: exactly five get in."""
    first = make_backend()
    limits = ScopeLimits(max_scopes=5, idle_seconds=IDLE)
    backends = [first] + [make_backend() for _ in range(15)] if not first.local else [first] * 16
    admitted: list[str] = []
    refused: list[str] = []
    start = threading.Barrier(16)

    def worker(index: int) -> None:
        scopes = backends[index].scope_registry(limits, clock=clock)
        start.wait()
        try:
            scopes.admit(f"p{index}")
            admitted.append(f"p{index}")
        except ScopeLimitReached:
            refused.append(f"p{index}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(admitted) == 5 and len(refused) == 11
    assert set(first.scope_registry(limits, clock=clock).live()) == set(admitted)


def tag(key: str) -> str:
    return key.split("{", 1)[1].split("}", 1)[0]


def test_the_scopes_of_one_group_share_one_hash_tag() -> None:
    """A principal's tenants (``alice:acme``, ``alice:default``) and its tasks live in one cluster slot."""
    built = [
        key
        for scope in ("alice:default", "alice:acme", "alice:a%3Ab")
        for key in [
            *store_keys.partition_keys("q", scope),
            store_keys.task_events("q", f"{scope}/alice", "t"),
        ]
    ]
    assert {tag(key) for key in built} == {"alice"}
    assert tag(store_keys.documents("q", "bob:default")) == "bob"
    assert store_keys.documents("q", "alice") == "q:{alice}:doc"  # an ungrouped scope keeps its old keys


@given(st.lists(st.text(alphabet=":/{}%ab", max_size=6), min_size=2, max_size=2, unique=True))
def test_no_two_scopes_build_the_same_key(scopes: list[str]) -> None:
    first, second = scopes
    for build in (store_keys.documents, store_keys.counters):
        assert build("q", first) != build("q", second)
    assert set(store_keys.partition_keys("q", first)).isdisjoint(store_keys.partition_keys("q", second))
    assert store_keys.scope_registry("q") not in store_keys.partition_keys("q", first)
