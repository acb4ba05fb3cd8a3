"""The storage contracts. Every backend implements these; nothing here knows about Quineling or A2A.

Two stores live behind one URL (``memory://`` or ``redis://…``):

* :class:`StateStore` holds versioned JSON documents per *scope* (a tenant/principal). Callers read what they
  need, compute a :class:`~stores.changes.ChangeSet`, and commit it atomically with optimistic concurrency:
  the commit succeeds only if every document it read still has the version it was read at, and every quota
  stays within its limit. Capacity is therefore decided inside the atomic step, never by a racy pre-check.
* :class:`TaskStore` holds tasks per scope with bounded capacity, eviction of terminal/paused tasks, lazy
  expiry of paused tasks, a per-task event log for streaming, and newest-first listing with an opaque signed
  cursor. Every stored task carries a version, so a read-modify-write of a task can be made conditional
  (optimistic concurrency, as for documents) without an extra round trip. A task body is opaque to the store:
  what it files a task by (:class:`TaskFacts`: its lifecycle, status label, status time, context) comes from a
  :data:`TaskDescriber` the caller supplies, so no backend reads a protocol's wire format.

**One atomic commit per request.** A task scope is ``"tenant/user"``; its *partition* is the tenant
(:func:`task_partition`). Task capacity, eviction, versions, admission sequences and the listing index are kept
per partition, and a partition's tasks live beside the state scope of the same name (on Redis: under the same
hash tag, so in one cluster slot). That is what lets :meth:`StateStore.commit` take a :class:`TaskWrite` and
commit a change set and a task save as one all-or-nothing step: never a committed state change without its
task, nor the reverse. The price: one tenant can no longer evict another tenant's tasks — each tenant has the
whole task capacity (``TaskLimits``) to itself.

**Retention.** A document may carry a :class:`~stores.changes.Lease`: an expiry time (or an owner it lapses
with) and the quota amounts it holds. Expiry is lazy and atomic: a read treats a document past its expiry as
absent, and every commit of a scope first drops that scope's lapsed documents and subtracts what they held
from the counters, in the same atomic step as the rest of the commit, so counters stay exact however many
workers commit. The cost is O(documents that lapsed), never O(documents): backends index expiry times (on
Redis a sorted set per scope). Which documents lapse, and when, is the caller's decision; the store keeps no
knowledge of what they mean.

**Operators.** A backend enumerates the scopes that hold anything (:meth:`Backend.scopes`; on Redis a registry
set per key prefix, kept up to date inside every commit and task save), reports a scope's use
(:meth:`Backend.usage`) and drops a scope's documents and tasks in one atomic step (:meth:`Backend.reset`).

Values are plain JSON-compatible ``dict``s. Backends serialise on write and deserialise on read, so no caller
can mutate stored state by reference.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from stores.changes import ChangeSet, Key
from stores.jsontypes import JSON
from stores.rate_counters import RateCounter

if TYPE_CHECKING:
    from stores.scopes import Clock, ScopeLimits, ScopeRegistry


def task_partition(scope: str) -> str:
    """The partition (tenant) of a task scope: the part before the first ``/`` — all of it if there is none.

    Capacity and eviction are per partition, and a state scope with this name commits together with the
    partition's tasks. Callers that let a tenant contain ``/`` must escape it in the scope.
    """
    return scope.split("/", 1)[0]


GROUP_SEPARATOR = ":"


def scope_group(scope: str) -> str:
    """The group of a scope: the part before the first ``:`` — all of it if there is none.

    Every scope of one group keeps its keys under one Redis hash tag (one cluster slot), so a group's scopes
    can be reached together (a principal and its tenants, say: ``alice:acme`` and ``alice:default``).
    """
    return scope.split(GROUP_SEPARATOR, 1)[0]


@dataclass(frozen=True, slots=True)
class Versioned:
    """A document or task as read: its value (``None`` when absent) and its version (0 when absent).

    ``confirmed`` is ``False`` for a value served from a cache (:mod:`stores.cache`): it may be stale, so
    whatever is computed from it holds only once a commit has confirmed its version."""

    value: JSON | None
    version: int
    confirmed: bool = True


class StateStore(ABC):
    """Versioned documents per scope with atomic, optimistic, quota-checked commits and lazy expiry.

    **Versions are never reused within a scope.** A put of an existing document bumps its version by one; a
    document put while absent gets a version above every version the scope's lapsed, deleted or reset
    documents ever had, so an expectation (or a read cache) holding an old incarnation's version can never
    match a new incarnation of the same key (no ABA). In a scope where nothing ever went away, a new
    document starts at 1.
    """

    def now(self) -> float:
        """The store's clock (seconds since the epoch): what expiry is decided by. Backends take an
        injected one (``Backend.state_store(clock=…)``)."""
        return time.time()

    @property
    def origin(self) -> StateStore:
        """The store that holds the documents: this one, or the one a wrapper (a read cache) stands for."""
        return self

    @property
    def location(self) -> object:
        """Where the documents live (one backend instance and key namespace); stores at one location can
        commit together. ``None``: nowhere shared."""
        return None

    @abstractmethod
    def read(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        """Read several documents in one round trip. Absent keys — and lapsed ones, whose expiry is at or
        before :meth:`now`, or whose owner is absent — come back as ``Versioned(None, 0)``."""

    def read_shared(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        """:meth:`read` for a caller that only looks at the values: a value may be shared with other such reads
        (a store that keeps documents as JSON decodes one once per version and answers the next read of the
        same version with it, :mod:`stores.shared_reads`), so nobody may change it or anything in it. As
        current, and as confirmed, as :meth:`read` (this default: it is :meth:`read`)."""
        return self.read(scope, keys)

    @abstractmethod
    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        """Current values of quota counters (0 when never touched). For reporting, not for decisions: what
        lapsed documents held is given back by the next commit of the scope (or :meth:`Backend.usage`)."""

    def commit(
        self,
        scope: str,
        changes: ChangeSet,
        *,
        task: TaskWrite | None = None,
        versions: dict[Key, int] | None = None,
    ) -> int | None:
        """Apply ``changes`` atomically, all or nothing; with ``task``, save that task in the same step.

        First, in the same atomic step, the scope's documents whose expiry is at or before :meth:`now` are
        dropped with everything they own, and the quota amounts they hold are given back; then the checks,
        then the writes. ``versions``, when given, is filled with the new version of every put document.

        Raises :class:`~stores.errors.ConflictError` when an expected version no longer holds (recompute and
        retry; a document that lapsed meanwhile is at version 0), and :class:`~stores.errors.QuotaExceeded`
        when a quota would pass its limit (nothing written but the lapsed documents' drop, which no read could
        tell from their absence).

        ``task`` (a :class:`TaskWrite` to a task store of the same backend, whose scope's partition is
        ``scope``) is saved exactly as :meth:`TaskStore.save` would, and the new task version is returned
        (``None`` without a task). Every check of both halves comes before any write: the state's version
        conflict, then quotas, then the task's size (:class:`~stores.errors.TaskTooLarge`), version
        (:class:`~stores.errors.TaskConflict`) and capacity (:class:`~stores.errors.TaskStoreFull`), so on
        any of these errors neither the documents nor the task store changed (paused tasks past their TTL
        may still be dropped, as by any task store call). An empty change set with a task is a plain save.
        A task store at another location raises :class:`ValueError`.
        """
        if task is None:
            if not changes.expect and changes.is_empty and not changes.extend:
                return None  # nothing to check, nothing to write
            written = self._commit_changes(scope, changes)
            task_version = None
        else:
            if not task.store.joins(self):
                raise ValueError(
                    "a task written with a commit must be on the same backend (and prefix) as the state store"
                )
            if task_partition(task.scope) != scope:
                raise ValueError(f"task scope {task.scope!r} is not in the partition {scope!r}")
            task_version, written = task.store.save_with_changes(scope, changes, task, self.now())
        if versions is not None:
            versions.update(written)
        return task_version

    def _commit_changes(self, scope: str, changes: ChangeSet) -> dict[Key, int]:
        """Apply a change set that has something to check or write, atomically (see :meth:`commit`), and
        return the new versions of the put documents. Every backend implements this; a wrapper (a read
        cache, a test double) overrides :meth:`commit` instead."""
        raise NotImplementedError(f"{type(self).__name__} must implement _commit_changes or commit")

    def close(self) -> None:  # noqa: B027 - an optional hook, deliberately a no-op by default
        """Release connections."""


@dataclass(frozen=True, slots=True)
class TaskLimits:
    max_tasks: int = 128
    max_total_bytes: int = 64 * 1024 * 1024
    max_task_bytes: int = 16 * 1024 * 1024
    paused_ttl_seconds: float = 15 * 60
    max_claims: int = 1024  # live idempotency keys per partition (see KeyClaim)

    def __post_init__(self) -> None:
        for name in ("max_tasks", "max_total_bytes", "max_task_bytes", "max_claims"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"task limit {name} must be a positive integer, got {value!r}")
        ttl = self.paused_ttl_seconds
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise ValueError(f"task limit paused_ttl_seconds must be positive, got {ttl!r}")


class Lifecycle(StrEnum):
    """Where a task stands, as far as storage cares: whether it may be evicted, and whether it expires."""

    ACTIVE = "active"  # still being worked on: never evicted
    PAUSED = "paused"  # waiting for its caller: evictable, and dropped after the paused-task TTL
    TERMINAL = "terminal"  # finished: evictable


@dataclass(frozen=True, slots=True)
class TaskFacts:
    """What a task store files a task by. The body itself stays opaque; the caller's describer reads it.

    ``state`` is an opaque label that :attr:`TaskQuery.status` matches exactly; ``status_time`` is an RFC 3339
    UTC timestamp (newest first in listings, ``TaskQuery.status_after``); ``context_id`` is what
    :attr:`TaskQuery.context_id` matches.

    ``generation``, when known, is the number the task's newest logged event has: a save's events are
    numbered so that its last one gets it (see :class:`TaskStore`, "Event log"). ``None``: the events are
    numbered on from the log's newest."""

    task_id: str
    lifecycle: Lifecycle
    state: str | None = None
    status_time: str | None = None
    context_id: str | None = None
    generation: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.task_id, str) or not self.task_id:
            raise ValueError("a task needs a non-empty string id")
        generation = self.generation
        if generation is not None and (not isinstance(generation, int) or isinstance(generation, bool)):
            raise ValueError(f"a task generation must be an integer, got {generation!r}")


