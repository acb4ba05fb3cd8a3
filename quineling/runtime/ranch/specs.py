"""Closed request records shared by the ranch operations."""

from __future__ import annotations

from quineling.runtime import fields as f
from quineling.runtime.errors import QuinelingError
from quineling.runtime.program import TRAIT_MAX, TRAIT_MIN, TRAITS
from stores.jsontypes import JSON

COUNTER_MAX = 1_000_000  # every world timer and counter stops here instead of growing without bound
PARENT_COUNTS = {"compose": 2, "mate": 2, "merge": 2, "body": 1}

world_id = f.string(1, 64)
resident_id = f.string(1, 32)
proposal_id = f.string(1, 32)
request_id = f.string(1, 128)
epoch = f.integer(0, COUNTER_MAX)
revision = f.integer(0, COUNTER_MAX)

parent_pin = f.record({"artifactId": f.sha256_id, "intentHash": f.nullable(f.sha256_id)}, name="parent")
overrides = f.record({name: f.integer(TRAIT_MIN, TRAIT_MAX) for name in TRAITS}, name="overrides")
origin = f.tagged(
    "kind",
    {
        "manual": f.record({"kind": f.one_of("manual")}, name="origin"),
        "pairing": f.record(
            {
                "kind": f.one_of("pairing"),
                "worldId": world_id,
                "proposalId": proposal_id,
                "parentResidents": f.list_of(resident_id, 2, 2),
                "epochs": f.list_of(epoch, 2, 2),
            },
            name="origin",
        ),
    },
)
_input_record = f.record(
    {
        "parents": f.list_of(parent_pin, 1, 2),
        "recipe": f.one_of(*PARENT_COUNTS),
        "nonce": f.uint32,
        "mutation": f.one_of("none", "drift", "leap"),
        "overrides": f.Optional(overrides),
        "origin": origin,
    },
    name="offspring input",
)


def offspring_input(value: object, path: str) -> JSON:
    """The complete offspring input; parent count per recipe and override rules are structural checks."""
    cleaned = _input_record(value, path)
    wanted = PARENT_COUNTS[cleaned["recipe"]]
    if len(cleaned["parents"]) != wanted:
        raise QuinelingError(
            "invalid-request", f"recipe {cleaned['recipe']} takes {wanted} parent(s)", f.join(path, "parents")
        )
    if "overrides" in cleaned and cleaned["mutation"] != "none":
        raise QuinelingError(
            "invalid-request", "overrides require mutation 'none'", f.join(path, "overrides")
        )
    residents = cleaned["origin"].get("parentResidents")
    if residents is not None and residents[0] == residents[1]:
        raise QuinelingError(
            "invalid-request",
            "a pairing names two different residents",
            f.join(path, "origin.parentResidents"),
        )
    return cleaned


target = f.tagged(
    "kind",
    {
        "library": f.record({"kind": f.one_of("library")}, name="target"),
        "world": f.record(
            {"kind": f.one_of("world"), "worldId": world_id, "expectedRevision": revision}, name="target"
        ),
    },
)

command = f.tagged(
    "kind",
    {
        "advance": f.record({"kind": f.one_of("advance"), "ticks": f.integer(1, 4)}, name="command"),
        "import": f.record({"kind": f.one_of("import"), "artifactId": f.sha256_id}, name="command"),
        "participate": f.record(
            {"kind": f.one_of("participate"), "residentId": resident_id, "enabled": f.boolean}, name="command"
        ),
        "withdraw": f.record({"kind": f.one_of("withdraw"), "residentId": resident_id}, name="command"),
        "retire": f.record({"kind": f.one_of("retire"), "residentId": resident_id}, name="command"),
    },
)


def request(name: str, **fields: f.Field) -> f.Spec[JSON]:
    """A whole request record, ``operation`` included."""
    return f.record({"operation": f.one_of(name), **fields}, name=f"{name} request")
