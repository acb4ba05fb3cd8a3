"""Shared helpers for the runtime and ranch tests (no tests here)."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from quineling.runtime.context import Env, RuntimeLimits
from quineling.runtime.errors import QuinelingError
from quineling.runtime.runtime import Runtime
from stores.memory import MemoryBackend

SUM_CREDITS = "[2,2,8] credits | sum | report request"
ALLOCATE = "5 credits | allocate from 20 | report allocated, remaining"
SQUARES = "[2,3,4] | square | sum | report total"
LIBRARY = {"kind": "library"}
MANUAL = {"kind": "manual"}


def make_runtime(**limits: int) -> Runtime:
    counter = itertools.count(1)
    env = Env(
        limits=RuntimeLimits(**limits),
        clock=lambda: "2026-01-01T00:00:00.000Z",
        new_record_id=lambda: f"rec_{next(counter):032x}",
    )
    return Runtime(store=MemoryBackend().state_store(), env=env)


def call(rt: Runtime, **request: Any) -> Any:
    response = rt.dispatch(request)
    assert response["operation"] == request["operation"]
    return response["result"]


def fails(rt: Runtime, code: str, **request: Any) -> QuinelingError:
    with pytest.raises(QuinelingError) as info:
        rt.dispatch(request)
    assert info.value.code == code, info.value.to_dict()
    return info.value


def state(rt: Runtime) -> Any:
    """Everything the memory store holds for the default scope (documents, versions, counters)."""
    data = rt.store._data  # type: ignore[attr-defined]
    return copy.deepcopy(
        (data.documents.get("default"), data.versions.get("default"), data.counters.get("default"))
    )


def create(rt: Runtime, thought: str, seed: int = 0, repeats: int = 1) -> dict[str, Any]:
    result = call(rt, operation="create", thought=thought, options={"seed": seed, "repeats": repeats})
    assert result["status"] == "created", result
    return result["artifact"]


def pin(artifact: dict[str, Any]) -> dict[str, Any]:
    return {"artifactId": artifact["id"], "intentHash": artifact["companions"]["intentHash"]}


def offspring(parents: list[dict[str, Any]], recipe: str, **extra: Any) -> dict[str, Any]:
    value = {
        "parents": [pin(p) for p in parents],
        "recipe": recipe,
        "nonce": 0,
        "mutation": "none",
        "origin": dict(MANUAL),
    }
    value.update(extra)
    return value


def ready(rt: Runtime, value: dict[str, Any]) -> dict[str, Any]:
    result = call(rt, operation="offspringPreview", input=value)
    assert result["status"] == "ready", result
    return result["candidate"]


def admission(
    value: dict[str, Any], candidate: dict[str, Any], request_id: str, target: Any = LIBRARY
) -> dict:
    return {
        "operation": "offspringAdmit",
        "input": value,
        "candidateId": candidate["candidateId"],
        "childSourceHash": candidate["childSourceHash"],
        "target": target,
        "requestId": request_id,
    }


def admit(rt: Runtime, value: dict[str, Any], request_id: str, target: Any = LIBRARY) -> dict[str, Any]:
    return call(rt, **admission(value, ready(rt, value), request_id, target))


# --- worlds -----------------------------------------------------------------------------------------------


def world(rt: Runtime, key: str = "garden", seed: int = 23, affinity: str = "neutral") -> dict[str, Any]:
    return call(rt, operation="worldCreate", worldKey=key, seed=seed, affinity=affinity)


def inspect_world(rt: Runtime, world_id: str) -> dict[str, Any]:
    return call(rt, operation="worldInspect", worldId=world_id)


def command_request(rt: Runtime, world_id: str, command: dict[str, Any]) -> dict[str, Any]:
    snap = inspect_world(rt, world_id)
    return {
        "operation": "worldCommand",
        "worldId": world_id,
        "expectedRevision": snap["revision"],
        "sequence": snap["nextSequence"],
        "command": command,
    }


def command(rt: Runtime, world_id: str, command: dict[str, Any]) -> dict[str, Any]:
    return call(rt, **command_request(rt, world_id, command))


def garden(rt: Runtime, artifacts: list[dict[str, Any]] | None = None) -> str:
    """The id of a world whose residents r1, r2, … are ``artifacts`` imported in order (default: SUM_CREDITS
    and ALLOCATE, made here), r1 and r2 participating: they court on the next tick."""
    if artifacts is None:
        artifacts = [create(rt, SUM_CREDITS, seed=1), create(rt, ALLOCATE, seed=2)]
    world_id: str = world(rt)["id"]
    for artifact in artifacts:
        command(rt, world_id, {"kind": "import", "artifactId": artifact["id"]})
    for rid in ("r1", "r2"):
        command(rt, world_id, {"kind": "participate", "residentId": rid, "enabled": True})
    return world_id


def courting_pair(
    rt: Runtime, thoughts: tuple[str, str] = (SUM_CREDITS, ALLOCATE)
) -> tuple[dict, list[dict]]:
    """A world with two participating adults and a live proposal; returns (snapshot, [artifact A, artifact B])."""
    artifacts = [create(rt, thoughts[0], seed=1), create(rt, thoughts[1], seed=2)]
    world_id = garden(rt, artifacts)
    command(rt, world_id, {"kind": "advance", "ticks": 1})
    snap = inspect_world(rt, world_id)
    assert len(snap["proposals"]) == 1, snap
    return snap, artifacts


def pairing_input(snap: dict[str, Any], recipe: str = "compose", *, swap: bool = False, **extra: Any) -> dict:
    proposal = snap["proposals"][0]
    order = [1, 0] if swap else [0, 1]
    value = {
        "parents": [proposal["parents"][i] for i in order],
        "recipe": recipe,
        "nonce": 5,
        "mutation": "none",
        "origin": {
            "kind": "pairing",
            "worldId": snap["id"],
            "proposalId": proposal["proposalId"],
            "parentResidents": [proposal["parentResidents"][i] for i in order],
            "epochs": [proposal["epochs"][i] for i in order],
        },
    }
    value.update(extra)
    return value


def world_target(snap: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "world", "worldId": snap["id"], "expectedRevision": snap["revision"]}
