"""What an operation handler sees: a recording view of the state store, limits, a clock and an id source.

Handlers are pure functions ``(args, view, env) -> result``: they read through :class:`StateView` (which
remembers the version of everything read) and *stage* writes on it. The runtime then commits the staged
:class:`~stores.changes.ChangeSet` once; on a conflict it throws the view away and runs the handler again on
fresh state, so a retry never has to undo anything.
"""

from __future__ import annotations

import copy
import math
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from stores.base import StateStore
from stores.changes import ChangeSet, Key, Lease, Quota
from stores.jsontypes import JSON

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class RuntimeLimits:
    """Runtime capacity. At capacity new entries are refused; nothing is evicted.

    docs/decisions/0023-state-and-capacity.md says which documents and quotas each limit governs."""

    max_artifacts: int = 128
    max_artifact_bytes: int = 32 * MIB
    max_records: int = 256
    max_candidate_bytes: int = 2 * MIB
    max_derivations: int = 128
    max_derivation_bytes: int = 32 * 1024
    max_lineage_bytes: int = 4 * MIB
    max_admission_receipts: int = 128
    max_world_receipts: int = 256
    max_world_events: int = 256
    max_world_bytes: int = 1 * MIB
    max_acknowledgement_bytes: int = 4 * 1024
    max_residents: int = 32
    max_nursery: int = 8
    max_pairs: int = 16
    max_proposals: int = 16
    max_attempts: int = 8  # optimistic commit retries before ``busy``

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"runtime limit {name} must be a positive integer, got {value!r}")


# The store quota counters the runtime keeps, and the RuntimeLimits field that bounds each.
QUOTA_LIMITS = {
    "artifacts": "max_artifacts",
    "artifact-bytes": "max_artifact_bytes",
    "records": "max_records",
    "admission-receipts": "max_admission_receipts",
}


