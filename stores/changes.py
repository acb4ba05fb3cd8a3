"""Change sets: everything one operation wants to write, committed atomically or not at all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A document key: (kind, id), e.g. ("artifact", "sha256:…"), ("record", "rec_…"), ("world", "main").
Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Quota:
    """Add ``delta`` to counter ``name``; the commit is refused if the result would exceed ``limit``.

    A negative delta (freeing capacity) is always allowed. Counters never go below zero.
    """

    name: str
    delta: int
    limit: int


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """The outcome of computing one operation.

    ``expect`` maps every document the computation depended on to the version it was read at (0 = absent);
    ``put`` maps documents to their new values (each put bumps the version by one); ``delete`` removes
    documents; ``quotas`` adjust counters. A key that is put or deleted must also be in ``expect``.
    """

    expect: dict[Key, int] = field(default_factory=dict)
    put: dict[Key, dict[str, Any]] = field(default_factory=dict)
    delete: frozenset[Key] = frozenset()
    quotas: tuple[Quota, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.put or self.delete or self.quotas)


def merge_quotas(quotas: tuple[Quota, ...]) -> list[Quota]:
    """One entry per counter: deltas summed, the tightest limit kept (a change set may name a counter twice)."""
    merged: dict[str, Quota] = {}
    for quota in quotas:
        seen = merged.get(quota.name)
        if seen is None:
            merged[quota.name] = quota
        else:
            merged[quota.name] = Quota(quota.name, seen.delta + quota.delta, min(seen.limit, quota.limit))
    return list(merged.values())
