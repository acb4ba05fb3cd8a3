"""What runtime state lives how long: the leases and extensions one request adds to the change set it
commits anyway (docs/decisions/0024-retention.md).

The store applies them (``stores.changes.Lease``): it drops lapsed documents lazily inside each commit and
gives their quota slots back in the same atomic step. This module only decides, from the data model:

* **Records** lapse ``record_ttl_seconds`` after they were made; nothing extends them.
* **Artifacts, the world and the lineage index** lapse ``idle_ttl_seconds`` after their last *use*: a
  committed request that read them and found them (every request over A2A commits, with its task), or that
  wrote them.
* **References** keep what they refer to: a world keeps its residents' artifacts as long as itself (each
  time the world's expiry moves, theirs move with it); a record keeps its artifact at least as long as
  itself. Lineage derivations and source ``parent`` lines only *name* artifacts (nothing loads an artifact
  through them), so they keep nothing.
* **Owned documents** lapse with what they belong to: world receipts with the world, derivations and
  admission receipts with the lineage (each admission appends the derivation its receipt guards), so an
  exact retry replays for exactly as long as the effect it guards is retained.
"""

from __future__ import annotations

from quineling.runtime.context import Env, StateView
from quineling.runtime.library import ARTIFACT, RECORD
from quineling.runtime.ranch.lineage import DERIVATION, LINEAGE
from quineling.runtime.ranch.offspring_ops import RECEIPT
from quineling.runtime.ranch.world_state import WORLD, WORLD_RECEIPTS
from stores.changes import Key, Lease
from stores.jsontypes import JSON

IDLE_KINDS = frozenset({ARTIFACT, WORLD[0], LINEAGE[0]})  # lapse after their last use
OWNERS = {RECEIPT: LINEAGE, DERIVATION: LINEAGE, WORLD_RECEIPTS: WORLD}  # lapse with their owner
FIXED_QUOTAS = frozenset({"records"})  # held only by documents whose expiry no use extends


def replay_reads(reads: dict[Key, tuple[JSON | None, int]]) -> dict[Key, tuple[JSON | None, int]]:
    """The part of a request's reads that :func:`stage` needs to stage the same leases and extensions again
    for a remembered answer (``runtime/memo.py``): each read's version, whether it was found (``{}``
    stands for a found document's value) and the value only where :func:`stage` looks inside it — the
    world's, for its residents. A memo entry then holds no copy of the artifacts and sources it rests on."""
    return {
        key: (value if value is None or key == WORLD else {}, version)
        for key, (value, version) in reads.items()
    }


def holds(kind: str, value: JSON) -> dict[str, int]:
    """The quota amounts a document accounts for: what its lapse gives back (the quotas its put charged)."""
    if kind == ARTIFACT:
        return {"artifacts": 1, "artifact-bytes": int(value["sizeBytes"])}
    if kind == RECORD:
        return {"records": 1}
    if kind == RECEIPT:
        return {"admission-receipts": 1}
    return {}


def stage(view: StateView, env: Env) -> None:
    """Add this request's leases and extensions to ``view`` (called once, on the outcome to commit)."""
    retention = env.retention
    if not (retention.record_ttl_seconds or retention.idle_ttl_seconds):
        return  # everything is kept for good: no leases, nothing to extend
    now = env.now()
    idle = now + retention.idle_ttl_seconds if retention.idle_ttl_seconds else None
    staged = view.staged()
    for key, value in staged.items():
        lease = _lease(key, value, now, idle, env)
        if lease is not None:
            view.lease(key, lease)
    if idle is None:
        return
    found = view.found()
    for key in found:
        if key[0] in IDLE_KINDS:
            view.extend(key, idle)
    world = staged.get(WORLD) or (view.get(*WORLD) if WORLD in found else None)
    if world is not None:
        for resident in world["residents"]:
            view.extend((ARTIFACT, resident["artifactId"]), idle)
    if retention.record_ttl_seconds:
        for key, value in staged.items():
            if key[0] == RECORD:
                view.extend((ARTIFACT, value["artifactId"]), now + retention.record_ttl_seconds)


def _lease(key: Key, value: JSON, now: float, idle: float | None, env: Env) -> Lease | None:
    kind = key[0]
    held = holds(kind, value)
    if kind == RECORD:
        ttl = env.retention.record_ttl_seconds
        return Lease(now + ttl, holds=held) if ttl else None
    if idle is None:
        return None  # without idle expiry, what lapses with an owner is kept for good like its owner
    owner = OWNERS.get(kind)
    if owner is not None:
        return Lease(owner=owner, holds=held)
    if kind in IDLE_KINDS:
        return Lease(idle, holds=held)
    return None
