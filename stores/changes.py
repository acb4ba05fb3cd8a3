"""Change sets: everything one operation wants to write, committed atomically or not at all."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# A document key: (kind, id), e.g. ("artifact", "sha256:…"), ("record", "rec_…"), ("world", "main").
Key = tuple[str, str]

# Quota names a lease may hold: plain, so every backend can store and parse them without escaping.
QUOTA_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True, slots=True)
class Quota:
    """Add ``delta`` to counter ``name``; the commit is refused if the result would exceed ``limit``.

    A negative delta (freeing capacity) is always allowed. Counters never go below zero.
    """

    name: str
    delta: int
    limit: int


@dataclass(frozen=True, slots=True)
class Lease:
    """How long a put document is retained, and what it holds of the scope's quota counters.

    Exactly one of:

    * ``expires_at``: seconds since the epoch; from that moment on the document is absent (reads do not see
      it, and the next commit of the scope drops it). :attr:`ChangeSet.extend` can move it later.
    * ``owner``: another document of the same scope; this one lapses together with it (and with its owner's
      owner, and so on), and an absent owner makes it absent.

    ``holds`` maps quota counter names to the amounts this document accounts for. When the document lapses
    the store subtracts them from the counters in the same atomic step (never below zero), so counters stay
    exact without the writer being there. A put, a delete or a replacing put never gives them back: the
    writer's own :class:`Quota` deltas do, as without leases.
    """

    expires_at: float | None = None
    owner: Key | None = None
    holds: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.expires_at is None) == (self.owner is None):
            raise ValueError("a lease has either an expiry time or an owner")
        if self.expires_at is not None and not math.isfinite(self.expires_at):
            raise ValueError(f"a lease expiry must be a finite time, got {self.expires_at!r}")
        for name, amount in self.holds.items():
            if not QUOTA_NAME.fullmatch(name):
                raise ValueError(f"a lease holds plain quota names ([A-Za-z0-9._-]), got {name!r}")
            if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
                raise ValueError(f"a lease holds non-negative integer amounts, got {name}={amount!r}")


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """The outcome of computing one operation.

    ``expect`` maps every document the computation depended on to the version it was read at (0 = absent);
    ``put`` maps documents to their new values (each put of an existing document bumps its version by one; a
    new document gets a version the scope never handed out before, see :class:`~stores.base.StateStore`);
    ``delete`` removes documents; ``quotas`` adjust counters. A key that is put or deleted must also be in
    ``expect``.

    Retention: ``leases`` gives put documents their :class:`Lease` (a put without one never lapses, and
    replaces any lease the document had); ``extend`` moves the expiry of existing documents that have one to
    at least the given time, without a new version and without an expectation (a document that is absent, has
    no expiry, or is owned by another is left alone). Neither makes a change set non-empty by itself.
    """

    expect: dict[Key, int] = field(default_factory=dict)
    put: dict[Key, dict[str, Any]] = field(default_factory=dict)
    delete: frozenset[Key] = frozenset()
    quotas: tuple[Quota, ...] = ()
    leases: dict[Key, Lease] = field(default_factory=dict)
    extend: dict[Key, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        stray = set(self.leases) - set(self.put)
        if stray:
            raise ValueError(f"a lease is given with a put, not for {sorted(stray)}")
        for key, lease in self.leases.items():
            if lease.owner == key:
                raise ValueError(f"{key} cannot own itself")
        for key, at in self.extend.items():
            if not math.isfinite(at):
                raise ValueError(f"an extension must be a finite time, got {key}: {at!r}")

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
