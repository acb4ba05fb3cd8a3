"""Derivations: the flat, append-order evidence of admitted offspring, and the ``lineage`` query.

Storage: ``("lineage", "main")`` is a small index ``{count, bytes, entries: [{index, child, parents}]}`` used
for caps and filtering; each derivation lives in ``("derivation", "<index>")``. Indexes count from 0. Caps
(``limits.max_derivations`` entries, ``max_derivation_bytes`` each, ``max_lineage_bytes`` total, measured as
canonical JSON) refuse a new derivation with ``resource-limit``; nothing is evicted.

``lineage {artifactId?, cursor?, limit?}``: ``cursor`` is the index to start from (inclusive, default 0);
``nextCursor`` is one past the last returned index, present only when a further matching derivation exists.
An ``artifactId`` nobody derived from simply matches nothing (an empty page, not ``not-found``).
"""

from __future__ import annotations

from quineling.runtime import fields as f
from quineling.runtime.canonical import canonical_json
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from stores.jsontypes import JSON

LINEAGE = ("lineage", "main")
DERIVATION = "derivation"
EMPTY_INDEX: JSON = {"count": 0, "bytes": 0, "entries": []}


def _index(view: StateView) -> JSON:
    return view.get(*LINEAGE) or dict(EMPTY_INDEX, entries=[])


def append(view: StateView, env: Env, derivation: JSON) -> JSON:
    """Stage one derivation (``index`` is assigned here) and return it."""
    limits = env.limits
    index = _index(view)
    if index["count"] >= limits.max_derivations:
        raise QuinelingError(
            "resource-limit", f"lineage holds its maximum of {limits.max_derivations} derivations"
        )
    entry = {"index": index["count"], **derivation}
    size = len(canonical_json(entry).encode("utf-8"))
    if size > limits.max_derivation_bytes:
        raise QuinelingError(
            "resource-limit", f"a derivation of {size} bytes exceeds {limits.max_derivation_bytes}"
        )
    if index["bytes"] + size > limits.max_lineage_bytes:
        raise QuinelingError("resource-limit", f"lineage would exceed {limits.max_lineage_bytes} bytes")
    summary = {"index": entry["index"], "child": entry["childArtifactId"],
               "parents": [p["artifactId"] for p in entry["parents"]]}  # fmt: skip
    view.put(*LINEAGE, {
        "count": index["count"] + 1, "bytes": index["bytes"] + size, "entries": index["entries"] + [summary],
    })  # fmt: skip
    view.put(DERIVATION, str(entry["index"]), entry)
    return entry


def _matches(summary: JSON, artifact_id: str | None) -> bool:
    return artifact_id is None or summary["child"] == artifact_id or artifact_id in summary["parents"]


def lineage(args: JSON, view: StateView, env: Env) -> JSON:
    artifact_id = args.get("artifactId")
    matching = [
        e["index"]
        for e in _index(view)["entries"]
        if e["index"] >= args["cursor"] and _matches(e, artifact_id)
    ]
    page = matching[: args["limit"]]
    view.prefetch([(DERIVATION, str(i)) for i in page])
    result: JSON = {"derivations": [view.get(DERIVATION, str(i)) for i in page]}
    if len(matching) > len(page):
        result["nextCursor"] = page[-1] + 1
    return result


LINEAGE_REQUEST: dict[str, f.Field] = {
    "artifactId": f.Optional(f.sha256_id),
    "cursor": f.Optional(f.integer(0, f.UINT32_MAX), 0),
    "limit": f.Optional(f.integer(1, 32), 16),
}
