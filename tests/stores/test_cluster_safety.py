"""The Redis backend is correct on a Redis Cluster by construction (docs/cluster.md):

* every command and script call it makes keeps its keys in one slot, and none walks the keyspace, selects a
  database or publishes to the whole cluster — checked by watching every call of a workload that uses every
  store operation (``Connection.observe``), keys as the server itself names them (``COMMAND GETKEYS``);
* a write script's repeat (a retry after a lost reply) applies nothing twice;
* a flushed script cache is recovered from within the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from quineling.a2a.task_facts import describe_task
from stores import (
    Backend,
    ChangeSet,
    Lease,
    Quota,
    RedisBackend,
    ScopeLimits,
    TaskLimits,
    TaskQuery,
    TaskWrite,
)
from stores.redis import keys as store_keys
from stores.redis.connection import CLUSTER_SCHEMES, once_source
from tests.conftest import BACKENDS, FakeClock

A, B = ("doc", "a"), ("doc", "b")
DONE = {"state": "TASK_STATE_COMPLETED"}
ON_SERVERS = [BACKENDS["redis"], BACKENDS["cluster"]]
# Never on a request path: a walk of the keyspace, a database switch, a cluster-wide broadcast.
FORBIDDEN = {"KEYS", "SCAN", "SELECT", "PUBLISH", "SPUBLISH", "FLUSHDB", "FLUSHALL", "SWAPDB", "MOVE"}


def task(task_id: str) -> dict[str, Any]:
    return {"id": task_id, "contextId": "c", "status": DONE}


def workload(backend: Backend, clock: FakeClock) -> None:
    """Every store operation once or more, with scopes of several groups (and a reclaim)."""
    registry = backend.scope_registry(ScopeLimits(max_scopes=2, idle_seconds=100), clock=clock)
    state = backend.state_store(clock=clock)
    tasks = backend.task_store(TaskLimits(max_tasks=2), describe=describe_task, clock=clock)
    for scope in ("alice:acme", "bob"):
        registry.admit(scope)
        state.commit(
            scope,
            ChangeSet(
                expect={A: 0}, put={A: {"a": 1}}, quotas=(Quota("n", 1, 9),), leases={A: Lease(clock.now + 5)}
            ),
        )
        state.read(scope, [A, B])
        state.counters(scope, ["n"])
        for n in range(3):  # the third save evicts
            tasks.save(f"{scope}/u", task(f"t{n}"), [{"n": n}])
        tasks.load_versioned(f"{scope}/u", "t1")
        tasks.list(f"{scope}/u", TaskQuery(page_size=1))
        tasks.read_events(f"{scope}/u", "t2", None, 0)
        tasks.read_events(f"{scope}/u", "t2", None, 0.01)
        tasks.last_event_id(f"{scope}/u", "t2")
        write = TaskWrite(tasks, f"{scope}/u", task("t9"), ({"n": 9},), None)
        tasks.save_with_changes(scope, ChangeSet(expect={B: 0}, put={B: {}}), write, clock.now)
        backend.usage(scope, now=clock.now)
    backend.scopes()
    backend.reset("bob")
    clock.advance(100)
    registry.forget_renewals()
    registry.admit("carol:x")  # reclaims one of the two idle scopes: claim, delete, finish
    backend.ping()


@pytest.fixture
def watched(make_backend: Any) -> Iterator[tuple[RedisBackend, list[tuple[Any, ...]]]]:
    backend = make_backend()
    assert isinstance(backend, RedisBackend)
    calls: list[tuple[Any, ...]] = []
    backend.connection.observe(calls.append)
    yield backend, calls


def slot_of(key: str | bytes) -> int:
    return key_slot(key if isinstance(key, bytes) else key.encode())


def server_keys(probe: Any, call: tuple[Any, ...]) -> list[bytes]:
    """The keys of one call as the server names them ."""
    try:
        return list(probe.command_getkeys(*call))
    except redis.ResponseError:  # a command without keys ("The command has no key arguments")
        return []


@pytest.mark.parametrize("make_backend", ON_SERVERS, indirect=True)
def test_every_call_keeps_its_keys_in_one_slot(
    watched: tuple[RedisBackend, list[tuple[Any, ...]]], clock: FakeClock
) -> None:
    backend, calls = watched
    workload(backend, clock)
    names = {str(call[0]).upper() for call in calls}
    assert {"EVALSHA", "HMGET", "XREAD", "XREVRANGE", "ZRANGE", "HKEYS", "DEL", "PING"} <= names, names
    assert not names & FORBIDDEN
    probe = redis.Redis.from_url(plain_url(backend))
    try:
        spans = []
        for call in calls:
            slots = {slot_of(key) for key in server_keys(probe, call)}
            if len(slots) > 1:
                spans.append(call[:1] + tuple(server_keys(probe, call)))
        assert not spans, spans
        scripts = [call for call in calls if str(call[0]).upper() == "EVALSHA"]
        assert all(server_keys(probe, call) for call in scripts)  # every script names its keys
    finally:
        probe.close()


def plain_url(backend: RedisBackend) -> str:
    """A single server to ask COMMAND GETKEYS (on a cluster: one of its primaries)."""
    if backend.url.split("://", 1)[0] in CLUSTER_SCHEMES:
        node = backend.connection.shared.get_primaries()[0]
        return f"redis://{node.host}:{node.port}/0"
    return backend.url


@pytest.mark.parametrize("make_backend", [BACKENDS["redis"]], indirect=True)
def test_the_walk_catches_a_call_across_slots(make_backend: Any) -> None:
    """The check above can fail: a two-key command over two scopes spans two slots (shown on the single
    server, which runs it without complaint)."""
    backend = make_backend()
    assert isinstance(backend, RedisBackend)
    probe = redis.Redis.from_url(backend.url)
    try:
        keys = server_keys(probe, ("MGET", "q:{alice}:doc", "q:{bob}:doc"))
        assert len({slot_of(key) for key in keys}) == 2
    finally:
        probe.close()


# --- a repeated write applies nothing twice --------------------------------------------------------------


@pytest.mark.parametrize("make_backend", ON_SERVERS, indirect=True)
def test_a_write_repeated_after_its_reply_was_lost_applies_once(
    make_backend: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each write script runs, its reply is lost (a connection error after the server applied it), and the
    call is repeated, as our repeat and the cluster client's own both do: the repeat answers the first run's
    reply and nothing is applied twice — no doubled event, quota delta or version bump."""
    backend = make_backend()
    state = backend.state_store(clock=clock)
    tasks = backend.task_store(describe=describe_task, clock=clock)
    sent = redis.commands.core.Script.__call__
    lost: list[str] = []

    def lose_first_reply(self: Any, keys: Any = None, args: Any = None, client: Any = None) -> Any:
        reply = sent(self, keys, args, client)
        if not lost:
            lost.append("once")
            raise redis.ConnectionError("reply lost")
        return reply

    monkeypatch.setattr(redis.commands.core.Script, "__call__", lose_first_reply)
    versions: dict[Any, int] = {}
    state.commit("s", ChangeSet(expect={A: 0}, put={A: {}}, quotas=(Quota("n", 1, 5),)), versions=versions)
    lost.clear()
    version = tasks.save("s/u", task("t"), [{"e": 1}])
    lost.clear()
    write = TaskWrite(tasks, "s/u", task("t"), ({"e": 2},), version)
    both = tasks.save_with_changes(
        "s", ChangeSet(expect={B: 0}, put={B: {}}, quotas=(Quota("n", 1, 5),)), write, clock.now
    )
    lost.clear()
    held = backend.reset("s")
    monkeypatch.undo()
    assert versions == {A: 1} and both[0] == version + 1 and both[1] == {B: 1}
    assert held.counters == {"n": 2} and held.tasks == 1  # each quota delta once, one task
    assert backend.usage("s").is_empty and state.read("s", [A])[A].value is None


