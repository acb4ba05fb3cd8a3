"""``offspringPreview``, ``offspringFrame`` and ``offspringAdmit``.

Admission receipts are ``("receipt", <requestId>)`` documents ``{requestId, payloadHash, acknowledgement}``
counted by the store quota ``admission-receipts`` (``limits.max_admission_receipts``, never evicted).
``payloadHash`` is sha256 of the whole canonical request. The replay check is the very first thing an
admission does: the identical payload returns the saved acknowledgement before any rebuild or freshness check,
and another payload under a used ``requestId`` is ``conflict``. A refused admission stores no receipt, so the
same ``requestId`` may be tried again.

A pairing origin is only admitted into its world: ``target.kind == "library"`` with a pairing origin is
``ineligible`` (the derivation would otherwise claim a pairing nobody checked). Admission never executes the
child; the child artifact is stored without companions (an already retained child keeps its own).
"""

from __future__ import annotations

from quineling.runtime.anatomy import build_anatomy
from quineling.runtime.artifact import build_artifact
from quineling.runtime.canonical import canonical_json, hash_json
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.frame import sample_frame
from quineling.runtime.library import stage_artifact
from quineling.runtime.ranch import lineage, world_birth
from quineling.runtime.ranch.offspring import build_candidate, rebuild_verified
from stores.jsontypes import JSON

RECEIPT = "receipt"


def preview(args: JSON, view: StateView, env: Env) -> JSON:
    return build_candidate(view, env, args["input"]).preview()


def frame(args: JSON, view: StateView, env: Env) -> JSON:
    build = rebuild_verified(view, env, args)
    assert build.program is not None and build.body is not None
    options = args["options"]
    geometry = sample_frame(
        build_anatomy(build.program, build.body),
        build.body,
        args["phase"],
        options["budget"],
        options["crests"],
    )
    return {"candidateId": args["candidateId"], "childSourceHash": args["childSourceHash"], "frame": geometry}


def _replay(view: StateView, args: JSON, payload: str) -> JSON | None:
    receipt = view.get(RECEIPT, args["requestId"])
    if receipt is None:
        return None
    if receipt["payloadHash"] != payload:
        raise QuinelingError(
            "conflict", f"requestId {args['requestId']} was used with a different admission", "requestId"
        )
    acknowledgement: JSON = receipt["acknowledgement"]
    return acknowledgement


def admit(args: JSON, view: StateView, env: Env) -> JSON:
    payload = hash_json(args)
    saved = _replay(view, args, payload)
    if saved is not None:
        return saved
    offspring, target = args["input"], args["target"]
    if target["kind"] == "library" and offspring["origin"]["kind"] == "pairing":
        raise QuinelingError(
            "ineligible", "a pairing origin is admitted into its world, not the library", "target.kind"
        )
    build = rebuild_verified(view, env, args)
    assert (
        build.candidate is not None
        and build.program is not None
        and build.body is not None
        and build.interface is not None
    ), "rebuild_verified returns a ready build or raises"
    artifact = build_artifact(
        build.candidate["childSource"], build.program, build.body, build.parents, build.interface, None
    )
    child = stage_artifact(view, env, artifact)
    revision = None
    if target["kind"] == "world":
        revision = world_birth.birth(view, env, args, child, build.program, build.body)
    derivation = lineage.append(view, env, {
        "childArtifactId": child["id"], "parents": offspring["parents"], "recipe": offspring["recipe"],
        "nonce": offspring["nonce"], "mutation": offspring["mutation"], "overrides": offspring.get("overrides"),
        "origin": offspring["origin"], "requestId": args["requestId"], "target": target,
    })  # fmt: skip
    ack: JSON = {
        "requestId": args["requestId"], "artifactId": child["id"], "candidateId": args["candidateId"],
        "childSourceHash": args["childSourceHash"], "target": target, "derivation": derivation,
    }  # fmt: skip
    if revision is not None:
        ack["worldRevision"] = revision
    size = len(canonical_json(ack).encode("utf-8"))
    if size > env.limits.max_acknowledgement_bytes:
        raise QuinelingError("resource-limit", f"the acknowledgement would be {size} bytes", None)
    view.put(
        RECEIPT,
        args["requestId"],
        {"requestId": args["requestId"], "payloadHash": payload, "acknowledgement": ack},
    )
    view.quota("admission-receipts", 1, env.limits.max_admission_receipts)
    return ack
