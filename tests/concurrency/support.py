"""Helpers for the real-process concurrency tests: a crowd of spawned processes racing on one real Redis.

Every worker process builds its own ``Runtime`` over ``RedisBackend(REDIS_URL, prefix=P)`` and waits on one
shared barrier, so all of them start dispatching at the same moment. Nothing here is a test.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from quineling.runtime.context import Env, Retention, RuntimeLimits
from quineling.runtime.errors import QuinelingError
from quineling.runtime.library import CACHEABLE_KINDS
from quineling.runtime.runtime import DEFAULT_SCOPE, Runtime
from stores.base import StateStore, Versioned
from stores.cache import CachingStateStore
from stores.changes import ChangeSet, Key
from stores.errors import ConflictError
from stores.redis import RedisBackend, keys
from stores.redis.connection import make_client
from tests.support.redis_keys import delete_under

PROCESSES = 8
BARRIER_TIMEOUT = 60.0
Outcome = tuple[str, Any]  # ("ok", {operation, result}) or ("error", {code, message, path})

_barrier: Any = None


def prepare(barrier: Any) -> None:
    """Pool initializer: keep the shared barrier and warm the imports, so a round starts on time."""
    global _barrier
    _barrier = barrier
    Runtime()  # imports every operation module


CLUSTER_PREFIX = "qt-ccc-"  # a prefix for a race on the Redis Cluster (fresh_prefix(cluster=True))


def redis_url(prefix: str) -> str:
    """The store a race under ``prefix`` runs on: the Redis Cluster for a cluster prefix, else Redis. Spawned
    processes inherit both URLs from the test process's environment."""
    if prefix.startswith(CLUSTER_PREFIX):
        return os.environ["QUINELING_TEST_REDIS_CLUSTER_URL"]
    return os.environ["QUINELING_TEST_REDIS_URL"]


_opened: list[RedisBackend] = []


def redis_runtime(prefix: str, limits: RuntimeLimits | None = None, env: Env | None = None) -> Runtime:
    """A runtime of the test process itself on ``prefix`` (closed when the prefix is cleaned up); its store
    decides expiry by ``env.now`` when an ``env`` is given."""
    backend = RedisBackend(redis_url(prefix), prefix=prefix)
    _opened.append(backend)
    store = backend.state_store(clock=env.now if env else None)
    return Runtime(store=store, limits=limits, env=env)


def attempt(dispatch: Callable[[Any], dict[str, Any]], request: Any) -> Outcome:
    try:
        return "ok", dispatch(request)
    except QuinelingError as exc:
        return "error", exc.to_dict()


class GatedStore(StateStore):
    """A state store that holds each request at one point until every process has reached it.

    ``gate="commit"`` holds the first commit: all processes read the same state and compute on it, then their
    commits hit Redis together, so every decision is really taken inside the atomic commit (on two cores,
    ungated processes mostly run one after another). ``gate="read"`` holds right after the first read: all
    processes see the state before anyone commits, then race on, so later reads straddle the winner's commit.
    It also counts commits that lost a race.
    """

    def __init__(self, inner: StateStore, gate: str, wait: Callable[[], Any]) -> None:
        assert gate in ("commit", "read")
        self.inner = inner
        self.gate = gate
        self.wait = wait
        self.armed = False
        self.conflicts = 0

    def _pass(self, point: str) -> None:
        if self.armed and self.gate == point:
            self.armed = False
            self.wait()

    def read(self, scope: str, keys_: Iterable[Key]) -> dict[Key, Versioned]:
        documents = self.inner.read(scope, keys_)
        self._pass("read")
        return documents

    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        return self.inner.counters(scope, names)

    def commit(self, scope: str, changes: ChangeSet, *, task: Any = None) -> int | None:
        self._pass("commit")
        try:
            return self.inner.commit(scope, changes, task=task)
        except ConflictError:
            self.conflicts += 1
            raise


@dataclass
class Batch:
    """What one process saw: an outcome per request, and how many of its commits lost a race."""

    outcomes: list[Outcome]
    conflicts: int


def dispatch_together(
    prefix: str,
    requests: list[dict[str, Any]],
    limits: dict[str, int],
    gate: str = "commit",
    warm: list[dict[str, Any]] | None = None,
    at: tuple[float, float, float] | None = None,
) -> Batch:
    """Runs in a worker process: build a runtime, wait for everyone, then dispatch ``requests`` in order.

    Every request of every process must reach its gate (the scenarios are built so): request ``k`` of all
    processes passes it together. With ``warm``, the runtime reads through a read cache (as a server worker
    does), and dispatches those requests first, before anyone starts, to fill it. With ``at`` = (now, record
    TTL, idle TTL), the runtime and its store are stopped at that time, with that retention.
    """
    backend = RedisBackend(redis_url(prefix), prefix=prefix)
    env = Env(limits=RuntimeLimits(**limits))
    if at is not None:
        env.now, env.retention = (lambda: at[0]), Retention(at[1], at[2])
    state: StateStore = backend.state_store(clock=env.now)
    if warm is not None:
        state = CachingStateStore(state, CACHEABLE_KINDS)
    store = GatedStore(state, gate, lambda: _barrier.wait(BARRIER_TIMEOUT))
    runtime = Runtime(store=store, env=env)
    outcomes = []
    try:
        for request in warm or []:
            runtime.dispatch(request)
        _barrier.wait(BARRIER_TIMEOUT)
        for request in requests:
            store.armed = True
            outcomes.append(attempt(runtime.dispatch, request))
            assert not store.armed, f"every raced request must reach its gate ({gate})"
        return Batch(outcomes, store.conflicts)
    finally:
        backend.close()


