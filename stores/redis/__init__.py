"""The Redis backend (``redis://``, ``rediss://``, ``unix://``, ``redis+cluster://``): many workers on many
hosts share one Redis or Redis Cluster; every multi-key change is one Lua script (``lua/``)."""

from stores.redis.store import RedisBackend

__all__ = ["RedisBackend"]