# Reads a task body for its facts; raises ValueError for a body that is not a task.
TaskDescriber = Callable[[JSON], TaskFacts]


@dataclass(frozen=True, slots=True)
class KeyClaim:
    """An idempotency key claimed by a task save, in the same atomic step (``save(…, claim=…)``).

    ``key`` is the caller's key (any string; the store escapes it), unique per task scope; ``record`` is what
    the caller wants back when the key is claimed again (the store never reads it). A claim lives
    ``ttl_seconds`` from its save by the store's clock, then lapses lazily: a lapsed claim is absent, and
    every claiming save first drops its partition's lapsed claims (O(lapsed)). At most
    ``TaskLimits.max_claims`` live claims per partition: they count against the tenant's bounded store."""

    key: str
    record: JSON
    ttl_seconds: float

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValueError("an idempotency key must be a non-empty string")
        ttl = self.ttl_seconds
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise ValueError(f"a claim's ttl_seconds must be positive, got {ttl!r}")


@dataclass(frozen=True, slots=True)
class TaskWrite:
    """A task save to commit in the same atomic step as a change set (``StateStore.commit(…, task=…)``).

    Arguments as for :meth:`TaskStore.save`; ``store`` is the task store whose limits and clock apply.
    """

    store: TaskStore
    scope: str
    task: JSON
    events: tuple[JSON, ...] = ()
    expect_version: int | None = None
    claim: KeyClaim | None = None


