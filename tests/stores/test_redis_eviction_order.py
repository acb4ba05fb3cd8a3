"""The Redis task store's eviction order: the evictable set is scored by the version of each task's last save.

Entries scored the earlier way, by time (a store written by the earlier release, or by one of its workers
during a rolling upgrade), are rescored on the next save, in their order, below every version to come, so
eviction still takes the oldest last update first.
"""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from stores import RedisBackend, TaskLimits
from stores.redis import keys as store_keys
from tests.conftest import BACKENDS, FakeClock

from .test_task_store import task  # completed by default, so evictable

REDIS_BACKENDS = [BACKENDS["fakeredis"], BACKENDS["redis"], BACKENDS["cluster"]]


def evictable(backend: RedisBackend, scope: str) -> list[tuple[str, float]]:
    name = store_keys.task_keys(backend.prefix, scope)["evictable"]
    pairs = backend.connection.shared.zrange(name, 0, -1, withscores=True)
    return [(field.decode().rpartition("/")[2], score) for field, score in pairs]


@pytest.mark.parametrize("make_backend", REDIS_BACKENDS, indirect=True)
def test_scores_are_the_versions_of_the_last_saves(make_backend: Any, clock: FakeClock) -> None:
    backend = make_backend()
    assert isinstance(backend, RedisBackend)
    store = backend.task_store(TaskLimits(max_tasks=3), clock=clock, describe=describe_task)
    versions = {name: store.save("s", task(name)) for name in ("a", "b")}
    versions["a"] = store.save("s", task("a"))  # saved again: now the newest
    assert evictable(backend, "s") == [("b", versions["b"]), ("a", versions["a"])]


@pytest.mark.parametrize("make_backend", REDIS_BACKENDS, indirect=True)
def test_entries_scored_by_time_are_rescored_in_their_order_and_evicted_first(
    make_backend: Any, clock: FakeClock
) -> None:
    backend = make_backend()
    assert isinstance(backend, RedisBackend)
    store = backend.task_store(TaskLimits(max_tasks=3), clock=clock, describe=describe_task)
    for name in ("a", "b", "c"):
        store.save("s", task(name))
    name = store_keys.task_keys(backend.prefix, "s")["evictable"]
    # As the earlier release stored them: by update time, here c (oldest), then a, then b.
    times = {"c": 1796297702.25, "a": 1796297703.5, "b": 1796297704.75}
    backend.connection.shared.zadd(name, {store_keys.task_field("s", t): at for t, at in times.items()})
    store.save("s", task("d"))  # at capacity: evicts the oldest, c
    assert store.load("s", "c") is None
    assert [field for field, _ in evictable(backend, "s")] == ["a", "b", "d"]
    scores = [score for _, score in evictable(backend, "s")]
    assert scores[0] < scores[1] < 0 < scores[2] and all(score == int(score) for score in scores)
    store.save("s", task("e"))  # then a, the older of the two rescored
    assert store.load("s", "a") is None and store.load("s", "b") is not None
