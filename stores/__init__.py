"""Storage for Quineling: the contracts (:mod:`stores.base`) and their backends, chosen by URL
(``BACKENDS``: scheme → a loader of the backend class)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
from stores.scopes import ScopeLimits, ScopeRegistry

if TYPE_CHECKING:
    from stores.redis import RedisBackend

# The Redis backend (and the redis library, a quarter of a second to import) loads only when a Redis URL or
# ``stores.RedisBackend`` is asked for, so a process on the memory store — the CLI, say — never pays for it.
# The same schemes as RedisBackend.scheme (tests/stores/test_cluster_url.py holds them equal).
_REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")


def _redis_backend() -> Callable[..., Backend]:
    backend: Callable[..., Backend] = importlib.import_module("stores.redis").RedisBackend
    return backend


BACKENDS: dict[str, Callable[[], Callable[..., Backend]]] = {
    **{scheme: (lambda: MemoryBackend) for scheme in MemoryBackend.scheme},
    **{scheme: _redis_backend for scheme in _REDIS_SCHEMES},
}


def __getattr__(name: str) -> Any:
    if name == "RedisBackend":
        return _redis_backend()
    raise AttributeError(f"module 'stores' has no attribute {name!r}")


def backend_from_url(url: str, **options: Any) -> Backend:
    """Pick a backend by URL scheme: ``memory://``, ``redis://host:port/db``, ``rediss://…``, ``unix://…``,
    ``redis+cluster://host:port[,host:port…]``, ``rediss+cluster://…`` (a Redis Cluster, docs/cluster.md)."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    try:
        backend_cls = BACKENDS[scheme]()
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
