"""Births into a world from a live proposal, and every admission recheck (docs/ranch-guide.md, section 3)."""

from __future__ import annotations

import pytest

from quineling.runtime.ranch.world_state import WORLD
from stores.changes import ChangeSet
from tests.runtime.test_ranch_support import (
    admission,
    call,
    command,
    courting_pair,
    fails,
    inspect_world,
    make_runtime,
    pairing_input,
    ready,
    state,
    world_target,
)


@pytest.fixture
def rt():
    return make_runtime()


def poke_world(rt, change) -> None:
    """Force a world state the public commands cannot reach (to exercise defensive rechecks)."""
    held = rt.store.read("default", [WORLD])[WORLD]
    doc = held.value
    change(doc)
    rt.store.commit("default", ChangeSet(expect={WORLD: held.version}, put={WORLD: doc}))


def birth_request(rt, snap, request_id="birth-1", **extra):
    value = pairing_input(snap, **extra)
    return admission(value, ready(rt, value), request_id, world_target(snap))


def test_world_birth_from_a_live_proposal(rt):
    snap, _ = courting_pair(rt)
    request = birth_request(rt, snap)
    ack = call(rt, **request)
    assert ack["worldRevision"] == snap["revision"] + 1
    assert ack["target"] == world_target(snap)
    assert ack["derivation"]["origin"]["proposalId"] == "p1"
    after = inspect_world(rt, snap["id"])
    assert after["proposals"] == []
    assert after["revision"] == snap["revision"] + 1
    assert after["nextSequence"] == snap["nextSequence"]  # no sequence consumed
    parents = {r["residentId"]: r for r in after["residents"]}
    before = {r["residentId"]: r for r in snap["residents"]}
    for rid in ("r1", "r2"):
        assert parents[rid]["energy"] == before[rid]["energy"] - 30
        assert parents[rid]["restUntil"] == snap["tick"] + 20
    child = parents["r3"]
    assert child == {**child, "artifactId": ack["artifactId"], "intentHash": None, "epoch": 0, "stage": "nursery",
                     "energy": 40, "participating": False, "nurseryUntil": snap["tick"] + 200}  # fmt: skip
    assert after["events"][-1]["kind"] == "birth"
    frozen = state(rt)
    assert call(rt, **request) == ack  # exact replay, even though the proposal is gone now
    assert state(rt) == frozen
    assert call(rt, operation="run", artifactId=ack["artifactId"])["outputs"] == {
        "allocated": 12,
        "remaining": 8,
    }
    evidence = call(rt, operation="lineage", artifactId=ack["artifactId"])["derivations"]
    assert evidence == [ack["derivation"]]


def test_consumed_proposal_cannot_be_reused_under_another_request_id(rt):
    snap, _ = courting_pair(rt)
    call(rt, **birth_request(rt, snap))
    fresh = inspect_world(rt, snap["id"])
    again = birth_request(rt, {**snap, "revision": fresh["revision"]}, "birth-2")
    assert fails(rt, "ineligible", **again).path == "input.origin.proposalId"


def test_changed_payload_under_a_used_request_id_conflicts(rt):
    snap, _ = courting_pair(rt)
    request = birth_request(rt, snap)
    call(rt, **request)
    fails(rt, "conflict", **{**request, "target": {**request["target"], "expectedRevision": 99}})
    fails(rt, "conflict", **birth_request(rt, snap, recipe="merge"))


def test_stale_revision(rt):
    snap, _ = courting_pair(rt)
    request = birth_request(rt, snap)
    request["target"]["expectedRevision"] -= 1
    assert fails(rt, "stale-revision", **request).path == "target.expectedRevision"


def test_expired_proposal(rt):
    snap, _ = courting_pair(rt)
    request = birth_request(rt, snap)
    for ticks in (4, 4):
        command(rt, snap["id"], {"kind": "advance", "ticks": ticks})
    later = inspect_world(rt, snap["id"])
    assert [p["proposalId"] for p in later["proposals"]] == ["p2"]  # p1 expired at tick 9, p2 courted anew
    request["target"]["expectedRevision"] = later["revision"]
    assert fails(rt, "expired", **request).path == "input.origin.proposalId"