@dataclass(frozen=True, slots=True)
class TaskPage:
    tasks: list[JSON]
    next_page_token: str  # "" on the last page
    total_size: int


@dataclass(frozen=True, slots=True)
class TaskQuery:
    """ListTasks membership filters and paging. ``status_after`` is an aware UTC datetime or ``None``."""

    context_id: str | None = None
    status: str | None = None
    status_after: Any = None  # datetime | None (kept loose so the dataclass stays hashable/simple)
    page_size: int = 50
    page_token: str = ""


@dataclass(frozen=True, slots=True)
class TaskEvent:
    """One entry of a task's event log: ``event_id`` is monotonically increasing per task."""

    event_id: str
    payload: JSON


# The name ``list`` inside TaskStore classes is their listing method, so their signatures use this alias.
TaskEvents = list[TaskEvent]


class TaskStore(ABC):
    """Bounded task storage (128 tasks and 64 MiB per tenant by default, 16 MiB each) plus a per-task event log.

    **Versions.** Every stored task has a version: a positive integer that every successful save replaces
    with a strictly greater one. Versions come from one counter per partition, so a version is never reused,
    not even by a task evicted or expired and then saved again under the same id (no ABA). An absent task
    has version 0. A caller that reads a task to change it loads it with :meth:`load_versioned` and saves it
    with ``expect_version`` set to the version it read; the save then succeeds only if nobody else saved (or
    evicted, or expired) the task in between. Checking the version costs no extra round trip: it happens in
    the same atomic step as the save.

    **Partitions.** Limits apply per partition (tenant) of the scope: 128 tasks / 64 MiB by default for each
    tenant, and eviction only ever removes the saving tenant's own tasks. Version and admission-sequence
    counters are per partition too (a task id never changes partition, so a version is still never reused
    for it). A task save can also ride along a state commit: see :class:`TaskWrite`.

    **Event log.** Every logged event has a number, its ``TaskEvent.event_id`` is ``"<number>-0"``, and
    numbers only grow within a task's log. A save whose task's facts carry a ``generation`` numbers its
    events so that the last gets that generation (``generation - len(events) + 1`` up); without one they
    follow the log's newest. Should the first number not lie above the log's newest (a log of an earlier
    incarnation or numbering), the log restarts with these events. The log keeps the newest ~1000 events (on
    Redis also for a day after its last append), so a reader asking after a number whose successor is gone
    sees a gap: the first event it gets is not ``number + 1``.

    **Idempotency keys.** A save may claim a key (:class:`KeyClaim`) in the same atomic step; a live claim of
    the same key in the same scope refuses the save with :class:`~stores.errors.KeyClaimed` (carrying the
    stored record), after the version check and before capacity; a partition already holding
    ``max_claims`` live claims refuses it with :class:`~stores.errors.ClaimsFull`. Either way nothing changed.
    """

    limits: TaskLimits
    describe: TaskDescriber

    @property
    def location(self) -> object:
        """Where the tasks live; a state store at the same location commits this store's saves."""
        return None

    def joins(self, state: StateStore) -> bool:
        """Whether ``state`` can commit this store's saves with its change sets (``TaskWrite``): both stores
        are at one location (seen through any wrapper, such as a read cache: ``state.origin``)."""
        location = self.location
        return location is not None and location == state.origin.location

    def load(self, scope: str, task_id: str) -> JSON | None:
        """The task, or ``None`` if unknown, evicted or expired. Does not extend the task's life."""
        return self.load_versioned(scope, task_id).value

    @abstractmethod
    def load_versioned(self, scope: str, task_id: str) -> Versioned:
        """The task and its version, or ``Versioned(None, 0)`` if unknown, evicted or expired, in one
        round trip. Does not extend the task's life. Pass ``version`` back as ``save(expect_version=…)``."""

    def load_shared(self, scope: str, task_id: str) -> Versioned:
        """:meth:`load_versioned` for a caller that only reads the task: the value may be shared with other
        such calls (a backend keeps the value it decoded and answers the next read of the same version with
        it, :mod:`stores.shared_reads`), so nobody may change it — a shallow copy may be changed at its top
        level. Current exactly as :meth:`load_versioned`: the version is the store's, read in the same step."""
        return self.load_versioned(scope, task_id)

    @abstractmethod
    def save(
        self,
        scope: str,
        task: JSON,
        events: Iterable[JSON] = (),
        *,
        expect_version: int | None = None,
        claim: KeyClaim | None = None,
    ) -> int:
        """Insert or replace ``task`` (keyed by ``task["id"]``) and append ``events`` to its log, atomically.
        Returns the task's new version.

        ``expect_version``: ``None`` saves unconditionally; ``0`` means "the task must not exist" (a first
        insert); any other value must equal the stored version (as returned by :meth:`load_versioned` or
        by the previous save). Otherwise — including when the task was evicted or expired meanwhile — the save
        raises :class:`~stores.errors.TaskConflict` and changes nothing: task, events, listing index, capacity
        counters and eviction candidates are all left as they were.

        At capacity, evicts terminal or paused tasks of the same partition (tenant, see
        :func:`task_partition`), oldest last update first, never the task being saved and never an active
        (submitted/working) task; the eviction is committed only together with
        the save once the replacement is shown to fit. Raises :class:`~stores.errors.TaskTooLarge` or
        :class:`~stores.errors.TaskStoreFull`, leaving everything intact. A too-large task is refused before
        its version is checked; a version conflict is reported before capacity is considered. Paused tasks
        past their TTL may be dropped by any call, including one that fails.
        """

    @abstractmethod
    def save_with_changes(
        self, scope: str, changes: ChangeSet, write: TaskWrite, now: float
    ) -> tuple[int, dict[Key, int]]:
        """Commit ``changes`` in state scope ``scope`` and save ``write`` in one atomic step; returns the new
        task version and the new versions of the put documents. ``now`` is the state store's clock (it
        decides which documents lapsed). Only :meth:`StateStore.commit` calls this, for a write whose store
        joins the state store and whose scope is in partition ``scope``; it documents the errors."""

    @abstractmethod
    def list(self, scope: str, query: TaskQuery) -> TaskPage:
        """Newest status timestamp first, ties by admission sequence (newest first).

        Raises :class:`~stores.errors.InvalidCursor` for a token that is malformed, forged, or issued for
        another store, scope or filter set.
        """

    @abstractmethod
    def read_events(self, scope: str, task_id: str, after: str | None, timeout: float) -> TaskEvents:
        """Events of a task after ``after`` (``None``: from the start), waiting up to ``timeout`` seconds
        for at least one. Returns ``[]`` on timeout."""

    @abstractmethod
    def last_event_id(self, scope: str, task_id: str) -> str | None:
        """Position of the newest event, so a subscriber can take a snapshot and tail from there."""

    @abstractmethod
    def load_claim(self, scope: str, key: str) -> JSON | None:
        """The record of ``key``'s live claim in ``scope`` (see :class:`KeyClaim`), or ``None``."""

    def close(self) -> None:  # noqa: B027 - an optional hook, deliberately a no-op by default
        """Release connections."""