@dataclass
class Crowd:
    """A warm pool of ``PROCESSES`` spawned processes sharing one barrier of as many parties."""

    pool: Any
    barrier: Any

    def race(
        self,
        prefix: str,
        requests: list[list[dict[str, Any]]],
        limits: dict[str, int] | None = None,
        gate: str = "commit",
        warm: list[dict[str, Any]] | None = None,
        at: tuple[float, float, float] | None = None,
    ) -> list[Batch]:
        """Process ``n`` dispatches ``requests[n]``; all start together. One task per process: each blocks on
        the barrier until all ``PROCESSES`` tasks are taken, so no process can take two. ``warm`` and ``at``:
        see :func:`dispatch_together`."""
        assert len(requests) == PROCESSES
        pending = [
            self.pool.apply_async(dispatch_together, (prefix, batch, limits or {}, gate, warm, at))
            for batch in requests
        ]
        return [result.get(timeout=BARRIER_TIMEOUT * 2) for result in pending]


def fresh_prefix(cluster: bool = False) -> Iterator[str]:
    """A unique key prefix (on the cluster with ``cluster``); every key under it is deleted afterwards."""
    prefix = f"{CLUSTER_PREFIX if cluster else 'qt-cc-'}{uuid.uuid4().hex[:12]}"
    yield prefix
    while _opened:
        _opened.pop().close()
    delete_under(redis_url(prefix), prefix)


def wipe_state(prefix: str, scope: str = DEFAULT_SCOPE, url: str | None = None) -> None:
    """Delete one scope's runtime state (documents, versions, counters), leaving tasks alone (on ``url``, or
    the store :func:`redis_url` names for the prefix)."""
    client = make_client(url or redis_url(prefix), socket_timeout=5.0)
    try:
        for key in (
            keys.documents(prefix, scope),
            keys.versions(prefix, scope),
            keys.counters(prefix, scope),
        ):
            client.delete(key)
    finally:
        client.close()


def stored(prefix: str, kind: str, scope: str = DEFAULT_SCOPE, url: str | None = None) -> dict[str, Any]:
    """Every stored document of ``kind`` in a scope, by id, read straight from Redis (``url`` as above)."""
    client = make_client(url or redis_url(prefix), socket_timeout=5.0)
    try:
        everything = client.hgetall(keys.documents(prefix, scope))
    finally:
        client.close()
    documents = {}
    for field, value in everything.items():
        held_kind, ident = (unquote(part) for part in field.decode().split("/", 1))  # see stores.redis.keys
        if held_kind == kind:
            documents[ident] = json.loads(value)
    return documents


def counters(prefix: str, *names: str) -> dict[str, int]:
    backend = RedisBackend(redis_url(prefix), prefix=prefix)
    try:
        return backend.state_store().counters(DEFAULT_SCOPE, names)
    finally:
        backend.close()


def wire(value: Any) -> str:
    """The order-preserving compact JSON of a value: equal strings mean byte-identical responses."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def outcomes_of(batches: list[Batch]) -> list[Outcome]:
    return [outcome for batch in batches for outcome in batch.outcomes]


def conflicts_of(batches: list[Batch]) -> int:
    return sum(batch.conflicts for batch in batches)


def oks(outcomes: list[Outcome]) -> list[Any]:
    return [value for kind, value in outcomes if kind == "ok"]


def errors(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    return [value for kind, value in outcomes if kind == "error"]


def settled(batches: list[Batch], conflicts: int) -> list[Outcome]:
    """Every outcome of a race, once it is checked that exactly ``conflicts`` commits lost it (``PROCESSES - 1``
    where one commit wins: each loser lost once, recomputed, and did not commit)."""
    assert conflicts_of(batches) == conflicts
    return outcomes_of(batches)


def one_acknowledgement(outcomes: list[Outcome], count: int) -> Any:
    """The result every one of ``count`` racing requests got, byte-identical: none refused, none busy."""
    assert errors(outcomes) == []
    answers = [wire(value) for value in oks(outcomes)]
    assert len(answers) == count and len(set(answers)) == 1
    return oks(outcomes)[0]["result"]


def one_winner(outcomes: list[Outcome], refusal: tuple[str, str]) -> Any:
    """The one request that won a race; every other one was refused with ``refusal`` (code, path)."""
    (winner,) = oks(outcomes)
    refusals = errors(outcomes)
    assert len(refusals) == len(outcomes) - 1
    assert {(e["code"], e["path"]) for e in refusals} == {refusal}
    return winner


def fire_threads(count: int, call: Callable[[int], Any]) -> list[Any]:
    """Run ``call(n)`` for ``n < count`` on as many threads released by one barrier; returns in order."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def body(n: int) -> None:
        barrier.wait(BARRIER_TIMEOUT)
        try:
            results[n] = call(n)
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            results[n] = exc

    threads = [threading.Thread(target=body, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BARRIER_TIMEOUT * 2)
    for value in results:
        if isinstance(value, BaseException):
            raise value
    return results
