"""Storage for Quineling: the contracts (:mod:`stores.base`) and their backends, chosen by URL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stores.base import (
    JSON,
    Backend,
    Lifecycle,
    ScopeUsage,
    StateStore,
    TaskDescriber,
    TaskEvent,
    TaskFacts,
    TaskLimits,
    TaskPage,
    TaskQuery,
    TaskStore,
    TaskWrite,
    Versioned,
    task_partition,
)
from stores.changes import ChangeSet, Key, Lease, Quota
from stores.errors import (
    ConflictError,
    InvalidCursor,
    QuotaExceeded,
    ScopeLimitReached,
    StoreError,
    StoreUnavailable,
    TaskConflict,
    TaskStoreFull,
    TaskTooLarge,
)
from stores.memory import MemoryBackend
from stores.redis import RedisBackend
from stores.scopes import ScopeLimits, ScopeRegistry

BACKENDS: dict[str, Callable[..., Backend]] = {
    scheme: backend for backend in (MemoryBackend, RedisBackend) for scheme in backend.scheme
}


def backend_from_url(url: str, **options: Any) -> Backend:
    """Pick a backend by URL scheme: ``memory://``, ``redis://host:port/db``, ``rediss://…``, ``unix://…``,
    ``redis+cluster://host:port[,host:port…]``, ``rediss+cluster://…`` (a Redis Cluster, docs/cluster.md)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    try:
        backend_cls = BACKENDS[scheme]
    except KeyError:
        known = ", ".join(sorted(BACKENDS))
        raise ValueError(f"unsupported store URL {url!r}: scheme must be one of {known}") from None
    return backend_cls(url, **options)


__all__ = [
    "BACKENDS",
    "JSON",
    "Backend",
    "ChangeSet",
    "ConflictError",
    "InvalidCursor",
    "Key",
    "Lease",
    "Lifecycle",
    "MemoryBackend",
    "Quota",
    "QuotaExceeded",
    "RedisBackend",
    "ScopeLimitReached",
    "ScopeLimits",
    "ScopeRegistry",
    "ScopeUsage",
    "StateStore",
    "StoreError",
    "StoreUnavailable",
    "TaskConflict",
    "TaskDescriber",
    "TaskEvent",
    "TaskFacts",
    "TaskLimits",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "TaskTooLarge",
    "TaskStoreFull",
    "TaskWrite",
    "Versioned",
    "backend_from_url",
    "task_partition",
]
