"""The Redis backend (``redis://``, ``rediss://``, ``unix://``): shared by every worker of every process.

Each store call is one server round trip (see :mod:`stores.redis_state` and :mod:`stores.redis_tasks`). Keys
come from :mod:`stores.keys`; scripts from :mod:`stores.lua`; the client from :mod:`stores.redis_connection`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from stores.base import Backend, TaskDescriber, TaskLimits, TaskStore
from stores.redis_connection import Connection
from stores.redis_scopes import RedisScopeRegistry
from stores.redis_state import RedisStateStore
from stores.redis_tasks import EventLogSettings, RedisTaskStore
from stores.scopes import Clock, ScopeLimits


class RedisBackend(Backend):
    """Both stores in one Redis; pass ``client=`` to inject one (tests use ``fakeredis.FakeRedis()``).

    ``prefix`` namespaces every key, so several deployments (or test runs) can share one server. Blocking
    event reads hold one pooled connection for up to their timeout, so a ``socket_timeout`` client option
    must exceed the longest ``read_events`` timeout.
    """

    scheme = ("redis", "rediss", "unix")

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        client: Any = None,
        prefix: str = "q",
        events_maxlen: int = 1000,
        events_ttl_seconds: float = 24 * 3600,
        **client_options: Any,
    ) -> None:
        if client is None:
            client = redis.Redis.from_url(url, **client_options)
        self.url = url
        self.prefix = prefix
        self.events_maxlen = events_maxlen
        self.events_ttl_seconds = events_ttl_seconds
        self.connection = Connection(client)
        self._state = RedisStateStore(self.connection, prefix)

    def state_store(self) -> RedisStateStore:
        return self._state

    def task_store(
        self,
        limits: TaskLimits | None = None,
        *,
        describe: TaskDescriber,
        clock: Callable[[], float] | None = None,
    ) -> TaskStore:
        events = EventLogSettings(self.events_maxlen, self.events_ttl_seconds)
        return RedisTaskStore(
            self.connection,
            self.prefix,
            self._state.location,
            limits or TaskLimits(),
            describe,
            clock,
            events,
        )

    def scope_registry(
        self, limits: ScopeLimits | None = None, *, clock: Clock | None = None
    ) -> RedisScopeRegistry:
        return RedisScopeRegistry(self.connection, self.prefix, limits or ScopeLimits(), clock)

    def ping(self) -> None:
        self.connection.command("ping")

    def round_trips(self) -> int:
        return self.connection.round_trips

    def close(self) -> None:
        self.connection.close()
