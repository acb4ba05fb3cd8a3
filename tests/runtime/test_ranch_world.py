"""Worlds: create, inspect, ordered commands and the per-tick rules (docs/decisions/0028-ranch.md)."""

from __future__ import annotations

import pytest

from quineling.runtime.ranch.courtship import score
from quineling.runtime.ranch.world_state import place
from tests.runtime.test_ranch_support import (
    ALLOCATE,
    SQUARES,
    SUM_CREDITS,
    call,
    command,
    command_request,
    create,
    fails,
    inspect_world,
    make_runtime,
    state,
    world,
)

ADVANCE = {"kind": "advance", "ticks": 4}


@pytest.fixture
def rt():
    return make_runtime()


def test_guide_world_command_retry_returns_the_original_acknowledgement(rt):
    created = call(rt, operation="worldCreate", worldKey="a2a-garden", seed=23, affinity="neutral")
    assert created["revision"] == 0 and created["nextSequence"] == 1 and created["tick"] == 0
    snapshot = call(rt, operation="worldInspect", worldId=created["id"])
    assert snapshot == created
    original = {"operation": "worldCommand", "worldId": created["id"], "expectedRevision": snapshot["revision"],
                "sequence": snapshot["nextSequence"], "command": ADVANCE}  # fmt: skip
    advanced = call(rt, **original)
    assert call(rt, **dict(original)) == advanced
    after = inspect_world(rt, created["id"])
    assert (after["revision"], after["nextSequence"], after["tick"]) == (1, 2, 4)
    assert advanced == {"worldId": created["id"], "sequence": 1, "revision": 1, "command": ADVANCE,
                        "effects": [{"kind": "advanced", "ticks": 4, "tick": 4, "matured": [], "expired": [],
                                     "proposed": []}]}  # fmt: skip


def test_world_create_is_idempotent_for_the_same_normalised_config(rt):
    first = call(rt, operation="worldCreate", worldKey="k", seed=5)
    assert first["affinity"] == "structural"
    assert call(rt, operation="worldCreate", worldKey="k", seed=5.0, affinity="structural") == first
    command(rt, first["id"], ADVANCE)
    assert call(rt, operation="worldCreate", worldKey="k", seed=5)["revision"] == 1  # the current snapshot
    for other in (
        {"worldKey": "k", "seed": 6},
        {"worldKey": "k2", "seed": 5},
        {"worldKey": "k", "seed": 5, "affinity": "neutral"},
    ):
        fails(rt, "conflict", operation="worldCreate", **other)
    assert fails(rt, "invalid-request", operation="worldCreate", worldKey="x" * 65, seed=1).path == "worldKey"
    assert fails(rt, "invalid-request", operation="worldCreate", worldKey="", seed=1).path == "worldKey"
    assert fails(rt, "invalid-request", operation="worldCreate", worldKey="k", seed=-1).path == "seed"
    assert (
        fails(rt, "invalid-request", operation="worldCreate", worldKey="k", seed=1, affinity="x").path
        == "affinity"
    )
    assert (
        fails(rt, "invalid-request", operation="worldCreate", worldKey="k", seed=1, config={}).path
        == "config"
    )


def test_inspect_is_passive_and_unknown_worlds_are_not_found(rt):
    snap = world(rt)
    before = state(rt)
    assert inspect_world(rt, snap["id"]) == inspect_world(rt, snap["id"])
    assert state(rt) == before
    fails(rt, "not-found", operation="worldInspect", worldId="wld_nope")
    request = command_request(rt, snap["id"], ADVANCE)
    assert fails(rt, "not-found", **{**request, "worldId": "wld_nope"}).path == "worldId"


def test_sequence_ordering_rules(rt):
    snap = world(rt)
    first = command_request(rt, snap["id"], ADVANCE)
    ack = call(rt, **first)
    assert fails(rt, "conflict", **{**first, "command": {"kind": "advance", "ticks": 1}}).path == "sequence"
    assert fails(rt, "conflict", **{**first, "expectedRevision": 1}).path == "sequence"
    assert fails(rt, "sequence-gap", **{**first, "sequence": 3, "expectedRevision": 1}).path == "sequence"
    assert fails(rt, "stale-revision", **{**first, "sequence": 2}).path == "expectedRevision"
    command(rt, snap["id"], ADVANCE)
    assert call(rt, **first) == ack  # the old expectedRevision is part of the retained payload
    assert inspect_world(rt, snap["id"])["revision"] == 2


def test_old_sequences_beyond_the_retained_window_are_discarded():
    rt = make_runtime(max_world_receipts=2)
    snap = world(rt)
    requests = []
    for _ in range(3):
        requests.append(command_request(rt, snap["id"], {"kind": "advance", "ticks": 1}))
        call(rt, **requests[-1])
    assert fails(rt, "sequence-discarded", **requests[0]).path == "sequence"
    assert call(rt, **requests[1])["sequence"] == 2


