"""Storage for Quineling: the contracts (:mod:`stores.base`) and their backends, chosen by URL."""

from __future__ import annotations

from stores.base import (
    JSON,
    PAUSED_STATES,
    TERMINAL_STATES,
    Backend,
    StateStore,
    TaskEvent,
    TaskLimits,
    TaskPage,
    TaskQuery,
    TaskStore,
    TaskWrite,
    Versioned,
    backend_from_url,
    store_from_url,
    task_partition,
)
from stores.changes import ChangeSet, Key, Quota
from stores.errors import (
    ConflictError,
    InvalidCursor,
    QuotaExceeded,
    StoreError,
    StoreUnavailable,
    TaskConflict,
    TaskStoreFull,
    TaskTooLarge,
)
from stores.memory import MemoryBackend
from stores.redis import RedisBackend

__all__ = [
    "JSON",
    "PAUSED_STATES",
    "TERMINAL_STATES",
    "Backend",
    "ChangeSet",
    "ConflictError",
    "InvalidCursor",
    "Key",
    "MemoryBackend",
    "Quota",
    "QuotaExceeded",
    "RedisBackend",
    "StateStore",
    "StoreError",
    "StoreUnavailable",
    "TaskConflict",
    "TaskEvent",
    "TaskLimits",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "TaskTooLarge",
    "TaskStoreFull",
    "TaskWrite",
    "Versioned",
    "backend_from_url",
    "store_from_url",
    "task_partition",
]
