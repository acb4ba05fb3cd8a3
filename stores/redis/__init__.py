"""The Redis backend (``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``): many workers on many
hosts share one Redis or Redis Cluster; every multi-key change is one Lua script (``lua/``).

``RedisBackend`` is loaded on first use: the gunicorn master imports :mod:`stores.redis.cluster_url` to
probe the store, and must not pay for (or fork with) the Redis driver and ``ssl`` by doing so.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stores.redis.store import RedisBackend


def __getattr__(name: str) -> Any:
    if name == "RedisBackend":
        return importlib.import_module("stores.redis.store").RedisBackend
    raise AttributeError(f"module 'stores.redis' has no attribute {name!r}")


__all__ = ["RedisBackend"]