def test_import_participate_withdraw_retire(rt):
    a = create(rt, SQUARES)
    snap = world(rt)
    ack = command(rt, snap["id"], {"kind": "import", "artifactId": a["id"]})
    assert ack["effects"] == [{"kind": "imported", "residentId": "r1"}]
    r1 = inspect_world(rt, snap["id"])["residents"][0]
    assert r1 == {"residentId": "r1", "artifactId": a["id"], "intentHash": a["companions"]["intentHash"], "epoch": 0,
                  "stage": "adult", "energy": 60, "participating": False, "restUntil": 0, "nurseryUntil": None,
                  "position": place({"seed": 23}, 1)}  # fmt: skip
    missing = command_request(rt, snap["id"], {"kind": "import", "artifactId": "sha256:" + "0" * 64})
    assert fails(rt, "not-found", **missing).path == "command.artifactId"
    ghost = command_request(rt, snap["id"], {"kind": "participate", "residentId": "r9", "enabled": True})
    assert fails(rt, "not-found", **ghost).path == "command.residentId"
    command(rt, snap["id"], {"kind": "participate", "residentId": "r1", "enabled": True})
    assert inspect_world(rt, snap["id"])["residents"][0]["participating"] is True
    command(rt, snap["id"], {"kind": "withdraw", "residentId": "r1"})
    command(rt, snap["id"], {"kind": "retire", "residentId": "r1"})
    after = inspect_world(rt, snap["id"])
    assert after["residents"] == [] and after["revision"] == 4
    assert [e["kind"] for e in after["events"]] == ["imported", "participation", "withdrawn", "retired"]


def test_closed_commands(rt):
    snap = world(rt)
    bad = command_request(rt, snap["id"], {"kind": "advance", "ticks": 5})
    assert fails(rt, "invalid-request", **bad).path == "command.ticks"
    bad["command"] = {"kind": "advance", "ticks": 1, "extra": True}
    assert fails(rt, "invalid-request", **bad).path == "command.extra"
    bad["command"] = {"kind": "teleport"}
    assert fails(rt, "invalid-request", **bad).path == "command.kind"
    for kind in (["advance"], {"advance": 1}, 4, None):  # not a string: refused, never a crash on hashing
        bad["command"] = {"kind": kind, "ticks": 1}
        assert fails(rt, "invalid-request", **bad).path == "command.kind"
    bad["command"] = {"kind": "advance", "ticks": 1.0}
    assert call(rt, **bad)["command"] == {"kind": "advance", "ticks": 1}


def _pair(rt, affinity="neutral", thoughts=(SUM_CREDITS, ALLOCATE)):
    snap = world(rt, affinity=affinity)
    for i, thought in enumerate(thoughts):
        command(rt, snap["id"], {"kind": "import", "artifactId": create(rt, thought, seed=i)["id"]})
        command(rt, snap["id"], {"kind": "participate", "residentId": f"r{i + 1}", "enabled": True})
    return snap["id"]


def test_ticks_energy_proposals_and_half_open_expiry(rt):
    wid = _pair(rt)
    a3 = create(rt, SQUARES)
    command(rt, wid, {"kind": "import", "artifactId": a3["id"]})  # r3 stays idle: no participation
    ack = command(rt, wid, {"kind": "advance", "ticks": 1})
    assert ack["effects"][0]["proposed"] == ["p1"]
    snap = inspect_world(rt, wid)
    assert [r["energy"] for r in snap["residents"]] == [62, 62, 60]
    proposal = snap["proposals"][0]
    assert proposal["parentResidents"] == ["r1", "r2"] and proposal["epochs"] == [0, 0]
    assert (proposal["createdTick"], proposal["expiresTick"]) == (1, 9)
    assert proposal["parents"] == [{"artifactId": r["artifactId"], "intentHash": r["intentHash"]}
                                   for r in snap["residents"][:2]]  # fmt: skip
    command(rt, wid, {"kind": "advance", "ticks": 4})
    command(rt, wid, {"kind": "advance", "ticks": 3})  # tick 8: still live (expires when tick ≥ 9)
    assert [p["proposalId"] for p in inspect_world(rt, wid)["proposals"]] == ["p1"]
    ack = command(rt, wid, {"kind": "advance", "ticks": 1})
    assert ack["effects"][0]["expired"] == ["p1"] and ack["effects"][0]["proposed"] == ["p2"]
    snap = inspect_world(rt, wid)
    assert [r["energy"] for r in snap["residents"]] == [78, 78, 60]
    command(rt, wid, {"kind": "advance", "ticks": 4})
    command(rt, wid, {"kind": "advance", "ticks": 4})
    command(rt, wid, {"kind": "advance", "ticks": 4})
    assert max(r["energy"] for r in inspect_world(rt, wid)["residents"]) == 100  # capped