@dataclass(frozen=True, slots=True)
class Retention:
    """How long runtime state lives (docs/decisions/0024-retention.md); ``0`` keeps it for good.

    ``record_ttl_seconds``: an execution record lapses this long after it was made. ``idle_ttl_seconds``:
    artifacts, the world and the lineage lapse this long after their last use, once nothing retained that
    refers to them is left; what they own (receipts, derivations) lapses with them."""

    record_ttl_seconds: float = 15 * 60
    idle_ttl_seconds: float = 24 * 3600

    def __post_init__(self) -> None:
        for name in ("record_ttl_seconds", "idle_ttl_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"retention {name} must be a number of seconds, got {value!r}")
            if value < 0:
                raise ValueError(f"retention {name} must be 0 (kept for good) or positive, got {value!r}")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_time(seconds: float) -> str:
    """An epoch time as the RFC 3339 UTC text :func:`utc_now` gives."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def random_record_id() -> str:
    return "rec_" + secrets.token_hex(16)


@dataclass(slots=True)
class Env:
    """Injected effects, so runtime tests are deterministic. ``clock`` stamps what the runtime writes
    (``createdAt``); ``now`` (seconds since the epoch) sets expiry times. Tests inject both together."""

    limits: RuntimeLimits = field(default_factory=RuntimeLimits)
    clock: Callable[[], str] = utc_now
    new_record_id: Callable[[], str] = random_record_id
    retention: Retention = field(default_factory=Retention)
    now: Callable[[], float] = time.time


class StateView:
    """Reads documents (remembering their versions) and stages writes for one commit."""

    def __init__(self, store: StateStore, scope: str) -> None:
        self._store = store
        self._scope = scope
        self._values: dict[Key, JSON | None] = {}
        self._expect: dict[Key, int] = {}
        self._put: dict[Key, JSON] = {}
        self._delete: set[Key] = set()
        self._quotas: list[Quota] = []
        self._leases: dict[Key, Lease] = {}
        self._extend: dict[Key, float] = {}
        self._reads = 0
        self._unconfirmed = False
        self._shared: set[Key] = set()  # keys whose value was read shared (peek): get() copies them

    @property
    def is_snapshot(self) -> bool:
        """Whether everything read came from one store read (one consistent snapshot, or nothing at all).

        Reads in several round trips may straddle another worker's commit, and a cached read may be stale;
        a result computed from them holds only if none of those documents changed meanwhile (see
        ``Runtime.dispatch``).
        """
        return self._reads <= 1 and self.is_confirmed

    @property
    def is_confirmed(self) -> bool:
        """Whether every read came from the store itself, none from a cache (``Versioned.confirmed``)."""
        return not self._unconfirmed

    @property
    def is_read_only(self) -> bool:
        """Whether nothing is staged but reads (extensions aside): the outcome is an observation."""
        return not (self._put or self._delete or self._quotas or self._leases)

    def reads(self) -> dict[Key, tuple[JSON | None, int]]:
        """Every document read, with the version read (0: absent)."""
        return {key: (value, self._expect[key]) for key, value in self._values.items()}

    def seed(self, reads: dict[Key, tuple[JSON | None, int]]) -> None:
        """Take ``reads`` as read but unconfirmed, as from a cache: a remembered answer's (runtime/memo.py),
        whose versions the commit must then expect. Nothing runs a handler on a seeded view: its values need
        only be what retention and the commit look at (``retention.replay_reads``)."""
        for key, (value, version) in reads.items():
            self._values[key] = value
            self._expect[key] = version
        if reads:
            self._reads += 1
            self._unconfirmed = True

    def found(self) -> list[Key]:
        """Every key read from the store that was there: what this request *used*."""
        return [key for key, value in self._values.items() if value is not None]

    def staged(self) -> dict[Key, JSON]:
        """Every document this request puts, with its new value."""
        return dict(self._put)

    def lease(self, key: Key, lease: Lease) -> None:
        """Give a staged put its lease (see :class:`~stores.changes.Lease`)."""
        if key not in self._put:
            raise ValueError(f"a lease for {key}, which is not put")
        self._leases[key] = lease

    def extend(self, key: Key, at: float) -> None:
        """Keep ``key`` (if it has an expiry) at least until ``at``; the latest of several asks wins."""
        self._extend[key] = max(at, self._extend.get(key, at))

    def prefetch(self, keys: Iterable[Key]) -> None:
        """Read every not-yet-read key in one round trip."""
        self._fetch(keys, shared=False)

    def _fetch(self, keys: Iterable[Key], *, shared: bool) -> None:
        missing = [k for k in dict.fromkeys(keys) if k not in self._expect]
        if not missing:
            return
        self._reads += 1
        read = self._store.read_shared if shared else self._store.read
        for key, versioned in read(self._scope, missing).items():
            self._values[key] = versioned.value
            self._expect[key] = versioned.version
            self._unconfirmed |= not versioned.confirmed
            if shared:
                self._shared.add(key)

    def get(self, kind: str, ident: str) -> JSON | None:
        """The current value (staged writes included), or ``None`` when absent: the caller's own."""
        key = (kind, ident)
        value = self._current(key, shared=False)
        if key in self._shared and key not in self._put:
            return copy.deepcopy(value)  # read shared by an earlier peek
        return value

    def peek(self, kind: str, ident: str) -> JSON | None:
        """:meth:`get` for a caller that only looks at the value: one read now may hand out a value shared
        with other requests (``StateStore.read_shared``), so neither it nor anything in it may be changed."""
        return self._current((kind, ident), shared=True)

    def _current(self, key: Key, *, shared: bool) -> JSON | None:
        if key in self._put:
            return self._put[key]
        if key in self._delete:
            return None
        self._fetch([key], shared=shared)
        return self._values[key]

    def put(self, kind: str, ident: str, value: JSON) -> None:
        key = (kind, ident)
        self.prefetch([key])  # a write depends on what it replaces
        self._delete.discard(key)
        self._put[key] = value

    def insert(self, kind: str, ident: str, value: JSON) -> None:
        """Stage a document under a fresh id without reading it first: the commit requires it to be absent.

        Saves a round trip for ids that cannot exist yet (random record ids); a clash is a conflict.
        """
        key = (kind, ident)
        if key in self._expect or key in self._put:
            raise ValueError(f"insert of {key} after it was read or written; use put")
        self._expect[key] = 0
        self._values[key] = None
        self._put[key] = value

    def delete(self, kind: str, ident: str) -> None:
        key = (kind, ident)
        self.prefetch([key])
        self._put.pop(key, None)
        self._leases.pop(key, None)
        self._delete.add(key)

    def quota(self, name: str, delta: int, limit: int) -> None:
        if delta:
            self._quotas.append(Quota(name, delta, limit))

    def change_set(self) -> ChangeSet:
        return ChangeSet(
            expect=dict(self._expect),
            put=dict(self._put),
            delete=frozenset(self._delete),
            quotas=tuple(self._quotas),
            leases={key: lease for key, lease in self._leases.items() if key in self._put},
            extend=dict(self._extend),
        )
