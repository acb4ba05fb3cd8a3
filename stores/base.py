"""The storage contracts. Every backend implements these; nothing here knows about Quineling or A2A.

Two stores live behind one URL (``memory://`` or ``redis://…``):

* :class:`StateStore` holds versioned JSON documents per *scope* (a tenant/principal). Callers read what they
  need, compute a :class:`~stores.changes.ChangeSet`, and commit it atomically with optimistic concurrency:
  the commit succeeds only if every document it read still has the version it was read at, and every quota
  stays within its limit. Capacity is therefore decided inside the atomic step, never by a racy pre-check.
* :class:`TaskStore` holds A2A tasks per scope with bounded capacity, eviction of terminal/paused tasks,
  lazy expiry of paused tasks, a per-task event log for streaming, and newest-first listing with an opaque
  signed cursor. Every stored task carries a version, so a read-modify-write of a task can be made
  conditional (optimistic concurrency, as for documents) without an extra round trip.

**One atomic commit per request.** A task scope is ``"tenant/user"``; its *partition* is the tenant
(:func:`task_partition`). Task capacity, eviction, versions, admission sequences and the listing index are kept
per partition, and a partition's tasks live beside the state scope of the same name (on Redis: under the same
hash tag, so in one cluster slot). That is what lets :meth:`StateStore.commit` take a :class:`TaskWrite` and
commit a change set and a task save as one all-or-nothing step: never a committed state change without its
task, nor the reverse. The price: one tenant can no longer evict another tenant's tasks — each tenant has the
whole task capacity (``TaskLimits``) to itself.

Values are plain JSON-compatible ``dict``s. Backends serialise on write and deserialise on read, so no caller
can mutate stored state by reference.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from stores.changes import ChangeSet, Key
from stores.jsontypes import JSON


def task_partition(scope: str) -> str:
    """The partition (tenant) of a task scope: the part before the first ``/`` — all of it if there is none.

    Capacity and eviction are per partition, and a state scope with this name commits together with the
    partition's tasks. Callers that let a tenant contain ``/`` must escape it in the scope.
    """
    return scope.split("/", 1)[0]


@dataclass(frozen=True, slots=True)
class Versioned:
    """A document or task as read: its value (``None`` when absent) and its version (0 when absent).

    ``confirmed`` is ``False`` for a value served from a cache (:mod:`stores.cache`): it may be stale, so
    whatever is computed from it holds only once a commit has confirmed its version."""

    value: JSON | None
    version: int
    confirmed: bool = True


class StateStore(ABC):
    """Versioned documents per scope with atomic, optimistic, quota-checked commits."""

    @property
    def origin(self) -> StateStore:
        """The store that holds the documents: this one, or the one a wrapper (a read cache) stands for."""
        return self

    @abstractmethod
    def read(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        """Read several documents in one round trip. Absent keys come back as ``Versioned(None, 0)``."""

    @abstractmethod
    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        """Current values of quota counters (0 when never touched). For reporting, not for decisions."""

    @abstractmethod
    def commit(self, scope: str, changes: ChangeSet, *, task: TaskWrite | None = None) -> int | None:
        """Apply ``changes`` atomically, all or nothing; with ``task``, save that task in the same step.

        Raises :class:`~stores.errors.ConflictError` when an expected version no longer holds (recompute and
        retry), and :class:`~stores.errors.QuotaExceeded` when a quota would pass its limit (nothing written).

        ``task`` (a :class:`TaskWrite` to a task store of the same backend, whose scope's partition is
        ``scope``) is saved exactly as :meth:`TaskStore.save` would, and the new task version is returned
        (``None`` without a task). Every check of both halves comes before any write: the state's version
        conflict, then quotas, then the task's size (:class:`~stores.errors.TaskTooLarge`), version
        (:class:`~stores.errors.TaskConflict`) and capacity (:class:`~stores.errors.TaskStoreFull`), so on
        any of these errors neither the documents nor the task store changed (paused tasks past their TTL
        may still be dropped, as by any task store call). An empty change set with a task is a plain save.
        """

    def close(self) -> None:  # noqa: B027 - an optional hook, deliberately a no-op by default
        """Release connections."""


@dataclass(frozen=True, slots=True)
class TaskLimits:
    max_tasks: int = 128
    max_total_bytes: int = 64 * 1024 * 1024
    max_task_bytes: int = 16 * 1024 * 1024
    paused_ttl_seconds: float = 15 * 60

    def __post_init__(self) -> None:
        for name in ("max_tasks", "max_total_bytes", "max_task_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"task limit {name} must be a positive integer, got {value!r}")
        ttl = self.paused_ttl_seconds
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0:
            raise ValueError(f"task limit paused_ttl_seconds must be positive, got {ttl!r}")


# Task states as the 1.0 wire spells them; the store classifies tasks by them.
TERMINAL_STATES = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
PAUSED_STATES = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})


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

    def save(self) -> int:
        """Save on its own (no change set): for callers whose state lives elsewhere."""
        return self.store.save(self.scope, self.task, self.events, expect_version=self.expect_version)


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


class TaskStore(ABC):
    """Bounded A2A task storage (the seed's ``BoundedTaskStore``) plus a per-task event log.

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
    """

    limits: TaskLimits

    def load(self, scope: str, task_id: str) -> JSON | None:
        """The task, or ``None`` if unknown, evicted or expired. Does not extend the task's life."""
        return self.load_versioned(scope, task_id).value

    @abstractmethod
    def load_versioned(self, scope: str, task_id: str) -> Versioned:
        """The task and its version, or ``Versioned(None, 0)`` if unknown, evicted or expired, in one
        round trip. Does not extend the task's life. Pass ``version`` back as ``save(expect_version=…)``."""

    @abstractmethod
    def save(
        self, scope: str, task: JSON, events: Iterable[JSON] = (), *, expect_version: int | None = None
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

    def joins(self, state: StateStore) -> bool:
        """Whether ``state`` can commit this store's saves with its change sets (``TaskWrite``): true when
        both are stores of one backend instance (seen through any wrapper: ``state.origin``)."""
        return False

    @abstractmethod
    def list(self, scope: str, query: TaskQuery) -> TaskPage:
        """Newest status timestamp first, ties by admission sequence (newest first).

        Raises :class:`~stores.errors.InvalidCursor` for a token that is malformed, forged, or issued for
        another store, scope or filter set.
        """

    @abstractmethod
    def read_events(self, scope: str, task_id: str, after: str | None, timeout: float) -> list[TaskEvent]:
        """Events of a task after ``after`` (``None``: from the start), waiting up to ``timeout`` seconds
        for at least one. Returns ``[]`` on timeout."""

    @abstractmethod
    def last_event_id(self, scope: str, task_id: str) -> str | None:
        """Position of the newest event, so a subscriber can take a snapshot and tail from there."""

    def close(self) -> None:  # noqa: B027 - an optional hook, deliberately a no-op by default
        """Release connections."""


class Backend(ABC):
    """A storage backend: one URL scheme, one connection, both stores."""

    scheme: ClassVar[tuple[str, ...]] = ()
    registry: ClassVar[dict[str, type[Backend]]] = {}
    local: ClassVar[bool] = False  # in-process: a read costs no round trip (nothing to gain from a cache)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for scheme in cls.scheme:
            Backend.registry[scheme] = cls

    @abstractmethod
    def state_store(self) -> StateStore: ...

    @abstractmethod
    def task_store(
        self, limits: TaskLimits | None = None, *, clock: Callable[[], float] | None = None
    ) -> TaskStore:
        """A task store over this backend's tasks (every call sees the same tasks).

        ``clock`` returns seconds since the epoch (default :func:`time.time`); it stamps last updates and
        decides paused-task expiry, so tests can inject one.
        """

    def commit_with_task(self, scope: str, changes: ChangeSet, write: TaskWrite) -> int:
        """Commit ``changes`` and save ``write`` in one atomic step; returns the task's new version.

        The same as ``state_store().commit(scope, changes, task=write)``, which documents the errors."""
        version = self.state_store().commit(scope, changes, task=write)
        assert version is not None
        return version

    def round_trips(self) -> int:
        """How many server round trips this backend has made (0 for in-process backends)."""
        return 0

    def close(self) -> None:  # noqa: B027 - an optional hook, deliberately a no-op by default
        """Release connections."""


def backend_from_url(url: str, **options: Any) -> Backend:
    """Pick a backend by URL scheme: ``memory://``, ``redis://host:port/db``, ``rediss://…``, ``unix://…``."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    # Importing the modules registers their schemes; drivers stay lazy inside them.
    import stores.memory  # noqa: F401
    import stores.redis  # noqa: F401

    try:
        backend_cls = Backend.registry[scheme]
    except KeyError:
        known = ", ".join(sorted(Backend.registry))
        raise ValueError(f"unsupported store URL {url!r}: scheme must be one of {known}") from None
    return backend_cls(url, **options)


store_from_url = backend_from_url  # the name the style guide uses


__all__ = [
    "JSON",
    "PAUSED_STATES",
    "TERMINAL_STATES",
    "Backend",
    "ChangeSet",
    "Key",
    "StateStore",
    "TaskEvent",
    "TaskLimits",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "TaskWrite",
    "Versioned",
    "backend_from_url",
    "store_from_url",
    "task_partition",
]