def test_disabling_cancels_and_reenabling_never_revives(rt):
    wid = _pair(rt)
    command(rt, wid, {"kind": "advance", "ticks": 1})
    ack = command(rt, wid, {"kind": "participate", "residentId": "r2", "enabled": False})
    assert {"kind": "cancelled", "proposalId": "p1"} in ack["effects"]
    command(rt, wid, {"kind": "participate", "residentId": "r2", "enabled": True})
    assert inspect_world(rt, wid)["proposals"] == []
    ack = command(rt, wid, {"kind": "advance", "ticks": 1})
    assert ack["effects"][0]["proposed"] == ["p2"]  # a new proposal, never p1 again
    ack = command(rt, wid, {"kind": "withdraw", "residentId": "r1"})
    assert {"kind": "cancelled", "proposalId": "p2"} in ack["effects"]
    ack = command(rt, wid, {"kind": "advance", "ticks": 1})
    ack = command(rt, wid, {"kind": "retire", "residentId": "r2"})
    assert {"kind": "cancelled", "proposalId": "p3"} in ack["effects"]


def test_courtship_picks_the_best_partner_and_breaks_ties_by_resident_id(rt):
    snap = world(rt)
    squares = create(rt, SQUARES)
    for i in range(4):
        command(rt, snap["id"], {"kind": "import", "artifactId": squares["id"]})
        command(rt, snap["id"], {"kind": "participate", "residentId": f"r{i + 1}", "enabled": True})
    command(rt, snap["id"], {"kind": "advance", "ticks": 1})
    snap = inspect_world(rt, snap["id"])
    residents = {r["residentId"]: r for r in snap["residents"]}
    world_doc = {"affinity": "neutral"}

    def best(rid):
        others = [o for o in residents if o != rid]
        return min(others, key=lambda o: (-score(world_doc, residents[rid], residents[o]), o))

    expected = sorted(sorted([a, best(a)]) for a in residents if best(best(a)) == a and a < best(a))
    assert sorted(p["parentResidents"] for p in snap["proposals"]) == expected
    assert expected  # with four residents at least the closest pair is reciprocal


def test_structural_score_terms():
    a = {"artifactId": "A", "position": {"x": 0, "y": 0}}
    b = {"artifactId": "B", "position": {"x": 3, "y": 4}}
    traits = dict.fromkeys(("length", "girth", "curl", "hue", "gait", "temper"), 0)
    profiles = {"A": {"ops": ["square", "sum"], "traits": traits}, "B": {"ops": ["sum"], "traits": traits}}
    world_doc = {"affinity": "structural", "profiles": profiles}
    assert score({"affinity": "neutral"}, a, b) == -7
    # overlap 1/2 → 5, identical traits → 5, different sources → 5
    assert score(world_doc, a, b) == -7 + 5 + 5 + 5
    assert score(world_doc, a, {**a, "position": {"x": 0, "y": 0}}) == 0 + 10 + 5 + 0


def test_positions_are_deterministic_from_seed_and_resident_number():
    assert place({"seed": 23}, 1) == place({"seed": 23}, 1)
    assert all(0 <= v < 64 for v in place({"seed": 1}, 7).values())


def test_events_are_a_bounded_log_dropping_the_oldest():
    rt = make_runtime(max_world_events=3)
    a = create(rt, SQUARES)
    snap = world(rt)
    for _ in range(4):
        command(rt, snap["id"], {"kind": "import", "artifactId": a["id"]})
    events = inspect_world(rt, snap["id"])["events"]
    assert [e["index"] for e in events] == [2, 3, 4]


@pytest.mark.parametrize(
    ("limits", "imports_before"),
    [({"max_residents": 2}, 2), ({"max_world_bytes": 1000}, 1), ({"max_acknowledgement_bytes": 230}, 0)],
)
def test_full_world_ledgers_refuse_and_change_nothing(limits, imports_before):
    rt = make_runtime(**limits)
    a = create(rt, SQUARES)
    snap = world(rt)
    command(rt, snap["id"], {"kind": "advance", "ticks": 4})
    for _ in range(imports_before):
        command(rt, snap["id"], {"kind": "import", "artifactId": a["id"]})
    before = state(rt)
    fails(rt, "resource-limit", **command_request(rt, snap["id"], {"kind": "import", "artifactId": a["id"]}))
    assert state(rt) == before


def test_proposal_ledger_full_makes_pairs_wait():
    rt = make_runtime(max_proposals=1)
    snap = world(rt)
    squares = create(rt, SQUARES)
    for i in range(4):
        command(rt, snap["id"], {"kind": "import", "artifactId": squares["id"]})
        command(rt, snap["id"], {"kind": "participate", "residentId": f"r{i + 1}", "enabled": True})
    command(rt, snap["id"], {"kind": "advance", "ticks": 4})
    assert len(inspect_world(rt, snap["id"])["proposals"]) == 1


def test_structural_world_courts_with_profiles_from_the_artifacts(rt):
    wid = _pair(rt, affinity="structural", thoughts=(SQUARES, "[1,5] | square | max | report biggest"))
    ack = command(rt, wid, {"kind": "advance", "ticks": 1})
    assert ack["effects"][0]["proposed"] == ["p1"]
    snap = inspect_world(rt, wid)
    assert snap["affinity"] == "structural" and snap["proposals"][0]["parentResidents"] == ["r1", "r2"]
