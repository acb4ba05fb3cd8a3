"""The Redis backend on a Redis Cluster under faults (docs/cluster.md, "How failover looks to clients"), on a
cluster of its own (tests/support/redis_cluster.py FAULT_PORTS, append-only files synced every second): the script cache
flushed on one node under load, one master killed and brought back, slots resharded under load. Each load
counts what it was told succeeded; the store must hold exactly that — nothing lost, nothing applied twice.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
from redis.crc import key_slot

from quineling.a2a.task_facts import describe_task
from stores import ChangeSet, Quota, RedisBackend, StoreError, StoreUnavailable, TaskLimits
from stores.redis import keys as store_keys
from tests.conftest import ON_CLUSTER
from tests.support import redis_cluster

pytestmark = [*ON_CLUSTER, pytest.mark.slow]

DONE = {"state": "TASK_STATE_COMPLETED"}
PAUSE_SECONDS = 0.005  # between one worker's writes: a steady load that leaves the box's CPU to the cluster
BOUND_SECONDS = 10.0  # how long a call for a dead master's scope may take to fail


@pytest.fixture(scope="module")
def cluster() -> Iterator[redis_cluster.LocalCluster]:
    local = redis_cluster.LocalCluster(redis_cluster.FAULT_PORTS, aof=True)
    local.stop()  # a fresh cluster: an earlier run may have left slots moved or a node down
    local.ensure()
    yield local
    local.stop()


@pytest.fixture
def backend(cluster: redis_cluster.LocalCluster) -> Iterator[RedisBackend]:
    made = RedisBackend(cluster.url, prefix=f"qf{time.monotonic_ns() % 10**9}", socket_timeout=2.0)
    yield made
    made.close()


def scope_on(cluster: redis_cluster.LocalCluster, port: int, stem: str, count: int = 1) -> list[str]:
    """``count`` scope names whose slot the master on ``port`` serves."""
    found = []
    ranges = cluster.slot_ranges()
    for n in range(100_000):
        name = f"{stem}{n}"
        if redis_cluster.owner_of(ranges, key_slot(name.encode())) == port:
            found.append(name)
            if len(found) == count:
                return found
    raise LookupError(port)


class Load:
    """Threads committing to scopes until stopped: each commit puts a new document, adds 1 to counter ``n``
    and saves a new task; every outcome is counted."""

    def __init__(self, backend: RedisBackend, scopes: list[str], threads: int = 3) -> None:
        self.state = backend.state_store()
        self.tasks = backend.task_store(TaskLimits(max_tasks=100_000), describe=describe_task)
        self.scopes = scopes
        self.done: dict[str, list[str]] = {scope: [] for scope in scopes}  # the ids told they succeeded
        self.retryable: list[str] = []
        self.other: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,)) for i in range(threads)]

    def _run(self, worker: int) -> None:
        n = 0
        while not self._stop.wait(PAUSE_SECONDS):
            scope = self.scopes[(worker + n) % len(self.scopes)]
            n += 1
            key = ("doc", f"w{worker}-{n}")
            try:
                self.state.commit(
                    scope, ChangeSet(expect={key: 0}, put={key: {}}, quotas=(Quota("n", 1, 10**9),))
                )
                self.tasks.save(f"{scope}/u", {"id": f"w{worker}-{n}", "contextId": "c", "status": DONE})
            except StoreUnavailable as error:
                with self._lock:
                    self.retryable.append(str(error))
                continue
            except BaseException as error:  # noqa: BLE001 - reported by the test
                with self._lock:
                    self.other.append(error)
                continue
            with self._lock:
                self.done[scope].append(key[1])

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


def assert_exact(backend: RedisBackend, load: Load) -> None:
    """Each scope holds every document and task its load was told succeeded, its counter counts each
    document once, and its task count is the tasks it holds; beyond those, only calls that failed
    retryably (whose outcome the caller cannot know) may have landed."""
    assert not load.other, load.other[:3]
    state = load.state
    for scope, done in load.done.items():
        usage = backend.usage(scope)
        read = state.read(scope, [("doc", ident) for ident in done])
        assert all(found.value is not None for found in read.values()), scope  # nothing lost
        assert all(load.tasks.load(f"{scope}/u", ident) is not None for ident in done), scope
        assert usage.counters.get("n", 0) == usage.documents, (scope, usage)  # no delta applied twice
        assert len(done) <= usage.tasks <= usage.documents <= len(done) + len(load.retryable), (scope, usage)
        data = store_keys.task_keys(backend.prefix, scope)["data"]
        assert usage.tasks == backend.connection.shared.hlen(data)  # the capacity count is exact


def test_a_flushed_script_cache_is_reloaded_within_the_call(
    cluster: redis_cluster.LocalCluster, backend: RedisBackend
) -> None:
    scopes = [*scope_on(cluster, cluster.ports[0], "f", 2), *scope_on(cluster, cluster.ports[1], "g", 1)]
    node = cluster.node(cluster.ports[0])
    with Load(backend, scopes) as load:
        for _ in range(20):
            node.script_flush()
            time.sleep(0.05)
    node.close()
    assert all(load.done.values()), load.done
    # redis-py's Script loads it again and resends, once per call: nothing but a retryable error is allowed
    # (what the store promises for a lost script cache), and only for a call that a second flush hit between
    # the reload and the resend, which a loaded machine makes possible: far fewer than the flushes.
    assert not load.other, load.other[:3]
    assert len(load.retryable) < 20, load.retryable[:3]
    assert_exact(backend, load)


def test_a_dead_master_fails_its_scopes_quickly_and_only_them(
    cluster: redis_cluster.LocalCluster, backend: RedisBackend
) -> None:
    victim_port = cluster.ports[1]
    (doomed,) = scope_on(cluster, victim_port, "d")
    (alive,) = scope_on(cluster, cluster.ports[2], "a")
    state = backend.state_store()
    before = ("doc", "before")
    for scope in (doomed, alive):
        state.commit(scope, ChangeSet(expect={before: 0}, put={before: {"kept": True}}))
    time.sleep(1.5)  # the nodes fsync their append-only files every second
    cluster.kill(victim_port)
    try:
        for attempt in range(3):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                state.commit(doomed, ChangeSet(put={("doc", f"x{attempt}"): {}}))
            assert time.monotonic() - started < BOUND_SECONDS
            state.commit(alive, ChangeSet(put={("doc", f"x{attempt}"): {}}))  # other scopes carry on
        backend.ping()  # the store is reachable while part of it is
    finally:
        cluster.start_node(victim_port)
    cluster.wait_healthy()
    deadline = time.monotonic() + BOUND_SECONDS
    while True:  # the client reconnects on its next call; the first ones may still meet the old socket
        try:
            state.commit(doomed, ChangeSet(put={("doc", "after"): {}}))
            break
        except StoreError:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    assert state.read(doomed, [before])[before].value == {"kept": True}  # its append-only file had it


def test_resharding_under_load_loses_and_doubles_nothing(
    cluster: redis_cluster.LocalCluster, backend: RedisBackend
) -> None:
    source, target = cluster.ports[0], cluster.ports[2]
    cluster.wait_healthy()
    first = min(start for start, _, port in cluster.slot_ranges() if port == source)
    moved = 4
    names = []
    for n in range(200_000):
        if first <= key_slot(f"m{n}".encode()) < first + moved:
            names.append(f"m{n}")
            if len(names) == 2:
                break
    (steady,) = scope_on(cluster, cluster.ports[1], "s")
    with Load(backend, [*names, steady]) as load:
        time.sleep(0.5)
        subprocess.run(
            [str(redis_cluster.REDIS_CLI), "--cluster", "reshard", f"127.0.0.1:{source}",
             "--cluster-from", cluster.node_id(source), "--cluster-to", cluster.node_id(target),
             "--cluster-slots", str(moved), "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, timeout=60,
        )  # fmt: skip
        time.sleep(0.5)
    for name in names:
        assert cluster.slot_owner(key_slot(name.encode())) == target  # the slot did move under the load
    assert all(load.done.values()), load.done
    assert_exact(backend, load)
    for error in load.retryable:
        assert "TRYAGAIN" in error or "ASK" in error or "MOVED" in error or "Timeout" in error, error
