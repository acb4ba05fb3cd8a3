"""The world document and its small helpers.

``("world", "main")`` holds the runtime's one world: the public snapshot fields
``{id, worldKey, seed, affinity, revision, nextSequence, tick, residents, proposals, events}`` plus private
bookkeeping that :func:`snapshot` leaves out:

* ``counters``: ``{resident, proposal, event}`` — the last number handed out (ids ``r<n>``, ``p<n>``);
* ``profiles``: ``{artifactId: {ops, traits}}`` — what structural courtship scores need, captured when an
  artifact enters the world, so ``advance`` never re-reads artifacts;
* ``pairs``: the pair ledger — unordered ``[residentId, residentId]`` pairs that have had a world birth
  (capped by ``limits.max_pairs``; a birth from a new pair when full is ``resource-limit``).

The world id is ``wld_`` + the first 32 hex digits of sha256 of the canonical configuration
``{affinity, seed, worldKey}``. A new world starts at revision 0, nextSequence 1, tick 0.

Positions: resident number *n* (the n-th resident ever placed) sits at ``x = draw(seed, n, "x") mod 64`` and
``y = draw(seed, n, "y") mod 64`` where ``draw`` reads the first 8 bytes of
``SHA-256("quineling-world:<seed>:<n>:<axis>")``; positions never change.

Events are a bounded log, not a ledger: at ``limits.max_world_events`` the oldest event is dropped. Each event
is ``{index, tick, kind, …}`` with a running ``index`` so a reader can tell that older ones were dropped.
Every counter and timer (tick, revision, sequence, epochs, ids, energy timers) stops at 1,000,000.
"""

from __future__ import annotations

import hashlib

from quineling.runtime.canonical import canonical_json, hash_json
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.ranch.specs import COUNTER_MAX
from stores.jsontypes import JSON, JSONValue

WORLD = ("world", "main")
WORLD_RECEIPTS = "world-receipts"
PUBLIC = ("id", "worldKey", "seed", "affinity", "revision", "nextSequence", "tick", "residents", "proposals",
          "events")  # fmt: skip
GRID = 64
ENERGY_MAX = 100


def capped(value: int) -> int:
    return min(value, COUNTER_MAX)


def world_id_of(config: JSON) -> str:
    return "wld_" + hash_json(config).removeprefix("sha256:")[:32]


def new_world(config: JSON) -> JSON:
    return {
        "id": world_id_of(config), **config, "revision": 0, "nextSequence": 1, "tick": 0,
        "residents": [], "proposals": [], "events": [],
        "counters": {"resident": 0, "proposal": 0, "event": 0}, "profiles": {}, "pairs": [],
    }  # fmt: skip


def snapshot(world: JSON) -> JSON:
    return {key: world[key] for key in PUBLIC}


def load_world(view: StateView, world_id: str, path: str) -> JSON:
    world = view.get(*WORLD)
    if world is None or world["id"] != world_id:
        raise QuinelingError("not-found", f"no world {world_id}", path)
    return world


def save_world(view: StateView, env: Env, world: JSON) -> None:
    size = len(canonical_json(world).encode("utf-8"))
    if size > env.limits.max_world_bytes:
        raise QuinelingError(
            "resource-limit", f"the world would grow to {size} bytes (limit {env.limits.max_world_bytes})"
        )
    view.put(*WORLD, world)


def bump_revision(world: JSON) -> None:
    world["revision"] = capped(world["revision"] + 1)


def next_id(world: JSON, counter: str, prefix: str) -> str:
    if world["counters"][counter] >= COUNTER_MAX:  # a stopped counter must never hand out an id twice
        raise QuinelingError("resource-limit", f"the world's {counter} counter has stopped at {COUNTER_MAX}")
    world["counters"][counter] += 1
    return f"{prefix}{world['counters'][counter]}"


def log(world: JSON, env: Env, kind: str, **details: JSONValue) -> JSON:
    world["counters"]["event"] = capped(world["counters"]["event"] + 1)
    event = {"index": world["counters"]["event"], "tick": world["tick"], "kind": kind, **details}
    world["events"].append(event)
    del world["events"][: max(0, len(world["events"]) - env.limits.max_world_events)]
    return event


def _draw(seed: int, number: int, axis: str) -> int:
    digest = hashlib.sha256(f"quineling-world:{seed}:{number}:{axis}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def place(world: JSON, number: int) -> dict[str, int]:
    return {"x": _draw(world["seed"], number, "x") % GRID, "y": _draw(world["seed"], number, "y") % GRID}


def resident(world: JSON, resident_id: str, path: str) -> JSON:
    residents: list[JSON] = world["residents"]
    for r in residents:
        if r["residentId"] == resident_id:
            return r
    raise QuinelingError("not-found", f"no resident {resident_id} in world {world['id']}", path)


def add_resident(
    world: JSON, artifact_id: str, intent_hash: str | None, *, stage: str, energy: int,
    nursery_until: int | None, profile: JSON,
) -> JSON:  # fmt: skip
    rid = next_id(world, "resident", "r")
    entry = {
        "residentId": rid, "artifactId": artifact_id, "intentHash": intent_hash, "epoch": 0, "stage": stage,
        "energy": energy, "participating": False, "restUntil": world["tick"], "nurseryUntil": nursery_until,
        "position": place(world, world["counters"]["resident"]),
    }  # fmt: skip
    world["residents"].append(entry)
    world["profiles"].setdefault(artifact_id, profile)
    return entry


def profile_of(program: JSON, body: JSON) -> JSON:
    return {"ops": sorted({s["op"] for s in program["steps"]}), "traits": dict(body["traits"])}


def cancel_proposals(world: JSON, env: Env, affected: set[str], reason: str) -> list[str]:
    """Drop every proposal naming an affected resident; returns their ids (logged as ``cancelled``)."""
    keep: list[JSON] = []
    gone: list[JSON] = []
    for p in world["proposals"]:
        (gone if affected & set(p["parentResidents"]) else keep).append(p)
    world["proposals"] = keep
    for p in gone:
        log(world, env, "cancelled", proposalId=p["proposalId"], reason=reason)
    return [p["proposalId"] for p in gone]


def forget_unused_profiles(world: JSON) -> None:
    held = {r["artifactId"] for r in world["residents"]}
    world["profiles"] = {k: v for k, v in world["profiles"].items() if k in held}
