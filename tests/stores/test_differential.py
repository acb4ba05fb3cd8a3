"""Random operation sequences give the same answers from the memory store and the Redis store (fakeredis).

The conformance suite pins each rule by example; this checks that the two implementations of the rules
(Python and Lua) also agree on the interplay of eviction, expiry, replacement, versions and listing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from quineling.a2a.task_facts import describe_task
from stores import Backend, ChangeSet, MemoryBackend, Quota, RedisBackend, StoreError, TaskLimits, TaskQuery
from stores.base import TaskWrite

STATES = ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"]
SCOPES = ["a/x", "a/y", "b"]  # two users of tenant "a" share its capacity; tenant "b" has its own
STAMPS = ["2026-01-01T00:00:00Z", "2026-01-01T02:00:00+02:00", "2026-01-01T00:00:01Z", "nope", None]
LIMITS = TaskLimits(max_tasks=4, max_total_bytes=900, max_task_bytes=400, paused_ttl_seconds=10)

save = st.tuples(
    st.just("save"),
    st.sampled_from(SCOPES),
    st.sampled_from([f"t{i}" for i in range(6)]),
    st.sampled_from(STATES),
    st.sampled_from(STAMPS),
    st.integers(0, 350),
)
conditional = st.tuples(
    st.just("csave"),
    st.sampled_from(SCOPES),
    st.sampled_from([f"t{i}" for i in range(6)]),
    st.sampled_from(STATES),
    st.integers(0, 350),
    st.one_of(st.just("loaded"), st.integers(0, 8)),  # the version just loaded, or a guess
)
load = st.tuples(st.just("load"), st.sampled_from(SCOPES), st.sampled_from([f"t{i}" for i in range(6)]))
listing = st.tuples(
    st.just("list"), st.sampled_from(SCOPES), st.integers(1, 3), st.sampled_from([None, *STATES])
)
advance = st.tuples(st.just("advance"), st.integers(1, 6))
commit = st.tuples(  # a change set (one counted document) with a task save, all or nothing
    st.just("commit"),
    st.sampled_from(SCOPES),
    st.sampled_from([f"t{i}" for i in range(6)]),
    st.sampled_from(STATES),
    st.integers(0, 350),
    st.one_of(st.none(), st.just("loaded"), st.integers(0, 8)),
    st.sampled_from(["d1", "d2", "d3"]),
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def commit_with_task(backend: Backend, scope: str, changes: ChangeSet, write: TaskWrite) -> int:
    """The state commit with a task attached; returns the task's new version."""
    version = backend.state_store().commit(scope, changes, task=write)
    assert version is not None
    return version


def apply(backend: Any, store: Any, clock: Clock, op: tuple) -> Any:
    try:
        if op[0] == "advance":
            clock.now += op[1]
            return None
        if op[0] == "save":
            _, scope, task_id, state, stamp, pad = op
            status = {"state": state} if stamp is None else {"state": state, "timestamp": stamp}
            clock.now += 0.001  # distinct last updates: ties in eviction order are unspecified
            return store.save(scope, {"id": task_id, "status": status, "pad": "x" * pad}, [{"s": state}])
        if op[0] == "csave":
            _, scope, task_id, state, pad, expect = op
            if expect == "loaded":
                expect = store.load_versioned(scope, task_id).version
            clock.now += 0.001
            task = {"id": task_id, "status": {"state": state}, "pad": "x" * pad}
            return store.save(scope, task, [{"s": state}], expect_version=expect)
        if op[0] == "commit":
            _, scope, task_id, state, pad, expect, doc = op
            if expect == "loaded":
                expect = store.load_versioned(scope, task_id).version
            clock.now += 0.001
            partition, key = scope.split("/")[0], ("doc", doc)
            version = backend.state_store().read(partition, [key])[key].version
            changes = ChangeSet({key: version}, {key: {"by": task_id}}, quotas=(Quota("docs", 1, 4),))
            task = {"id": task_id, "status": {"state": state}, "pad": "x" * pad}
            write = TaskWrite(store, scope, task, ({"s": state},), expect)
            saved = commit_with_task(backend, partition, changes, write)
            return saved, backend.state_store().counters(partition, ["docs"])
        if op[0] == "load":
            return store.load_versioned(op[1], op[2])
        _, scope, size, status = op
        pages, token = [], ""
        while True:
            page = store.list(scope, TaskQuery(status=status, page_size=size, page_token=token))
            pages.append(([t["id"] for t in page.tasks], page.total_size))
            if not (token := page.next_page_token):
                return pages
    except StoreError as error:
        return type(error).__name__


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(save, save, conditional, commit, load, listing, advance), min_size=1, max_size=40))
def test_memory_and_redis_agree(ops: list[tuple]) -> None:
    import fakeredis

    clocks = Clock(), Clock()
    backends = [MemoryBackend(), RedisBackend("redis://fake", client=fakeredis.FakeRedis())]
    stores = [
        backend.task_store(LIMITS, clock=clock, describe=describe_task)
        for backend, clock in zip(backends, clocks, strict=True)
    ]
    for op in ops:
        outcomes = [apply(b, s, c, op) for b, s, c in zip(backends, stores, clocks, strict=True)]
        assert outcomes[0] == outcomes[1], op
