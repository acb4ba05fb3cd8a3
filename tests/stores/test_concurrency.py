"""Real processes racing on one real Redis and on a Redis Cluster: quotas, task capacity and task versions hold
across workers."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections.abc import Iterator

import pytest

from quineling.a2a.task_facts import describe_task
from stores import (
    ChangeSet,
    ConflictError,
    Quota,
    QuotaExceeded,
    RedisBackend,
    TaskConflict,
    TaskLimits,
    TaskStoreFull,
)
from stores.redis import keys
from tests.conftest import ON_CLUSTER, cluster_url
from tests.support.redis_keys import delete_under

REDIS_URL = os.environ.get("QUINELING_TEST_REDIS_URL", "")
pytestmark = [
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.skipif(not REDIS_URL, reason="set QUINELING_TEST_REDIS_URL to run against real Redis"),
]
PROCESSES, ATTEMPTS, LIMIT = 8, 5, 20
INDEX = ("index", "all")


def commit_artifacts(prefix: str, worker: int, start: object) -> list[tuple[str, str]]:
    """Each worker commits its own artifacts, all appending to one shared index document."""
    store = RedisBackend(url_of(prefix), prefix=prefix).state_store()
    start.wait()  # type: ignore[attr-defined]
    outcomes = []
    for attempt in range(ATTEMPTS):
        name = f"{worker}-{attempt}"
        key = ("artifact", name)
        for _ in range(1000):
            current = store.read("s", [INDEX])[INDEX]
            listed = (current.value or {"ids": []})["ids"]
            change = ChangeSet(
                expect={INDEX: current.version, key: 0},
                put={INDEX: {"ids": [*listed, name]}, key: {"worker": worker}},
                quotas=(Quota("artifacts", 1, LIMIT),),
            )
            try:
                store.commit("s", change)
                outcomes.append((name, "ok"))
            except ConflictError:
                continue
            except QuotaExceeded:
                outcomes.append((name, "quota"))
            break
        else:
            outcomes.append((name, "gave-up"))
    return outcomes


def save_tasks(prefix: str, worker: int, start: object) -> tuple[int, int, int]:
    """Each worker saves finished tasks into a shared store at capacity; reports saves, refusals, max seen."""
    backend = RedisBackend(url_of(prefix), prefix=prefix)
    store = backend.task_store(TaskLimits(), describe=describe_task)
    data = keys.task_keys(prefix, "t")["data"]  # capacity is per tenant: every worker shares tenant "t"
    client = backend.connection.client
    start.wait()  # type: ignore[attr-defined]
    saved = refused = most = 0
    for i in range(60):
        state = "TASK_STATE_WORKING" if i < 4 else "TASK_STATE_COMPLETED"
        try:
            store.save(f"t/user-{worker % 3}", {"id": f"w{worker}-{i}", "status": {"state": state}})
            saved += 1
        except TaskStoreFull:
            refused += 1
        most = max(most, client.hlen(data))
    return saved, refused, most


RACED_TASKS, APPENDS = 10, 10


def race_one_version(prefix: str, worker: int, start: object) -> list[str]:
    """Every worker reads the same version of each task, then all save it conditionally at once."""
    store = RedisBackend(url_of(prefix), prefix=prefix).task_store(describe=describe_task)
    held = [store.load_versioned("s", f"raced-{i}") for i in range(RACED_TASKS)]
    start.wait()  # type: ignore[attr-defined]
    outcomes = []
    for current in held:
        task = {**(current.value or {}), "status": {"state": "TASK_STATE_COMPLETED"}, "winner": worker}
        try:
            store.save("s", task, [{"winner": worker}], expect_version=current.version)
            outcomes.append("won")
        except TaskConflict:
            outcomes.append("lost")
    return outcomes


def append_with_retries(prefix: str, worker: int, start: object) -> int:
    """Read-modify-write of one shared task; returns how many conflicts the worker had to retry."""
    store = RedisBackend(url_of(prefix), prefix=prefix).task_store(describe=describe_task)
    start.wait()  # type: ignore[attr-defined]
    conflicts = 0
    for n in range(APPENDS):
        while True:
            current = store.load_versioned("s", "shared")
            assert current.value is not None
            current.value["history"].append(f"{worker}-{n}")
            try:
                store.save("s", current.value, [{"n": f"{worker}-{n}"}], expect_version=current.version)
                break
            except TaskConflict:
                conflicts += 1
    return conflicts


CLUSTER_PREFIX = "qt-mpc-"


def url_of(prefix: str) -> str:
    """The store a race runs on, told by its prefix: the spawned processes inherit the cluster's URL through the
    environment (the fixture puts it there)."""
    return os.environ["QUINELING_TEST_REDIS_CLUSTER_URL"] if prefix.startswith(CLUSTER_PREFIX) else REDIS_URL


@pytest.fixture(params=["redis", pytest.param("cluster", marks=ON_CLUSTER)])
def prefix(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every race runs on real Redis and on a three-master Redis Cluster (docs/cluster.md)."""
    if request.param == "cluster":
        monkeypatch.setenv("QUINELING_TEST_REDIS_CLUSTER_URL", cluster_url())
        value = f"{CLUSTER_PREFIX}{uuid.uuid4().hex[:12]}"
    else:
        value = f"qt-mp-{uuid.uuid4().hex[:12]}"
    yield value
    delete_under(url_of(value), value)


