"""``annotate {artifactId, intent}``: attach a companion intent that describes exactly this
artifact's program, and invalidate world pins that named the old (absent) intent — in one change set.

Graph equality compares the compiled intent's inputs (name, type, unit **and literal value**), steps (id,
op, args, in/out ports in order) and outputs (name, from, type, unit) with the program in the artifact's
source; only the body (traits, repeats) and heredity are ignored. Literal values count because they are part
of the source: an intent with other values would compile to a different artifact. Mismatch → ``intent-mismatch``
(checked before the companion rule). Then: no companion intent → attach; identical → the artifact unchanged
(no world effect); different → ``metadata-conflict``.

On attach, every resident holding the artifact gets the new ``intentHash`` and ``epoch + 1``, the proposals
naming those residents are cancelled, and the world revision advances once (no sequence is consumed).
"""

from __future__ import annotations

from quineling.runtime.artifact import build_artifact
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.intent import check_program, intent_hash, program_of_intent
from quineling.runtime.library import companions_of, load_artifact, stage_artifact
from quineling.runtime.ranch.offspring import held_intent_hash
from quineling.runtime.ranch.world_state import (
    WORLD,
    bump_revision,
    cancel_proposals,
    capped,
    log,
    save_world,
)
from quineling.runtime.source import parse_source
from stores.jsontypes import JSON


def _invalidate_pins(view: StateView, env: Env, artifact_id: str, new_hash: str) -> None:
    world = view.get(*WORLD)
    if world is None:
        return
    holders = [r for r in world["residents"] if r["artifactId"] == artifact_id]
    if not holders:
        return
    for r in holders:
        r["intentHash"] = new_hash
        r["epoch"] = capped(r["epoch"] + 1)
    affected = {r["residentId"] for r in holders}
    log(world, env, "annotated", artifactId=artifact_id, residents=sorted(affected))
    cancel_proposals(world, env, affected, "annotated")
    bump_revision(world)
    save_world(view, env, world)


def annotate(args: JSON, view: StateView, env: Env) -> JSON:
    view.prefetch([("artifact", args["artifactId"]), WORLD])
    existing = load_artifact(view, args["artifactId"])
    intent = args["intent"]
    program, body, parents = parse_source(existing["source"])
    offered = program_of_intent(intent)
    check_program(offered, code="invalid-intent", path="intent")
    if offered != program:
        raise QuinelingError(
            "intent-mismatch", "the intent does not compile to this artifact's program graph", "intent"
        )
    new_hash = intent_hash(intent)
    held = held_intent_hash(existing)
    if held == new_hash:
        return existing
    interface = check_program(program, code="invalid-source", path="")
    artifact = build_artifact(existing["source"], program, body, parents, interface, companions_of(intent))
    updated = stage_artifact(view, env, artifact)  # raises metadata-conflict when another intent is held
    _invalidate_pins(view, env, existing["id"], new_hash)
    return updated
