"""The Redis backend (``redis://``, ``rediss://``, ``unix://``, and a Redis Cluster's ``redis+cluster://``,
``rediss+cluster://``): shared by every worker of every process.

Each store call is one server round trip (see :mod:`stores.redis.state` and :mod:`stores.redis.tasks`). Keys
come from :mod:`stores.redis.keys`; scripts from :mod:`stores.lua`; the client from :mod:`stores.redis.connection`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from stores.base import Backend, ScopeUsage, TaskDescriber, TaskLimits, TaskStore
from stores.errors import StoreError, StoreUnavailable
from stores.observer import UNOBSERVED, StoreObserver
from stores.redis import keys
from stores.redis.changes import frees_at, state_keys, text
from stores.redis.connection import (
    CLUSTER_SCHEMES,
    DEFAULT_BLOCKING_CONNECTIONS,
    DEFAULT_CONNECTIONS,
    Connection,
    make_lazy_client,
)
from stores.redis.rate_counters import RedisRateCounter
from stores.redis.scopes import RedisScopeRegistry
from stores.redis.state import RedisStateStore
from stores.redis.tasks import EventLogSettings, RedisTaskStore
from stores.scopes import Clock, ScopeLimits

# The client's deadlines when none are given (QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS and
# QUINELING_REDIS_TIMEOUT_SECONDS default to the same): redis-py's own defaults change between releases.
DEFAULT_CONNECT_TIMEOUT = 2.0
DEFAULT_TIMEOUT = 5.0
DEFAULT_MAX_BLOCK = 15.0  # the longest a blocking event read waits on the server (the keep-alive period)
# What /readyz and the start-up log say of a Redis that keeps its data in memory only.
NO_PERSISTENCE = (
    "Redis persists nothing (neither AOF nor RDB): a restart of Redis loses every task, event, runtime "
    "document and idempotency receipt, so a keyed send retried after it runs again; turn on appendonly "
    '(docs/deployment.md, "Persistence and backup")'
)
RESET_ATTEMPTS = 5  # a reset looks again at a scope's tasks when one was saved between its look and its run


class RedisBackend(Backend):
    """Both stores in one Redis; pass ``client=`` to inject one (tests use ``fakeredis.FakeRedis()``).

    ``prefix`` namespaces every key, so several deployments (or test runs) can share one server.

    Every call has a deadline: ``socket_connect_timeout`` to connect, ``socket_timeout`` for each reply. A
    blocking event read (``XREAD BLOCK``) waits up to ``max_block_seconds`` for its reply by design, so it runs
    on a second pool whose read timeout is ``max_block_seconds + socket_timeout``; ``read_events`` never
    blocks longer than ``max_block_seconds``. One pool with the longer timeout would let every ordinary call
    hang that long on a stalled server, and redis-py's command API has no per-call read timeout.

    A connection is held for one call only (:class:`~stores.redis.connection.Connection`): at most
    ``connections`` ordinary calls and ``blocking_connections`` blocking reads are in flight at once, and each
    pool holds at most that many connections (on a cluster, per node).

    ``observer`` hears of every round trip and failed call (:mod:`stores.observer`; the app counts them).
    """

    scheme = ("redis", "rediss", "unix", *CLUSTER_SCHEMES)

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        client: Any = None,
        prefix: str = "q",
        events_maxlen: int = 1000,
        events_ttl_seconds: float = 24 * 3600,
        socket_connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        socket_timeout: float = DEFAULT_TIMEOUT,
        max_block_seconds: float = DEFAULT_MAX_BLOCK,
        connections: int = DEFAULT_CONNECTIONS,
        blocking_connections: int = DEFAULT_BLOCKING_CONNECTIONS,
        observer: StoreObserver = UNOBSERVED,
        **client_options: Any,
    ) -> None:
        for name, value in (
            ("socket_connect_timeout", socket_connect_timeout),
            ("socket_timeout", socket_timeout),
            ("max_block_seconds", max_block_seconds),
        ):
            if not 0 < value < float("inf"):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        blocking = None
        if client is None:
            # retry=None: redis-py repeats no call by itself (Connection decides what may be repeated).
            options = {"socket_connect_timeout": socket_connect_timeout, "retry": None, **client_options}
            # A cluster's clients are made on first use: one that is down must not stop a server's start.
            client = make_lazy_client(
                url, socket_timeout=socket_timeout, max_connections=connections, **options
            )
            blocking = make_lazy_client(
                url,
                socket_timeout=max_block_seconds + socket_timeout,
                max_connections=blocking_connections,
                **options,
            )
        self.url = url
        self.prefix = prefix
        self.events_maxlen = events_maxlen
        self.events_ttl_seconds = events_ttl_seconds
        self.max_block_seconds = max_block_seconds
        self.connection = Connection(
            client,
            blocking,
            observer,
            connections=connections,
            blocking_connections=blocking_connections,
            wait=socket_timeout,
        )
        self._state = RedisStateStore(self.connection, prefix)
        # Operator scripts, never on a request path. usage drops what lapsed, then reports: a repeat drops
        # nothing more. reset is sent once=True: between a lost reply and a plain repeat, new writes could
        # land and be dropped unasked; a repeat of the call answers the first run's report instead.
        self._usage = self.connection.script("changes", "scope_report", "usage", repeatable=True)
        self._reset = self.connection.script("changes", "scope_report", "reset", repeatable=True, once=True)
        self._rate_counter = RedisRateCounter(self.connection, prefix)
        self._warnings: list[str] | None = None  # known once the server has answered (see warnings)

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
            self.max_block_seconds,
        )

    def scope_registry(
        self, limits: ScopeLimits | None = None, *, clock: Clock | None = None
    ) -> RedisScopeRegistry:
        return RedisScopeRegistry(self.connection, self.prefix, limits or ScopeLimits(), clock)

    def rate_counter(self) -> RedisRateCounter:
        return self._rate_counter

    def ping(self) -> None:
        """PING; on a cluster, each primary in turn until one answers: the store is reachable while any part of
        it is (a primary that is down fails the requests for its scopes only, docs/cluster.md)."""
        if not self.connection.cluster:
            self.connection.command("ping", repeatable=True)  # a read
            return
        failure: StoreError | None = None
        for node in self.connection.shared.get_primaries():
            try:
                self.connection.command("ping", target_nodes=node, repeatable=True)
                return
            except StoreError as error:
                failure = error
        raise failure or StoreUnavailable("the Redis Cluster has no reachable primary")

    def scopes(self) -> list[str]:
        """The scope registry's members (one ZRANGE of stores/redis/keys.py ``scope_registry``): every scope admitted
        and not yet reclaimed."""
        members = self.connection.command("zrange", keys.scope_registry(self.prefix), 0, -1, repeatable=True)
        return sorted(text(member) for member in members)

    def usage(self, scope: str, now: float | None = None) -> ScopeUsage:
        """One EVALSHA of ``lua/usage.lua``: drop what lapsed, then report."""
        stats = keys.task_keys(self.prefix, scope)["stats"]
        at = time.time() if now is None else now
        return _usage(scope, self._usage([*state_keys(self.prefix, scope), stats], [repr(float(at))]))

    def reset(self, scope: str) -> ScopeUsage:
        """One EVALSHA of ``lua/reset.lua`` after an HKEYS of the scope's tasks (whose event streams it is
        given in KEYS): the scope's documents and tasks go in one atomic step. Looked at again when a task
        was saved in between."""
        task_keys = list(keys.task_keys(self.prefix, scope).values())
        streams = keys.task_events_prefix(self.prefix, scope)
        for _ in range(RESET_ATTEMPTS):
            fields = [
                text(field) for field in self.connection.command("hkeys", task_keys[0], repeatable=True)
            ]
            script_keys = [
                *state_keys(self.prefix, scope),
                *task_keys,
                *keys.task_claims(self.prefix, scope),
                *(streams + field for field in fields),
            ]
            reply = self._reset(script_keys, [repr(time.time()), *fields])
            if text(reply[0]) != "again":
                return _usage(scope, reply)
        raise StoreUnavailable(f"scope {scope} kept getting new tasks during its reset; run it again")

    def round_trips(self) -> int:
        return self.connection.round_trips

    def persistence(self) -> set[str]:
        """How the Redis in use keeps its data across a restart: ``{"aof"}``, ``{"rdb"}``, both, or nothing (a
        restart loses everything); on a cluster, what every primary does. ``CONFIG GET`` each of them: a
        :class:`StoreError` when it is refused (a managed Redis, an ACL), :class:`StoreUnavailable` when a
        server cannot be reached."""
        nodes = self.connection.shared.get_primaries() if self.connection.cluster else [None]
        kept: set[str] | None = None
        for node in nodes:
            target = {} if node is None else {"target_nodes": node}
            appendonly = self.connection.command("config_get", "appendonly", repeatable=True, **target)
            save = self.connection.command("config_get", "save", repeatable=True, **target)
            here = {"aof"} if text(_config_value(appendonly, "appendonly")) == "yes" else set()
            if text(_config_value(save, "save")).strip():
                here.add("rdb")
            kept = here if kept is None else kept & here
        return kept or set()

    def warnings(self) -> list[str]:
        """A Redis that persists nothing (neither AOF nor RDB), or one whose persistence cannot be told (its
        ``CONFIG GET`` refused). Asked once the server answers, then kept."""
        if self._warnings is None:
            try:
                kept = self.persistence()
            except StoreUnavailable:
                return []  # asked again next time; /readyz answers 503 meanwhile anyway
            except StoreError as error:
                self._warnings = [
                    f"cannot tell whether Redis persists its data (CONFIG GET refused: {error}); without AOF "
                    "or RDB a restart of Redis loses every task and acknowledged write (docs/deployment.md, "
                    '"Persistence and backup")'
                ]
            else:
                self._warnings = [] if kept else [NO_PERSISTENCE]
        return list(self._warnings)

    def close(self) -> None:
        self.connection.close()


def _config_value(reply: Any, name: str) -> Any:
    """One setting of a CONFIG GET reply (a mapping; on a cluster node possibly keyed by bytes)."""
    if isinstance(reply, dict):
        return reply.get(name, reply.get(name.encode(), b""))
    return b""


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