@pytest.mark.parametrize("make_backend", ON_SERVERS, indirect=True)
def test_a_doubled_call_answers_the_first_reply(make_backend: Any, clock: FakeClock) -> None:
    """The same call twice (the same operation key), straight at the script: the second changes nothing."""
    backend = make_backend()
    assert isinstance(backend, RedisBackend)
    tasks = backend.task_store(describe=describe_task, clock=clock)
    tasks.save("s/u", task("t"), [{"e": 1}])
    conn = backend.connection
    script = conn.shared.register_script(once_source("expire_paused", "task_write", "task_save"))
    names = tasks._keys("s/u")  # type: ignore[attr-defined]
    stream = store_keys.task_events(backend.prefix, "s/u", "t")
    _, _, args = tasks._write_args("s/u", task("t"), [{"e": 2}], None, None)  # type: ignore[attr-defined]
    claims = tasks._claim_keys("s/u")  # type: ignore[attr-defined]
    recorded = [*names, stream, *claims, store_keys.operation(names[0], "fixed-op")]
    first = script(recorded, args, client=conn.shared)
    second = script(recorded, args, client=conn.shared)
    assert first == second and len(tasks.read_events("s/u", "t", None, 0)) == 2  # e:1 and e:2, once
    assert tasks.load_versioned("s/u", "t").version == int(first[2])
