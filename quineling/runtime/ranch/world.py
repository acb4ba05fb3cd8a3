"""World operations: ``worldCreate``, ``worldInspect`` and ``worldCommand``.

World receipts live in ``("world-receipts", <worldId>)`` as ``{sequence: {payloadHash, acknowledgement}}``
(keys are decimal strings). The newest ``limits.max_world_receipts`` are retained; adding one more discards
the oldest, and a later retry of a discarded sequence is ``sequence-discarded``.

``worldCommand`` order: unknown world → ``not-found``; a retained sequence with the identical payload
(sha256 of the whole canonical request, old ``expectedRevision`` included) → the original acknowledgement
and no effect; a retained sequence with another payload → ``conflict``; a sequence below ``nextSequence``
that is no longer retained → ``sequence-discarded``; above it → ``sequence-gap``; then ``expectedRevision``
must equal ``revision`` (``stale-revision``). Success consumes one sequence and advances the revision once.
A refused command changes nothing, not even the sequence.
"""

from __future__ import annotations

from quineling.runtime import fields as f
from quineling.runtime.canonical import canonical_json, hash_json
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.ranch.specs import COUNTER_MAX
from quineling.runtime.ranch.world_commands import apply_command
from quineling.runtime.ranch.world_state import (
    WORLD,
    WORLD_RECEIPTS,
    bump_revision,
    load_world,
    new_world,
    save_world,
    snapshot,
)  # fmt: skip
from stores.jsontypes import JSON


def world_create(args: JSON, view: StateView, env: Env) -> JSON:
    config = {"worldKey": args["worldKey"], "seed": args["seed"], "affinity": args["affinity"]}
    world = view.get(*WORLD)
    if world is not None:
        held = {key: world[key] for key in config}
        if held != config:
            raise QuinelingError(
                "conflict", f"this runtime already holds world {world['id']} with another configuration", None
            )
        return snapshot(world)
    world = new_world(config)
    save_world(view, env, world)
    return snapshot(world)


def world_inspect(args: JSON, view: StateView, env: Env) -> JSON:
    return snapshot(load_world(view, args["worldId"], "worldId"))


def _check_order(world: JSON, receipts: JSON, args: JSON, payload: str) -> JSON | None:
    """The original acknowledgement for an exact retry, ``None`` for a fresh command, or an error."""
    sequence = args["sequence"]
    held = receipts.get(str(sequence))
    if held is not None:
        if held["payloadHash"] == payload:
            acknowledgement: JSON = held["acknowledgement"]
            return acknowledgement
        raise QuinelingError("conflict", f"sequence {sequence} was used with a different command", "sequence")
    if sequence < world["nextSequence"]:
        raise QuinelingError(
            "sequence-discarded", f"sequence {sequence} is older than the retained receipts", "sequence"
        )
    if sequence > world["nextSequence"]:
        raise QuinelingError("sequence-gap", f"the next sequence is {world['nextSequence']}", "sequence")
    if args["expectedRevision"] != world["revision"]:
        raise QuinelingError(
            "stale-revision", f"the world is at revision {world['revision']}", "expectedRevision"
        )
    return None


def world_command(args: JSON, view: StateView, env: Env) -> JSON:
    view.prefetch([WORLD, (WORLD_RECEIPTS, args["worldId"])])
    world = load_world(view, args["worldId"], "worldId")
    receipts = view.get(WORLD_RECEIPTS, world["id"]) or {}
    payload = hash_json(args)
    original = _check_order(world, receipts, args, payload)
    if original is not None:
        return original
    if world["nextSequence"] >= COUNTER_MAX:
        raise QuinelingError(
            "resource-limit", "the world's sequence counter has stopped at 1000000", "sequence"
        )
    effects = apply_command(world, args["command"], view, env)
    world["nextSequence"] += 1
    bump_revision(world)
    ack = {
        "worldId": world["id"], "sequence": args["sequence"], "revision": world["revision"],
        "command": args["command"], "effects": effects,
    }  # fmt: skip
    size = len(canonical_json(ack).encode("utf-8"))
    if size > env.limits.max_acknowledgement_bytes:
        raise QuinelingError("resource-limit", f"the acknowledgement would be {size} bytes", None)
    save_world(view, env, world)
    receipts = dict(receipts)
    receipts[str(args["sequence"])] = {"payloadHash": payload, "acknowledgement": ack}
    for old in sorted(receipts, key=int)[: max(0, len(receipts) - env.limits.max_world_receipts)]:
        del receipts[old]
    view.put(WORLD_RECEIPTS, world["id"], receipts)
    return ack


CREATE_FIELDS: dict[str, f.Field] = {
    "worldKey": f.string(1, 64),
    "seed": f.uint32,
    "affinity": f.Optional(f.one_of("structural", "neutral"), "structural"),
}
