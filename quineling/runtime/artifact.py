"""The stored artifact: canonical source plus everything derived from it and its companions.

``id`` is the SHA-256 of the UTF-8 source bytes; ``sizeBytes`` is the UTF-8 length of the sorted compact JSON of
the artifact *without* ``sizeBytes``, so the aggregate artifact budget counts genomes, anatomy and companions.
Companions (``thought, intent, intentHash, contract, sourceMap``) never change ``id``.
"""

from __future__ import annotations

import copy
import json

from quineling.runtime.anatomy import build_anatomy
from quineling.runtime.canonical import sha256_hex
from quineling.runtime.genome import colors_of, harmonics_of
from quineling.runtime.program import Body, Program
from stores.jsontypes import JSON

COMPANION_KEYS = ("thought", "intent", "intentHash", "contract", "sourceMap")


def normalize_companions(companions: JSON | None) -> JSON:
    """All five companion keys, missing ones as None; unknown keys are a programming error."""
    companions = companions or {}
    unknown = set(companions) - set(COMPANION_KEYS)
    if unknown:
        raise ValueError(f"unknown companion keys: {sorted(unknown)}")
    return {key: copy.deepcopy(companions.get(key)) for key in COMPANION_KEYS}


def size_of(artifact: JSON) -> int:
    """Bytes of the artifact's JSON (without ``sizeBytes``), the measure of the aggregate budget.

    Plain sorted JSON, not canonical_json: the artifact is built from normalized values, and skipping the
    integralizing walk halves the cost of every create.
    """
    body = {k: v for k, v in artifact.items() if k != "sizeBytes"}
    return len(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def build_artifact(
    source: str,
    program: Program,
    body: Body,
    parents: list[str],
    interface: JSON,
    companions: JSON | None,
) -> JSON:
    data = source.encode("utf-8")
    artifact: JSON = {
        "id": sha256_hex(data),
        "source": source,
        "interface": interface,
        "body": {"traits": dict(body["traits"]), "repeats": body["repeats"]},
        "anatomy": build_anatomy(program, body),
        "parents": list(parents),
        "genomes": {"harmonics": harmonics_of(data), "colors": colors_of(data)},
        "companions": normalize_companions(companions),
    }
    artifact["sizeBytes"] = size_of(artifact)
    return artifact


def with_companions(artifact: JSON, companions: JSON | None) -> JSON:
    """A copy of ``artifact`` with its companions replaced and ``sizeBytes`` recomputed (id unchanged)."""
    updated = {**artifact, "companions": normalize_companions(companions)}
    updated["sizeBytes"] = size_of(updated)
    return updated
