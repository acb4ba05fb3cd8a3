"""The Redis backend (``redis://``, ``rediss://``, ``unix://``): shared by every worker of every process.

Each store call is one server round trip (see :mod:`stores.redis_state` and :mod:`stores.redis_tasks`). Keys
come from :mod:`stores.keys`; scripts from :mod:`stores.lua`; the client from :mod:`stores.redis_connection`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis

from stores import keys
from stores.base import Backend, ScopeUsage, TaskDescriber, TaskLimits, TaskStore
from stores.redis_changes import frees_at, state_keys, text
from stores.redis_connection import Connection
from stores.redis_state import RedisStateStore
from stores.redis_tasks import EventLogSettings, RedisTaskStore


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
        self._usage = self.connection.script("changes", "scope_report", "usage")
        self._reset = self.connection.script("changes", "scope_report", "reset")

    def state_store(self, clock: Callable[[], float] | None = None) -> RedisStateStore:
        return self._state if clock is None else self._state.with_clock(clock)

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

    def ping(self) -> None:
        self.connection.command("ping")

    def scopes(self) -> list[str]:
        """The registry's members (one SMEMBERS): every scope that committed since it last held nothing."""
        return sorted(
            text(member) for member in self.connection.command("smembers", keys.registry(self.prefix))
        )

    def usage(self, scope: str, now: float | None = None) -> ScopeUsage:
        """One EVALSHA of ``lua/usage.lua``: drop what lapsed, then report."""
        stats = keys.task_keys(self.prefix, scope)["stats"]
        at = time.time() if now is None else now
        return _usage(scope, self._usage([*state_keys(self.prefix, scope), stats], [repr(float(at)), scope]))

    def reset(self, scope: str) -> ScopeUsage:
        """One EVALSHA of ``lua/reset.lua``: the scope's documents and tasks go in one atomic step."""
        task_keys = list(keys.task_keys(self.prefix, scope).values())
        streams = keys.task_events_prefix(self.prefix, scope)
        reply = self._reset(
            [*state_keys(self.prefix, scope), *task_keys], [repr(time.time()), scope, streams]
        )
        return _usage(scope, reply)

    def round_trips(self) -> int:
        return self.connection.round_trips

    def close(self) -> None:
        self.connection.close()


def _usage(scope: str, reply: Any) -> ScopeUsage:
    """A ``lua/scope_report.lua`` report."""
    counters: dict[str, int] = {}
    frees: dict[str, float] = {}
    for i in range(4, len(reply), 3):
        name = text(reply[i])
        counters[name] = int(text(reply[i + 1]))
        at = frees_at(reply[i + 2])
        if at is not None:
            frees[name] = at
    return ScopeUsage(scope, counters, int(reply[0]), int(reply[1]), int(reply[2]), int(reply[3]), frees)