@dataclass(frozen=True, slots=True)
class ScopeUsage:
    """What one scope holds, for operators (:meth:`Backend.usage`): its quota counters, its live documents
    (count, and bytes of their stored JSON), its tasks (count and bytes, as the task store counts them), and
    per counter when the first document holding some of it lapses (``frees_at``, seconds since the epoch;
    counters none of whose documents expire are left out)."""

    scope: str
    counters: dict[str, int] = field(default_factory=dict)
    documents: int = 0
    document_bytes: int = 0
    tasks: int = 0
    task_bytes: int = 0
    frees_at: dict[str, float] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not (self.documents or self.tasks or any(self.counters.values()))


class Backend(ABC):
    """A storage backend: one URL scheme, one connection, both stores."""

    scheme: ClassVar[tuple[str, ...]] = ()  # the URL schemes it serves (see ``stores.backend_from_url``)
    local: ClassVar[bool] = False  # in-process: a read costs no round trip (nothing to gain from a cache)

    @abstractmethod
    def state_store(self, clock: Callable[[], float] | None = None) -> StateStore:
        """The state store. Without ``clock`` (seconds since the epoch, default :func:`time.time`), always the
        same instance; with one, a store over the same documents that decides expiry by that clock."""

    @abstractmethod
    def scopes(self) -> list[str]:
        """Every scope in the scope registry (sorted; :meth:`scope_registry`): admitted and not yet reclaimed,
        so every scope a server wrote in. What :meth:`usage` and :meth:`reset` take."""

    @abstractmethod
    def usage(self, scope: str, now: float | None = None) -> ScopeUsage:
        """What ``scope`` holds, after dropping what lapsed by ``now`` (default: the current time)."""

    @abstractmethod
    def reset(self, scope: str) -> ScopeUsage:
        """Drop every document, counter and task (with its event log) of ``scope`` in one atomic step, and
        return what it held. Version counters survive, so no version is ever reused (see
        :class:`StateStore` and :class:`TaskStore`)."""

    @abstractmethod
    def task_store(
        self,
        limits: TaskLimits | None = None,
        *,
        describe: TaskDescriber,
        clock: Callable[[], float] | None = None,
    ) -> TaskStore:
        """A task store over this backend's tasks (every call sees the same tasks).

        ``describe`` reads a task body for the facts the store files it by. ``clock`` returns seconds since
        the epoch (default :func:`time.time`); it stamps last updates and decides paused-task expiry, so
        tests can inject one.
        """

    @abstractmethod
    def scope_registry(
        self, limits: ScopeLimits | None = None, *, clock: Clock | None = None
    ) -> ScopeRegistry:
        """The registry that bounds how many scopes hold state at once (:mod:`stores.scopes`); every call
        sees the same registry. ``clock`` as for :meth:`task_store`."""

    @abstractmethod
    def rate_counter(self) -> RateCounter:
        """The request counters of the rate limits (:mod:`stores.rate_counters`), seen by every worker that
        shares this backend."""

    @abstractmethod
    def ping(self) -> None:
        """One cheap round trip to the storage server; raises :class:`~stores.errors.StoreError` when it
        cannot be reached (what a readiness probe asks)."""

    def round_trips(self) -> int:
        """How many server round trips this backend has made (0 for in-process backends)."""
        return 0

    def warnings(self) -> list[str]:
        """What an operator should know about the storage as it is set up — a Redis that keeps its data in
        memory only, say — one sentence each (logged at start-up and listed by ``/readyz``). May make a round
        trip the first time; never raises."""
        return []

    def close(self) -> None:  # noqa: B027 - an optional hook, deliberately a no-op by default
        """Release connections."""


__all__ = [
    "JSON",
    "Backend",
    "KeyClaim",
    "ChangeSet",
    "Key",
    "Lifecycle",
    "ScopeUsage",
    "StateStore",
    "TaskDescriber",
    "TaskEvent",
    "TaskFacts",
    "TaskLimits",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "TaskWrite",
    "Versioned",
    "scope_group",
    "task_partition",
]
