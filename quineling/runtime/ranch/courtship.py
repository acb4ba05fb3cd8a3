"""Social time: the per-tick rules and courtship scoring.

Each tick, in order: the tick counter increases (stopping at 1,000,000); participating adults gain 2 energy
and nursery residents 1 (max 100; non-participating adults rest idle); nursery residents whose
``nurseryUntil`` has come become adults (participation stays off); proposals with ``tick ≥ expiresTick``
expire; then courtship: every eligible resident (participating adult, ``tick ≥ restUntil``, energy ≥ 50, not
in a pending proposal) picks its best-scoring eligible partner, ties broken by the smaller residentId
(string order); a reciprocal choice creates one proposal ``{parentResidents: [smaller id, larger id], …,
expiresTick: tick + 8}``. When the proposal ledger is full, reciprocal pairs simply wait (an advance is
never refused for it).

Scores (integers):

* ``neutral``: −(Manhattan distance between the two positions);
* ``structural``: the neutral score + ``round(10 · |ops A ∩ ops B| / |ops A ∪ ops B|)`` (0..10) + a gesture
  term ``5 − round(5 · Σ|trait A − trait B| / 12000)`` (0..5, 5 = identical traits) + 5 when the two
  residents hold different sources (different artifact ids).
"""

from __future__ import annotations

from quineling.runtime.context import Env
from quineling.runtime.program import TRAITS
from quineling.runtime.ranch.world_state import ENERGY_MAX, capped, log, next_id
from stores.jsontypes import JSON

PROPOSAL_TICKS = 8
MIN_ENERGY = 50


def _distance(a: JSON, b: JSON) -> int:
    pa: dict[str, int] = a["position"]
    pb: dict[str, int] = b["position"]
    return abs(pa["x"] - pb["x"]) + abs(pa["y"] - pb["y"])


def score(world: JSON, a: JSON, b: JSON) -> int:
    value = -_distance(a, b)
    if world["affinity"] == "neutral":
        return value
    pa, pb = world["profiles"][a["artifactId"]], world["profiles"][b["artifactId"]]
    ops_a, ops_b = set(pa["ops"]), set(pb["ops"])
    union = ops_a | ops_b
    overlap = round(10 * len(ops_a & ops_b) / len(union)) if union else 0
    traits_a: dict[str, int] = pa["traits"]
    traits_b: dict[str, int] = pb["traits"]
    spread = sum(abs(traits_a[t] - traits_b[t]) for t in TRAITS)
    gesture = 5 - round(5 * spread / (2000 * len(TRAITS)))
    diversity = 5 if a["artifactId"] != b["artifactId"] else 0
    return value + overlap + gesture + diversity


def in_proposal(world: JSON) -> set[str]:
    return {rid for p in world["proposals"] for rid in p["parentResidents"]}


def eligible(world: JSON, r: JSON, pending: set[str]) -> bool:
    return (
        r["stage"] == "adult" and r["participating"] and world["tick"] >= r["restUntil"]
        and r["energy"] >= MIN_ENERGY and r["residentId"] not in pending
    )  # fmt: skip


def _court(world: JSON, env: Env, created: list[str]) -> None:
    pending = in_proposal(world)
    suitors = sorted(
        (r for r in world["residents"] if eligible(world, r, pending)), key=lambda r: r["residentId"]
    )
    choice: dict[str, str] = {}
    for a in suitors:
        partners = [b for b in suitors if b is not a]
        if partners:
            best = min(partners, key=lambda b: (-score(world, a, b), b["residentId"]))
            choice[a["residentId"]] = best["residentId"]
    by_id = {r["residentId"]: r for r in suitors}
    for a in suitors:
        rid, partner = a["residentId"], choice.get(a["residentId"])
        if partner is None or choice.get(partner) != rid or rid > partner:
            continue
        if len(world["proposals"]) >= env.limits.max_proposals:
            return
        pair = [by_id[rid], by_id[partner]]
        proposal = {
            "proposalId": next_id(world, "proposal", "p"),
            "parentResidents": [rid, partner],
            "parents": [{"artifactId": r["artifactId"], "intentHash": r["intentHash"]} for r in pair],
            "epochs": [r["epoch"] for r in pair],
            "createdTick": world["tick"],
            "expiresTick": capped(world["tick"] + PROPOSAL_TICKS),
        }
        world["proposals"].append(proposal)
        created.append(proposal["proposalId"])
        log(world, env, "proposed", proposalId=proposal["proposalId"], parentResidents=[rid, partner])


def tick_once(world: JSON, env: Env, summary: dict[str, list[str]]) -> None:
    world["tick"] = capped(world["tick"] + 1)
    tick = world["tick"]
    for r in world["residents"]:
        gain = 1 if r["stage"] == "nursery" else 2 if r["participating"] else 0
        r["energy"] = min(ENERGY_MAX, r["energy"] + gain)
    for r in world["residents"]:
        if r["stage"] == "nursery" and tick >= r["nurseryUntil"]:
            r["stage"] = "adult"
            summary["matured"].append(r["residentId"])
            log(world, env, "matured", residentId=r["residentId"])
    live = []
    for p in world["proposals"]:
        if tick >= p["expiresTick"]:
            summary["expired"].append(p["proposalId"])
            log(world, env, "expired", proposalId=p["proposalId"])
        else:
            live.append(p)
    world["proposals"] = live
    _court(world, env, summary["proposed"])


def advance(world: JSON, env: Env, ticks: int) -> list[JSON]:
    """Run ``ticks`` ticks; the effects summarise what happened (bounded, unlike the event log)."""
    summary: dict[str, list[str]] = {"matured": [], "expired": [], "proposed": []}
    for _ in range(ticks):
        tick_once(world, env, summary)
    return [{"kind": "advanced", "ticks": ticks, "tick": world["tick"], **summary}]
