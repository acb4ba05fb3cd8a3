"""The five world commands. Each mutates the loaded world in place and returns its effects.

* ``import {artifactId}``: a new adult resident (energy 60, participation off) holding a retained artifact
  (``not-found`` otherwise); ``resource-limit`` at ``limits.max_residents``.
* ``participate {residentId, enabled}``: a nursery resident cannot be enabled (``ineligible``). Disabling
  also cancels the resident's pending proposal, so re-enabling can never revive it.
* ``withdraw {residentId}``: cancels the resident's pending proposal and leaves participation as it is (the
  resident may court again later; that makes a *new* proposal).
* ``retire {residentId}``: removes the resident (freeing its capacity) and cancels its pending proposal.
* ``advance {ticks}``: see :mod:`quineling.runtime.ranch.courtship`.
"""

from __future__ import annotations

from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.library import load_artifact
from quineling.runtime.ranch.courtship import advance
from quineling.runtime.ranch.offspring import held_intent_hash
from quineling.runtime.ranch.world_state import (
    add_resident,
    cancel_proposals,
    forget_unused_profiles,
    log,
    profile_of,
    resident,
)  # fmt: skip
from quineling.runtime.source import parse_source
from stores.jsontypes import JSON

IMPORT_ENERGY = 60


def _import(world: JSON, command: JSON, view: StateView, env: Env) -> list[JSON]:
    artifact = load_artifact(view, command["artifactId"], "command.artifactId")
    if len(world["residents"]) >= env.limits.max_residents:
        raise QuinelingError(
            "resource-limit", f"the world holds its maximum of {env.limits.max_residents} residents"
        )
    program, body, _ = parse_source(artifact["source"])
    entry = add_resident(
        world, artifact["id"], held_intent_hash(artifact), stage="adult", energy=IMPORT_ENERGY,
        nursery_until=None, profile=profile_of(program, body),
    )  # fmt: skip
    log(world, env, "imported", residentId=entry["residentId"], artifactId=artifact["id"])
    return [{"kind": "imported", "residentId": entry["residentId"]}]


def _cancelled(ids: list[str]) -> list[JSON]:
    return [{"kind": "cancelled", "proposalId": pid} for pid in ids]


def _participate(world: JSON, command: JSON, view: StateView, env: Env) -> list[JSON]:
    r = resident(world, command["residentId"], "command.residentId")
    enabled = command["enabled"]
    if enabled and r["stage"] != "adult":
        raise QuinelingError("ineligible", f"{r['residentId']} is still in the nursery", "command.enabled")
    r["participating"] = enabled
    log(world, env, "participation", residentId=r["residentId"], enabled=enabled)
    effects = [{"kind": "participation", "residentId": r["residentId"], "enabled": enabled}]
    if not enabled:
        effects += _cancelled(cancel_proposals(world, env, {r["residentId"]}, "participation-off"))
    return effects


def _withdraw(world: JSON, command: JSON, view: StateView, env: Env) -> list[JSON]:
    r = resident(world, command["residentId"], "command.residentId")
    log(world, env, "withdrawn", residentId=r["residentId"])
    cancelled = cancel_proposals(world, env, {r["residentId"]}, "withdrawn")
    return [{"kind": "withdrawn", "residentId": r["residentId"]}, *_cancelled(cancelled)]


def _retire(world: JSON, command: JSON, view: StateView, env: Env) -> list[JSON]:
    r = resident(world, command["residentId"], "command.residentId")
    world["residents"] = [x for x in world["residents"] if x is not r]
    forget_unused_profiles(world)
    log(world, env, "retired", residentId=r["residentId"])
    cancelled = cancel_proposals(world, env, {r["residentId"]}, "retired")
    return [{"kind": "retired", "residentId": r["residentId"]}, *_cancelled(cancelled)]


def _advance(world: JSON, command: JSON, view: StateView, env: Env) -> list[JSON]:
    return advance(world, env, command["ticks"])


COMMANDS = {
    "import": _import, "participate": _participate, "withdraw": _withdraw, "retire": _retire, "advance": _advance,
}  # fmt: skip


def apply_command(world: JSON, command: JSON, view: StateView, env: Env) -> list[JSON]:
    return COMMANDS[command["kind"]](world, command, view, env)
