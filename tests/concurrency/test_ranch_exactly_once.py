"""Exactly-once ranch effects (world commands, admissions, births) with 8 real processes racing on one real
Redis."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from quineling.runtime.errors import QuinelingError
from quineling.runtime.runtime import Runtime
from stores.base import StateStore, Versioned
from stores.changes import ChangeSet, Key
from tests.concurrency.support import (
    PROCESSES,
    Crowd,
    conflicts_of,
    counters,
    errors,
    oks,
    one_acknowledgement,
    one_winner,
    outcomes_of,
    redis_runtime,
    settled,
    stored,
)
from tests.conftest import needs_redis
from tests.runtime.test_ranch_support import (
    ALLOCATE,
    SUM_CREDITS,
    admission,
    call,
    command_request,
    courting_pair,
    create,
    garden,
    inspect_world,
    offspring,
    pairing_input,
    ready,
    world_target,
)

pytestmark = [pytest.mark.redis, pytest.mark.slow, needs_redis]


@pytest.fixture
def rt(prefix: str) -> Runtime:
    """The test's own view of the shared state (setup and final checks), on the crowd's prefix."""
    return redis_runtime(prefix)


def race(crowd: Crowd, prefix: str, requests: list[list[dict[str, Any]]]) -> list[Any]:
    """All processes compute on the same state and commit together; exactly one commit wins the race."""
    return settled(crowd.race(prefix, requests), PROCESSES - 1)


def world_receipts(prefix: str, world_id: str) -> dict[str, Any]:
    return stored(prefix, "world-receipts")[world_id]


def test_same_world_command_from_every_process_advances_once(crowd: Crowd, prefix: str, rt: Runtime) -> None:
    """8 processes send one advance-4 (same sequence, same payload): one advance, 8 byte-identical acks."""
    before = inspect_world(rt, garden(rt))
    request = command_request(rt, before["id"], {"kind": "advance", "ticks": 4})
    outcomes = race(crowd, prefix, [[request]] * PROCESSES)
    ack = one_acknowledgement(outcomes, PROCESSES)  # no busy, no refusal: every loser replays the receipt
    assert (ack["sequence"], ack["revision"]) == (before["nextSequence"], before["revision"] + 1)
    after = inspect_world(rt, before["id"])
    assert (after["revision"], after["tick"], after["nextSequence"]) == (
        before["revision"] + 1,
        before["tick"] + 4,
        before["nextSequence"] + 1,
    )
    assert len(after["proposals"]) == 1  # courted once, not once per process
    assert [e["kind"] for e in after["events"]].count("proposed") == 1
    assert world_receipts(prefix, before["id"])[str(request["sequence"])]["acknowledgement"] == ack
    assert call(rt, **request) == ack  # a later retry still replays


def test_same_proposal_under_different_request_ids_births_once(
    crowd: Crowd, prefix: str, rt: Runtime
) -> None:
    """8 processes admit the one live proposal under 8 requestIds: one child, one charge, 7 refusals."""
    snap, parents = courting_pair(rt)
    value = pairing_input(snap)
    candidate = ready(rt, value)
    requests = [[admission(value, candidate, f"birth-{n}", world_target(snap))] for n in range(PROCESSES)]
    outcomes = race(crowd, prefix, requests)
    # Every process carried the pre-birth revision; the birth advanced it, so each loser's recomputation
    # stops at the revision check, which the admission rechecks before the proposal (world_birth checks 2
    # then 3). Nothing of a loser is committed: no receipt, no second child, no second charge.
    ack = one_winner(outcomes, ("stale-revision", "target.expectedRevision"))["result"]
    after = inspect_world(rt, snap["id"])
    assert after["revision"] == snap["revision"] + 1 == ack["worldRevision"]
    assert after["proposals"] == []
    nursery = [r for r in after["residents"] if r["stage"] == "nursery"]
    assert [r["artifactId"] for r in nursery] == [ack["artifactId"]]
    held = {r["residentId"]: r for r in snap["residents"]}
    for r in after["residents"]:
        if r["residentId"] in ("r1", "r2"):
            assert r["energy"] == held[r["residentId"]]["energy"] - 30  # charged once
    assert [e["kind"] for e in after["events"]].count("birth") == 1
    assert call(rt, operation="lineage")["derivations"] == [ack["derivation"]]
    assert list(stored(prefix, "receipt")) == [ack["requestId"]]
    assert counters(prefix, "admission-receipts", "artifacts", "records") == {
        "admission-receipts": 1,
        "artifacts": len(parents) + 1,
        "records": 0,  # admission never runs the child
    }
    # With the fresh revision, the consumed proposal itself is refused under yet another requestId.
    late = admission(
        value, candidate, "birth-late", {**world_target(snap), "expectedRevision": after["revision"]}
    )
    with pytest.raises(QuinelingError) as info:
        rt.dispatch(late)
    assert (info.value.code, info.value.path) == ("ineligible", "input.origin.proposalId")


def test_fresh_commands_with_one_sequence_and_different_payloads(
    crowd: Crowd, prefix: str, rt: Runtime
) -> None:
    """8 different commands racing for one fresh sequence: exactly one succeeds, the other 7 get `conflict`."""
    before = inspect_world(rt, garden(rt))
    commands = [
        {"kind": "advance", "ticks": 1},
        {"kind": "advance", "ticks": 2},
        {"kind": "advance", "ticks": 3},
        {"kind": "advance", "ticks": 4},
        {"kind": "participate", "residentId": "r1", "enabled": False},
        {"kind": "participate", "residentId": "r2", "enabled": False},
        {"kind": "withdraw", "residentId": "r1"},
        {"kind": "retire", "residentId": "r2"},
    ]
    requests = [[command_request(rt, before["id"], c)] for c in commands]
    outcomes = race(crowd, prefix, requests)
    # A world command checks its sequence before its expectedRevision: once the winner has committed, each
    # loser's recomputation finds the sequence retained with another payload (`conflict`), and that check
    # comes before `stale-revision` — even though every loser's expectedRevision is now stale too.
    winner = one_winner(outcomes, ("conflict", "sequence"))
    after = inspect_world(rt, before["id"])
    assert (after["revision"], after["nextSequence"]) == (before["revision"] + 1, before["nextSequence"] + 1)
    index = next(i for i, outcome in enumerate(outcomes) if outcome[0] == "ok")
    receipts = world_receipts(prefix, before["id"])
    assert receipts[str(before["nextSequence"])]["acknowledgement"] == winner["result"]
    assert winner["result"]["command"] == commands[index]
    assert call(rt, **requests[index][0]) == winner["result"]  # the winner's retry still replays


def test_replayed_library_admission_from_every_process_births_once(
    crowd: Crowd, prefix: str, rt: Runtime
) -> None:
    """8 processes send one offspringAdmit (same requestId and payload): one child, 8 identical acks."""
    parents = [create(rt, SUM_CREDITS, seed=1), create(rt, ALLOCATE, seed=2)]
    value = offspring(parents, "compose", nonce=7)
    request = admission(value, ready(rt, value), "library-birth")
    outcomes = race(crowd, prefix, [[request]] * PROCESSES)
    ack = one_acknowledgement(outcomes, PROCESSES)
    assert call(rt, operation="lineage")["derivations"] == [ack["derivation"]]
    assert list(stored(prefix, "receipt")) == ["library-birth"]
    assert counters(prefix, "admission-receipts", "artifacts", "records") == {
        "admission-receipts": 1,
        "artifacts": 3,
        "records": 0,
    }
    assert call(rt, operation="run", artifactId=ack["artifactId"])["outputs"] == {
        "allocated": 12,
        "remaining": 8,
    }


def test_replayed_world_admission_from_every_process_births_once(
    crowd: Crowd, prefix: str, rt: Runtime
) -> None:
    """8 processes send one world admission (same requestId and payload), all reading the state first: one
    birth, 8 identical acknowledgements — a retry that read the receipt before the birth and the world after
    it must not come back as ``stale-revision``."""
    snap, _ = courting_pair(rt)
    value = pairing_input(snap)
    request = admission(value, ready(rt, value), "world-birth", world_target(snap))
    ack = one_acknowledgement(
        outcomes_of(crowd.race(prefix, [[request]] * PROCESSES, gate="read")), PROCESSES
    )
    after = inspect_world(rt, snap["id"])
    assert after["revision"] == ack["worldRevision"] == snap["revision"] + 1
    assert [r["artifactId"] for r in after["residents"] if r["stage"] == "nursery"] == [ack["artifactId"]]
    assert call(rt, operation="lineage")["derivations"] == [ack["derivation"]]
    assert list(stored(prefix, "receipt")) == ["world-birth"]


class InterleavingStore(StateStore):
    """Runs ``rival()`` (another worker's whole request) right after the first read it serves."""

    def __init__(self, inner: StateStore, rival: Callable[[], Any]) -> None:
        self.inner = inner
        self.rival: Callable[[], Any] | None = rival

    def read(self, scope: str, keys_: Iterable[Key]) -> dict[Key, Versioned]:
        documents = self.inner.read(scope, keys_)
        rival, self.rival = self.rival, None
        if rival is not None:
            rival()
        return documents

    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        return self.inner.counters(scope, names)

    def commit(self, scope: str, changes: ChangeSet, *, task: Any = None) -> int | None:
        return self.inner.commit(scope, changes, task=task)


def test_retry_straddling_the_original_world_admission_replays_it(rt: Runtime) -> None:
    """Deterministic torn read on real Redis: the retry reads the (absent) receipt, the original commits the
    birth, then the retry reads the world — it must return the original acknowledgement."""
    snap, _ = courting_pair(rt)
    value = pairing_input(snap)
    request = admission(value, ready(rt, value), "world-birth", world_target(snap))
    original: list[Any] = []
    retry = Runtime(store=InterleavingStore(rt.store, lambda: original.append(call(rt, **request))))
    assert call(retry, **request) == original[0]
    assert inspect_world(rt, snap["id"])["revision"] == snap["revision"] + 1


def test_distinct_admissions_from_every_process_all_append_to_lineage(
    crowd: Crowd, prefix: str, rt: Runtime
) -> None:
    """8 processes admit 8 different children at once, all appending to the one lineage index: every admission
    lands exactly once with its own index, within the bounded retries (no ``busy``)."""
    parent = create(rt, SUM_CREDITS, seed=1)
    requests = []
    for n in range(PROCESSES):
        value = offspring([parent], "body", mutation="drift", nonce=n)
        requests.append([admission(value, ready(rt, value), f"drift-{n}")])
    batches = crowd.race(prefix, requests)
    outcomes = outcomes_of(batches)
    assert errors(outcomes) == []
    acks = [value["result"] for value in oks(outcomes)]
    assert len({ack["artifactId"] for ack in acks}) == PROCESSES
    assert sorted(ack["derivation"]["index"] for ack in acks) == list(range(PROCESSES))
    derivations = call(rt, operation="lineage", limit=32)["derivations"]
    assert sorted(d["requestId"] for d in derivations) == sorted(f"drift-{n}" for n in range(PROCESSES))
    assert counters(prefix, "admission-receipts", "artifacts") == {
        "admission-receipts": PROCESSES,
        "artifacts": PROCESSES + 1,
    }
    # Each commit can make each other process lose at most once: 7 + 6 + ... + 1 lost races at most.
    assert PROCESSES - 1 <= conflicts_of(batches) <= PROCESSES * (PROCESSES - 1) // 2
