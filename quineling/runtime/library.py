"""The artifact library: loading, storing under quotas, and the companion (metadata) rules."""

from __future__ import annotations

from quineling.runtime.artifact import with_companions
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.intent import intent_hash
from stores.jsontypes import JSON

ARTIFACT = "artifact"
RECORD = "record"
# What a read cache may hold (stores/cache.py): documents that stay as written. An artifact's identity is its
# source hash and only its absent companions are ever filled in, once; a record is never rewritten.
CACHEABLE_KINDS = (ARTIFACT, RECORD)
NO_COMPANIONS: JSON = {
    "thought": None,
    "intent": None,
    "intentHash": None,
    "contract": None,
    "sourceMap": None,
}


def load_artifact(
    view: StateView, artifact_id: str, path: str = "artifactId", *, shared: bool = False
) -> JSON:
    """The retained artifact; ``shared``: for a caller that only reads it, which must then never change it
    (``StateView.peek``: the decoded value may be shared with other requests)."""
    artifact = view.peek(ARTIFACT, artifact_id) if shared else view.get(ARTIFACT, artifact_id)
    if artifact is None:
        raise QuinelingError("not-found", f"no retained artifact {artifact_id}", path)
    return artifact


def companions_of(
    intent: JSON | None,
    *,
    thought: str | None = None,
    source_map: list[JSON] | None = None,
) -> JSON:
    """Companion metadata for an artifact. The contract is the intent's declared interface."""
    if intent is None:
        return dict(NO_COMPANIONS, thought=thought, sourceMap=source_map)
    contract = {
        "inputs": [{"name": i["name"], "type": i["type"], "unit": i["unit"]} for i in intent["inputs"]],
        "outputs": [{"name": o["name"], "type": o["type"], "unit": o["unit"]} for o in intent["outputs"]],
    }
    return {
        "thought": thought if thought is not None else intent.get("thought"),
        "intent": intent,
        "intentHash": intent_hash(intent),
        "contract": contract,
        "sourceMap": source_map,
    }


def stage_artifact(view: StateView, env: Env, artifact: JSON) -> JSON:
    """Store ``artifact`` or reconcile it with the retained one; returns what the library now holds.

    Identity is the source hash, so a retained artifact keeps its body; only companions can change, and only
    from absent to present: an identical intent is a no-op and a different one is ``metadata-conflict``.
    """
    limits = env.limits
    existing = view.get(ARTIFACT, artifact["id"])
    if existing is None:
        view.put(ARTIFACT, artifact["id"], artifact)
        view.quota("artifacts", 1, limits.max_artifacts)
        view.quota("artifact-bytes", artifact["sizeBytes"], limits.max_artifact_bytes)
        return artifact
    offered = artifact["companions"]
    if offered["intent"] is None:
        return existing
    held = existing["companions"]["intentHash"]
    if held is None:
        updated = with_companions(existing, offered)
        view.put(ARTIFACT, existing["id"], updated)
        view.quota("artifact-bytes", updated["sizeBytes"] - existing["sizeBytes"], limits.max_artifact_bytes)
        return updated
    if held == offered["intentHash"]:
        return existing
    raise QuinelingError(
        "metadata-conflict",
        f"artifact {existing['id']} is already stored with a different intent ({held}); "
        "use a separate runtime to keep both interpretations",
        "intent",
    )
