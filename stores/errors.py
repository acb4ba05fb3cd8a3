"""Storage errors: one root, one class per outcome a caller must tell apart."""

from __future__ import annotations


class StoreError(Exception):
    """Root of every storage error."""


class ConflictError(StoreError):
    """A document changed since it was read; recompute from fresh state and try again."""


class TaskConflict(StoreError):
    """A conditional task save found another version than it expected; nothing was changed.

    ``expected`` is the version the caller passed, ``current`` the stored version (0 when the task does not
    exist, e.g. because it was evicted or expired meanwhile). Reload, re-decide, and save again.
    """

    def __init__(self, task_id: str, expected: int, current: int) -> None:
        super().__init__(f"task {task_id!r} is at version {current}, not the expected {expected}")
        self.task_id = task_id
        self.expected = expected
        self.current = current


class QuotaExceeded(StoreError):
    """A quota would pass its limit; nothing was written (documents past their expiry may have been dropped).

    ``frees_at`` is when the first document that holds some of this counter (see
    :class:`~stores.changes.Lease`) lapses, in seconds since the epoch; ``None`` when none of them expires.
    """

    def __init__(self, name: str, limit: int, frees_at: float | None = None) -> None:
        super().__init__(f"quota {name!r} would exceed its limit of {limit}")
        self.name = name
        self.limit = limit
        self.frees_at = frees_at


class TaskTooLarge(StoreError):
    """One task is larger than the per-task byte limit."""


class TaskStoreFull(StoreError):
    """No terminal or paused task can be evicted to make room; nothing was changed."""


class KeyClaimed(StoreError):
    """A save claimed an idempotency key that a live claim already holds; nothing was changed. ``record`` is
    what that claim stored (``stores.base.KeyClaim``)."""

    def __init__(self, key: str, record: object) -> None:
        super().__init__(f"idempotency key {key!r} is already claimed")
        self.key = key
        self.record = record


class ClaimsFull(StoreError):
    """The partition already holds its maximum of live idempotency keys; nothing was changed."""


class InvalidCursor(StoreError):
    """A ListTasks page token is malformed, forged, or bound to another store, scope or filter set."""


class StoreUnavailable(StoreError):
    """The backend could not be reached."""


class ScopeLimitReached(StoreError):
    """The registry holds its maximum of live scopes and none has been idle long enough to be reclaimed; a
    new scope may start in ``retry_after`` seconds, when the oldest lease lapses. Nothing was changed."""

    def __init__(self, limit: int, retry_after: float) -> None:
        super().__init__(f"{limit} scopes are live; a new one can start in {retry_after:.0f} s")
        self.limit = limit
        self.retry_after = retry_after
