"""Storage errors: one root, one class per outcome a caller must tell apart."""

from __future__ import annotations


class StoreError(Exception):
    """Root of every storage error."""


class ConflictError(StoreError):
    """A document changed since it was read; recompute from fresh state and try again."""


class QuotaExceeded(StoreError):
    """A quota would pass its limit; nothing was written."""

    def __init__(self, name: str, limit: int) -> None:
        super().__init__(f"quota {name!r} would exceed its limit of {limit}")
        self.name = name
        self.limit = limit


class TaskTooLarge(StoreError):
    """One task is larger than the per-task byte limit."""


class TaskStoreFull(StoreError):
    """No terminal or paused task can be evicted to make room; nothing was changed."""


class InvalidCursor(StoreError):
    """A ListTasks page token is malformed, forged, or bound to another store, scope or filter set."""


class StoreUnavailable(StoreError):
    """The backend could not be reached."""
