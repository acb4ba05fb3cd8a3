"""Runtime capacity under real concurrency — 8 processes, one real Redis, limits decided inside the commit."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from quineling.runtime.context import RuntimeLimits
from tests.concurrency.support import PROCESSES, Crowd, counters, errors, oks, redis_runtime, settled, stored
from tests.conftest import needs_redis

pytestmark = [pytest.mark.redis, pytest.mark.slow, needs_redis]

PER_PROCESS, LIMIT = 5, 20


def thought(worker: int, n: int) -> str:
    """A distinct thought (hence a distinct artifact) per (worker, n)."""
    return f"[{worker + 1},{n + 1},{worker * PER_PROCESS + n + 3}] | square | sum | report total"


def assert_limit_refusals(refused: list[dict[str, Any]], name: str) -> None:
    assert len(refused) == PROCESSES * PER_PROCESS - LIMIT
    assert {e["code"] for e in refused} == {"resource-limit"}, Counter(e["code"] for e in refused)
    # Says which limit, its size, and when the first entry frees a slot (default retention, real clock).
    said = f"capacity reached: {name} is limited to {LIMIT} (max_{name}); the oldest entry frees a slot at "
    assert all(e["message"].startswith(said) for e in refused), {e["message"] for e in refused}


def test_racing_creates_store_exactly_max_artifacts(crowd: Crowd, prefix: str) -> None:
    """8 processes x 5 distinct creates against max_artifacts=20: 20 stored, 20 refused, none lost, no busy."""
    requests = [
        [{"operation": "create", "thought": thought(w, n)} for n in range(PER_PROCESS)]
        for w in range(PROCESSES)
    ]
    # Distinct artifacts never conflict: only the quota, checked inside each atomic commit, decides.
    outcomes = settled(crowd.race(prefix, requests, {"max_artifacts": LIMIT}), 0)
    created = [value["result"]["artifact"] for value in oks(outcomes)]
    assert len(created) == LIMIT
    assert_limit_refusals(errors(outcomes), "artifacts")
    documents = stored(prefix, "artifact")
    assert set(documents) == {a["id"] for a in created}  # no over-fill, no lost write
    assert counters(prefix, "artifacts", "artifact-bytes") == {
        "artifacts": LIMIT,
        "artifact-bytes": sum(a["sizeBytes"] for a in created),
    }
    runtime = redis_runtime(prefix, RuntimeLimits(max_artifacts=LIMIT))
    for artifact in created:  # every success is inspectable afterwards, exactly as it was returned
        assert runtime.dispatch({"operation": "inspect", "artifactId": artifact["id"]})["result"] == artifact
    refused = {thought(w, n) for w in range(PROCESSES) for n in range(PER_PROCESS)} - {
        a["companions"]["thought"] for a in created
    }
    assert len(refused) == LIMIT  # the refused thoughts are exactly the ones not stored


def test_racing_runs_store_exactly_max_records(crowd: Crowd, prefix: str) -> None:
    """8 processes x 5 runs against max_records=20: 20 fresh records stored, 20 refused, none lost, no busy."""
    setup = redis_runtime(prefix)
    artifact = setup.dispatch({"operation": "create", "thought": thought(0, 0)})["result"]["artifact"]
    run = {"operation": "run", "artifactId": artifact["id"]}
    outcomes = settled(crowd.race(prefix, [[run] * PER_PROCESS] * PROCESSES, {"max_records": LIMIT}), 0)
    records = [value["result"] for value in oks(outcomes)]
    assert len(records) == LIMIT
    assert len({r["id"] for r in records}) == LIMIT
    assert_limit_refusals(errors(outcomes), "records")
    assert stored(prefix, "record") == {r["id"]: r for r in records}  # each success is retained verbatim
    assert counters(prefix, "records", "artifacts") == {"records": LIMIT, "artifacts": 1}
    assert {r["outputs"]["total"] for r in records} == {1 + 1 + 9}  # [1,1,3] squared and summed


def test_racing_creates_of_one_thought_store_it_once(crowd: Crowd, prefix: str) -> None:
    """The same new artifact created by 8 processes at once is stored and counted once; all see it."""
    request = {"operation": "create", "thought": thought(1, 1)}
    outcomes = settled(crowd.race(prefix, [[request]] * PROCESSES, {"max_artifacts": LIMIT}), PROCESSES - 1)
    artifacts = [value["result"]["artifact"] for value in oks(outcomes)]
    assert len(artifacts) == PROCESSES
    assert all(a == artifacts[0] for a in artifacts)
    assert list(stored(prefix, "artifact")) == [artifacts[0]["id"]]
    assert counters(prefix, "artifacts", "artifact-bytes") == {
        "artifacts": 1,
        "artifact-bytes": artifacts[0]["sizeBytes"],
    }
