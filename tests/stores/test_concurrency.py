"""Real processes racing on one real Redis: quotas and task capacity hold across workers."""

from __future__ import annotations

import multiprocessing
import os
import uuid

import pytest

from stores import (
    ChangeSet,
    ConflictError,
    Quota,
    QuotaExceeded,
    RedisBackend,
    TaskLimits,
    TaskStoreFull,
    keys,
)

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
    store = RedisBackend(REDIS_URL, prefix=prefix).state_store()
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
    backend = RedisBackend(REDIS_URL, prefix=prefix)
    store = backend.task_store(TaskLimits())
    data = keys.task_keys(prefix)["data"]
    client = backend.connection.client
    start.wait()  # type: ignore[attr-defined]
    saved = refused = most = 0
    for i in range(60):
        state = "TASK_STATE_WORKING" if i < 4 else "TASK_STATE_COMPLETED"
        try:
            store.save(f"scope-{worker % 3}", {"id": f"w{worker}-{i}", "status": {"state": state}})
            saved += 1
        except TaskStoreFull:
            refused += 1
        most = max(most, client.hlen(data))
    return saved, refused, most


@pytest.fixture
def prefix():
    value = f"qt-mp-{uuid.uuid4().hex[:12]}"
    yield value
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match=f"{value}:*", count=500):
        client.delete(key)
    client.close()


def run(target, prefix: str) -> list:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(PROCESSES) as pool:
            pending = [pool.apply_async(target, (prefix, n, start)) for n in range(PROCESSES)]
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
    store = RedisBackend(REDIS_URL, prefix=prefix).state_store()
    assert store.counters("s", ["artifacts"]) == {"artifacts": LIMIT}
    keys = [("artifact", name) for name, _ in outcomes]
    assert {k[1] for k, v in store.read("s", keys).items() if v.value is not None} == stored_names
    assert sorted(store.read("s", [INDEX])[INDEX].value["ids"]) == sorted(stored_names)


def test_processes_saving_at_capacity_never_exceed_it(prefix: str) -> None:
    results = run(save_tasks, prefix)
    assert max(most for _, _, most in results) <= 128
    assert sum(saved for saved, _, _ in results) == PROCESSES * 60  # finished tasks can always be evicted
    backend = RedisBackend(REDIS_URL, prefix=prefix)
    client = backend.connection.client
    task_keys = keys.task_keys(prefix)
    stats = {k.decode(): int(v) for k, v in client.hgetall(task_keys["stats"]).items()}
    assert stats["count"] == client.hlen(task_keys["data"]) == 128
    assert stats["bytes"] == sum(len(v) for v in client.hvals(task_keys["data"]))
    store = backend.task_store()
    for worker in range(PROCESSES):  # active work survived every other worker's saves
        for i in range(4):
            assert store.load(f"scope-{worker % 3}", f"w{worker}-{i}") is not None
