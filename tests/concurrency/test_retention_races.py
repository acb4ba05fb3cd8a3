"""Retention under real concurrency — 8 processes, one real Redis, all stopped at the moment the oldest
records lapse: the lapse and the freed slots are decided inside the atomic commit, so exactly as many runs
succeed as slots were freed and the counters stay exact."""

from __future__ import annotations

import pytest

from quineling.runtime.context import Env, Retention, RuntimeLimits, utc_time
from tests.concurrency.support import PROCESSES, Crowd, counters, errors, oks, redis_runtime, settled, stored
from tests.conftest import needs_redis

pytestmark = [pytest.mark.redis, pytest.mark.slow, needs_redis]

START, TTL, IDLE = 1_800_000_000.0, 60.0, 3600.0
LIMIT = 8


@pytest.mark.parametrize("early", [LIMIT, LIMIT // 2], ids=["all-lapse", "half-lapse"])
def test_racing_runs_at_the_lapse_take_exactly_the_freed_slots(crowd: Crowd, prefix: str, early: int) -> None:
    """``early`` records made at START, the rest 30 s later, against max_records=8 and a 60 s record TTL. At
    START + 60 eight processes run twice each, their commits gated to hit Redis together: exactly ``early``
    runs land (the lapsed records' slots), the other runs are refused, naming when the next slot frees."""
    clock = [START]
    env = Env(limits=RuntimeLimits(max_records=LIMIT), retention=Retention(TTL, IDLE), now=lambda: clock[0])
    setup = redis_runtime(prefix, env=env)
    artifact = setup.dispatch({"operation": "create", "thought": "[1,2] | sum | report s"})["result"][
        "artifact"
    ]
    run = {"operation": "run", "artifactId": artifact["id"]}
    old = [setup.dispatch(run)["result"]["id"] for _ in range(early)]
    clock[0] = START + 30
    old += [setup.dispatch(run)["result"]["id"] for _ in range(LIMIT - early)]
    assert counters(prefix, "records") == {"records": LIMIT}

    batches = crowd.race(
        prefix, [[run, run]] * PROCESSES, {"max_records": LIMIT}, at=(START + TTL, TTL, IDLE)
    )
    outcomes = settled(batches, 0)  # fresh record ids and an unchanged artifact: only quotas decide
    records = [value["result"] for value in oks(outcomes)]
    assert len(records) == early
    refused = errors(outcomes)
    assert len(refused) == 2 * PROCESSES - early
    # The next slot frees when the records made 30 s after START lapse, or, if all lapsed, the new ones.
    frees = START + 30 + TTL if early < LIMIT else START + 2 * TTL
    assert {e["message"] for e in refused} == {
        f"capacity reached: records is limited to {LIMIT} (max_records); the oldest entry frees a slot at "
        f"{utc_time(frees)} (in {int(frees - START - TTL)} s)"
    }
    held = stored(prefix, "record")
    assert set(held) == {r["id"] for r in records} | set(old[early:])  # lapsed ones gone, no lost write
    assert counters(prefix, "records", "artifacts") == {"records": LIMIT, "artifacts": 1}