def test_swapped_parent_order_is_allowed(rt):
    snap, _ = courting_pair(rt)
    ack = call(rt, **birth_request(rt, snap, recipe="merge", swap=True))
    assert ack["derivation"]["origin"]["parentResidents"] == ["r2", "r1"]


def _tamper(snap, how):
    value = pairing_input(snap)
    how(value)
    return value


@pytest.mark.parametrize(
    ("how", "path"),
    [
        (lambda v: v["origin"].update(epochs=[1, 0]), "input.origin.epochs[0]"),
        (lambda v: v["origin"].update(parentResidents=["r1", "r9"]), "input.origin.parentResidents"),
        (lambda v: v["origin"].update(worldId="wld_other"), "input.origin.worldId"),
        (lambda v: v.update(origin={"kind": "manual"}), "input.origin.kind"),
        (lambda v: v["origin"].update(parentResidents=["r2", "r1"]), "input.origin.epochs[0]"),
        (lambda v: v.update(parents=v["parents"][::-1], recipe="merge"), "input.parents[0]"),
        (lambda v: v.update(parents=v["parents"][:1], recipe="body"), "input.parents"),
    ],
)
def test_pairing_rechecks_are_ineligible(rt, how, path):
    snap, _ = courting_pair(rt)
    poke_world(rt, lambda w: w["residents"][1].update(epoch=1) or w["proposals"][0].update(epochs=[0, 1]))
    snap = inspect_world(rt, snap["id"])
    value = _tamper(snap, how)
    before = state(rt)
    err = fails(rt, "ineligible", **admission(value, ready(rt, value), "tampered", world_target(snap)))
    assert err.path == path
    assert state(rt) == before


@pytest.mark.parametrize(
    "change",
    [
        {"participating": False},
        {"stage": "nursery"},
        {"restUntil": 10_000},
        {"energy": 49},
    ],
)
def test_parent_condition_rechecks_are_ineligible(rt, change):
    snap, _ = courting_pair(rt)
    request = birth_request(rt, snap)
    poke_world(rt, lambda w: w["residents"][1].update(change))
    err = fails(rt, "ineligible", **request)
    assert err.path == "input.origin.parentResidents[1]"


@pytest.mark.parametrize(
    ("limits", "poke"),
    [
        ({"max_residents": 2}, None),
        ({"max_nursery": 1}, lambda w: w["residents"][0].update(stage="nursery")),
        ({"max_pairs": 1}, lambda w: w["pairs"].append(["r7", "r8"])),
        ({"max_derivations": 1}, lambda w: None),
        ({"max_world_bytes": 2300}, None),
    ],
)
def test_every_cap_refuses_a_birth_without_changes(limits, poke):
    rt = make_runtime(**limits)
    snap, _ = courting_pair(rt)
    if poke is not None:
        poke_world(rt, poke)
        if limits.get("max_nursery"):  # the poked nursery resident must not be a parent
            poke_world(rt, lambda w: w["residents"][0].update(stage="adult"))
            poke_world(rt, lambda w: w["residents"].append({**w["residents"][0], "residentId": "r9",
                                                            "stage": "nursery"}))  # fmt: skip
    if limits.get("max_derivations"):
        value = {"parents": [snap["proposals"][0]["parents"][0]], "recipe": "body", "nonce": 1,
                 "mutation": "leap", "origin": {"kind": "manual"}}  # fmt: skip
        call(rt, **admission(value, ready(rt, value), "library-first"))
    snap = inspect_world(rt, snap["id"])
    before = state(rt)
    fails(rt, "resource-limit", **birth_request(rt, snap))
    assert state(rt) == before


def test_world_target_must_exist(rt):
    snap, _ = courting_pair(rt)
    value = pairing_input(snap)
    value["origin"]["worldId"] = "wld_gone"
    target = {"kind": "world", "worldId": "wld_gone", "expectedRevision": 0}
    assert fails(rt, "not-found", **admission(value, ready(rt, value), "x", target)).path == "target.worldId"
