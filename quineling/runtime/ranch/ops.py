"""The eight ranch operations: closed request records plus their handlers."""

from __future__ import annotations

from quineling.runtime import fields as f
from quineling.runtime.build_ops import DEFAULT_FRAME, frame_options, phase
from quineling.runtime.intent import validate_intent
from quineling.runtime.operations import Operation, table
from quineling.runtime.ranch import annotate, lineage, offspring_ops, world
from quineling.runtime.ranch.specs import (
    command,
    offspring_input,
    request,
    request_id,
    revision,
    target,
    world_id,
)

_candidate_ids = {"candidateId": f.sha256_id, "childSourceHash": f.sha256_id}

OPERATIONS = table(
    Operation("offspringPreview", request("offspringPreview", input=offspring_input), offspring_ops.preview),
    Operation(
        "offspringFrame",
        request(
            "offspringFrame",
            input=offspring_input,
            **_candidate_ids,
            phase=phase,
            options=f.Optional(frame_options, DEFAULT_FRAME),
        ),  # fmt: skip
        offspring_ops.frame,
    ),
    Operation(
        "offspringAdmit",
        request(
            "offspringAdmit", input=offspring_input, **_candidate_ids, target=target, requestId=request_id
        ),
        offspring_ops.admit,
    ),
    Operation("lineage", request("lineage", **lineage.LINEAGE_REQUEST), lineage.lineage),
    Operation(
        "annotate", request("annotate", artifactId=f.sha256_id, intent=validate_intent), annotate.annotate
    ),
    Operation("worldCreate", request("worldCreate", **world.CREATE_FIELDS), world.world_create),
    Operation("worldInspect", request("worldInspect", worldId=world_id), world.world_inspect),
    Operation(
        "worldCommand",
        request(
            "worldCommand",
            worldId=world_id,
            expectedRevision=revision,
            sequence=f.integer(1, 1_000_000),
            command=command,
        ),  # fmt: skip
        world.world_command,
    ),
)
