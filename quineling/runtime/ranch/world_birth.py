"""Admission into a world: the rechecks and the compound birth, staged on the world document.

Checks, in order (all before anything is changed; a refusal leaves the world untouched):

1. the origin is ``pairing`` and names the target world (``ineligible``); the world exists (``not-found``);
2. ``target.expectedRevision`` equals the revision (``stale-revision``);
3. the proposal is live: one that already expired (found in the event log, or ``tick ≥ expiresTick``) is
   ``expired``; one that was consumed, cancelled or never existed is ``ineligible``;
4. ``origin.parentResidents`` are the proposal's two residents, in either order (the order chooses which is
   parent A); ``origin.epochs``, the proposal's epochs and the residents' current epochs agree, and
   ``input.parents`` are exactly the residents' current artifact/intent pins in that order (``ineligible``);
5. both parents are participating adults, not resting (``tick ≥ restUntil``), with energy ≥ 50 (``ineligible``);
6. capacity: residents, nursery and the pair ledger (``resource-limit``).

The birth consumes the proposal, charges each parent 30 energy, rests both for 20 ticks, inserts one nursery
child (energy 40, participation off, adult at ``tick + 200``), records the pair, and advances the revision
once (no sequence is consumed).
"""

from __future__ import annotations

from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.program import Body, Program
from quineling.runtime.ranch.courtship import MIN_ENERGY
from quineling.runtime.ranch.world_state import (
    add_resident,
    bump_revision,
    capped,
    load_world,
    log,
    profile_of,
    resident,
    save_world,
)  # fmt: skip
from stores.jsontypes import JSON

BIRTH_COST = 30
REST_TICKS = 20
CHILD_ENERGY = 40
NURSERY_TICKS = 200


def _ineligible(message: str, path: str | None) -> QuinelingError:
    return QuinelingError("ineligible", message, path)


def _live_proposal(world: JSON, proposal_id: str) -> JSON:
    proposals: list[JSON] = world["proposals"]
    for p in proposals:
        if p["proposalId"] == proposal_id:
            if world["tick"] >= p["expiresTick"]:
                raise QuinelingError(
                    "expired", f"proposal {proposal_id} has expired", "input.origin.proposalId"
                )
            return p
    if any(e["kind"] == "expired" and e.get("proposalId") == proposal_id for e in world["events"]):
        raise QuinelingError("expired", f"proposal {proposal_id} has expired", "input.origin.proposalId")
    raise _ineligible(
        f"proposal {proposal_id} is not live (consumed, cancelled or unknown)", "input.origin.proposalId"
    )


def _check_parents(world: JSON, proposal: JSON, offspring: JSON) -> list[JSON]:
    origin = offspring["origin"]
    order = origin["parentResidents"]
    if sorted(order) != sorted(proposal["parentResidents"]):
        raise _ineligible("parentResidents are not the proposal's residents", "input.origin.parentResidents")
    if len(offspring["parents"]) != 2:
        raise _ineligible("a world birth uses both proposal parents", "input.parents")
    parents = []
    for i, rid in enumerate(order):
        r = resident(world, rid, f"input.origin.parentResidents[{i}]")
        proposed_epoch = proposal["epochs"][proposal["parentResidents"].index(rid)]
        if not origin["epochs"][i] == proposed_epoch == r["epoch"]:
            raise _ineligible(f"{rid}'s epoch changed since the proposal", f"input.origin.epochs[{i}]")
        pin = {"artifactId": r["artifactId"], "intentHash": r["intentHash"]}
        if offspring["parents"][i] != pin:
            raise _ineligible(f"parent {i} is not {rid}'s current artifact/intent pin", f"input.parents[{i}]")
        if r["stage"] != "adult" or not r["participating"]:
            raise _ineligible(f"{rid} is not a participating adult", f"input.origin.parentResidents[{i}]")
        if world["tick"] < r["restUntil"]:
            raise _ineligible(
                f"{rid} is resting until tick {r['restUntil']}", f"input.origin.parentResidents[{i}]"
            )
        if r["energy"] < MIN_ENERGY:
            raise _ineligible(
                f"{rid} has energy {r['energy']} (needs {MIN_ENERGY})", f"input.origin.parentResidents[{i}]"
            )
        parents.append(r)
    return parents


def _check_capacity(world: JSON, env: Env, pair: list[str]) -> None:
    limits = env.limits
    if len(world["residents"]) >= limits.max_residents:
        raise QuinelingError(
            "resource-limit", f"the world holds its maximum of {limits.max_residents} residents"
        )
    if sum(r["stage"] == "nursery" for r in world["residents"]) >= limits.max_nursery:
        raise QuinelingError("resource-limit", f"the nursery holds its maximum of {limits.max_nursery}")
    if pair not in world["pairs"] and len(world["pairs"]) >= limits.max_pairs:
        raise QuinelingError(
            "resource-limit", f"the pair ledger holds its maximum of {limits.max_pairs} pairs"
        )


def birth(view: StateView, env: Env, args: JSON, child: JSON, program: Program, body: Body) -> int:
    """Stage the world birth of ``child`` (the stored artifact); returns the new world revision."""
    offspring, target = args["input"], args["target"]
    origin = offspring["origin"]
    if origin["kind"] != "pairing":
        raise _ineligible("a world birth needs a pairing origin", "input.origin.kind")
    if origin["worldId"] != target["worldId"]:
        raise _ineligible("the pairing origin names another world", "input.origin.worldId")
    world = load_world(view, target["worldId"], "target.worldId")
    if target["expectedRevision"] != world["revision"]:
        raise QuinelingError(
            "stale-revision", f"the world is at revision {world['revision']}", "target.expectedRevision"
        )
    proposal = _live_proposal(world, origin["proposalId"])
    parents = _check_parents(world, proposal, offspring)
    pair = sorted(origin["parentResidents"])
    _check_capacity(world, env, pair)
    world["proposals"] = [p for p in world["proposals"] if p is not proposal]
    for r in parents:
        r["energy"] -= BIRTH_COST
        r["restUntil"] = capped(world["tick"] + REST_TICKS)
    if pair not in world["pairs"]:
        world["pairs"].append(pair)
    entry = add_resident(
        world, child["id"], (child.get("companions") or {}).get("intentHash"), stage="nursery",
        energy=CHILD_ENERGY, nursery_until=capped(world["tick"] + NURSERY_TICKS), profile=profile_of(program, body),
    )  # fmt: skip
    log(world, env, "birth", proposalId=proposal["proposalId"], residentId=entry["residentId"],
        artifactId=child["id"], requestId=args["requestId"])  # fmt: skip
    bump_revision(world)
    save_world(view, env, world)
    revision: int = world["revision"]
    return revision