def run(target, prefix: str, *, barrier: bool = False) -> list:
    """Run ``target(prefix, worker, start)`` in PROCESSES processes; ``start.wait()`` releases them together.

    With ``barrier`` no worker passes ``start.wait()`` until every worker has reached it (so work done
    before it, such as a read, is done by all before any worker goes on)."""
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(PROCESSES, timeout=60) if barrier else manager.Event()
        with context.Pool(PROCESSES) as pool:
            pending = [pool.apply_async(target, (prefix, n, start)) for n in range(PROCESSES)]
            if not barrier:
                start.set()
            return [result.get(timeout=120) for result in pending]


def test_processes_racing_for_quota_store_exactly_the_limit(prefix: str) -> None:
    """8 processes x 5 attempts against a limit of 20: exactly 20 stored, the rest refused, none lost."""
    outcomes = [item for worker in run(commit_artifacts, prefix) for item in worker]
    stored_names = {name for name, outcome in outcomes if outcome == "ok"}
    assert len(stored_names) == LIMIT
    assert sorted(outcome for _, outcome in outcomes) == ["ok"] * LIMIT + ["quota"] * (
        PROCESSES * ATTEMPTS - LIMIT
    )
    store = RedisBackend(url_of(prefix), prefix=prefix).state_store()
    assert store.counters("s", ["artifacts"]) == {"artifacts": LIMIT}
    keys = [("artifact", name) for name, _ in outcomes]
    assert {k[1] for k, v in store.read("s", keys).items() if v.value is not None} == stored_names
    assert sorted(store.read("s", [INDEX])[INDEX].value["ids"]) == sorted(stored_names)


def test_processes_saving_at_capacity_never_exceed_it(prefix: str) -> None:
    results = run(save_tasks, prefix)
    assert max(most for _, _, most in results) <= 128
    assert sum(saved for saved, _, _ in results) == PROCESSES * 60  # finished tasks can always be evicted
    backend = RedisBackend(url_of(prefix), prefix=prefix)
    client = backend.connection.client
    task_keys = keys.task_keys(prefix, "t")
    stats = {k.decode(): int(v) for k, v in client.hgetall(task_keys["stats"]).items()}
    assert stats["count"] == client.hlen(task_keys["data"]) == 128
    assert stats["bytes"] == sum(len(v) for v in client.hvals(task_keys["data"]))
    store = backend.task_store(describe=describe_task)
    for worker in range(PROCESSES):  # active work survived every other worker's saves
        for i in range(4):
            assert store.load(f"t/user-{worker % 3}", f"w{worker}-{i}") is not None


def test_processes_racing_conditional_saves_of_one_version_have_exactly_one_winner(prefix: str) -> None:
    store = RedisBackend(url_of(prefix), prefix=prefix).task_store(describe=describe_task)
    for i in range(RACED_TASKS):
        store.save("s", {"id": f"raced-{i}", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}, [{"n": 0}])
    results = run(race_one_version, prefix, barrier=True)
    for i in range(RACED_TASKS):
        outcomes = [worker[i] for worker in results]
        assert sorted(outcomes) == ["lost"] * (PROCESSES - 1) + ["won"], i
        winner = outcomes.index("won")
        assert store.load("s", f"raced-{i}")["winner"] == winner
        # Only the winner's events were appended: a losing save changed nothing.
        assert [e.payload for e in store.read_events("s", f"raced-{i}", None, 0)] == [
            {"n": 0},
            {"winner": winner},
        ]


def test_processes_doing_read_modify_write_lose_no_update(prefix: str) -> None:
    store = RedisBackend(url_of(prefix), prefix=prefix).task_store(describe=describe_task)
    store.save("s", {"id": "shared", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}, "history": []})
    run(append_with_retries, prefix)
    expected = sorted(f"{w}-{n}" for w in range(PROCESSES) for n in range(APPENDS))
    assert sorted(store.load("s", "shared")["history"]) == expected
    assert sorted(e.payload["n"] for e in store.read_events("s", "shared", None, 0)) == expected
