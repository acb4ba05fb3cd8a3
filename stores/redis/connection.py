"""One Redis client shared by the Redis backend's stores: connections lent one call at a time, a separate pool for
blocking reads, round-trip counting, the mapping of driver errors to store errors, and the Lua scripts of ``stores/redis/lua``.
The client is a single server's (``redis://``) or a Redis Cluster's (``redis+cluster://``, :func:`make_client`).

Failure handling, in one place (docs/decisions/0009-storage-outages.md):

* Every call has a deadline: the client's connect and read timeouts (``socket_connect_timeout``,
  ``socket_timeout``), and for a blocking event read the blocking pool's longer read timeout. A call that
  finds all its pool's connections lent waits for one at most the read timeout (:class:`Connection`).
* A free connection is checked before it is lent for a call: if the server closed it (a restart, a killed
  client, an idle timeout), it is dropped and the call connects afresh, so the first request after Redis
  comes back does not fail on a dead socket. Nothing is sent on a connection known to be dead.
* A call that is safe to repeat (``repeatable=True``: a read, or a script whose second run changes nothing the
  first did not) is sent once more when it fails with a connection error; a write is never repeated, because
  the first attempt may have been applied before its reply was lost.
* A write script is sent ``once=True``: it records its reply under an operation id of the call, in its own
  slot, and a repeat of that call answers the recorded reply and writes nothing (``lua/once.lua``). So a repeat
  — ours, or the cluster client's own after a timeout or a failover — can never apply a write twice.
* Scripts are redis-py ``Script`` objects: one that the server no longer knows (a restart, a failover to a
  replica, ``SCRIPT FLUSH``) is loaded again and sent again within the same call.
* Every driver failure becomes a :class:`~stores.errors.StoreError`: transient ones (connection, timeout,
  loading, read-only replica, out of memory, script cache flushed, busy, socket errors, a cluster whose slot
  map cannot be read) as :class:`~stores.errors.StoreUnavailable`, anything else as a plain ``StoreError``.
* A cluster client is made on first use (:class:`LazyCluster`): redis-py's reads the slot map when it is made
  and raises when no node answers, which would stop a server from starting while its cluster is down. Made
  lazily, the server starts and answers the retryable error until a node answers, as with one server.
"""

from __future__ import annotations

import os
import secrets
import select
import sys
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

import hiredis
import redis
from redis import exceptions as rex
from redis.backoff import ExponentialBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import Script
from redis.retry import Retry

from stores.errors import StoreError, StoreUnavailable
from stores.observer import UNOBSERVED, StoreObserver
from stores.redis import keys
from stores.redis.cluster_url import cluster_auth, cluster_hosts
from stores.redis.lending import Lent

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
# How often the cluster client itself sends a call again after a connection error, a timeout or a cluster
# that is down, re-reading the slot map in between (a failover moves slots to a replica). Safe: reads are
# repeatable and writes are sent once=True. Few and short, so a dead primary's scopes fail within a bound.
CLUSTER_RETRIES = 2
CLUSTER_BACKOFF = ExponentialBackoff(cap=0.5, base=0.05)


class _Cluster(RedisCluster):
    """redis-py's cluster client, except that it finds the keys of an XREAD itself: redis-py asks a node for
    them (COMMAND GETKEYS, XREAD's keys being movable) before every read, a second round trip for every poll
    of every open stream."""

    def _get_command_keys(self, *args: Any) -> Any:
        if str(args[0]).upper() == "XREAD":
            words = [arg.upper() if isinstance(arg, str) else arg for arg in args]
            if "STREAMS" in words:  # XREAD [COUNT n] [BLOCK ms] STREAMS key... id...
                streams = args[words.index("STREAMS") + 1 :]
                return list(streams[: len(streams) // 2])
        return super()._get_command_keys(*args)  # type: ignore[no-untyped-call]


def make_client(url: str, *, socket_timeout: float, **options: Any) -> Any:
    """The redis-py client for a store URL: ``redis://``, ``rediss://``, ``unix://`` (one server) or
    ``redis+cluster://[user:password@]host:port[,host:port...]`` and ``rediss+cluster://`` (TLS): a Redis
    Cluster reached through any of the listed nodes (the client learns the rest from them). A cluster has no
    database numbers: its URL has no path but ``/`` or ``/0``, and no query."""
    scheme = url.split("://", 1)[0].lower()
    if scheme not in CLUSTER_SCHEMES:
        return redis.Redis.from_url(url, socket_timeout=socket_timeout, **options)
    return _Cluster(startup_nodes=cluster_nodes(url), **_cluster_settings(url, socket_timeout, options))


def make_lazy_client(url: str, *, socket_timeout: float, **options: Any) -> Any:
    """:func:`make_client`'s client, except that a cluster's is a :class:`LazyCluster` (the URL is checked now)."""
    if url.split("://", 1)[0].lower() not in CLUSTER_SCHEMES:
        return make_client(url, socket_timeout=socket_timeout, **options)
    nodes, settings = cluster_nodes(url), _cluster_settings(url, socket_timeout, options)
    return LazyCluster(lambda: _Cluster(startup_nodes=nodes, **settings))


class LazyCluster:
    """A Redis Cluster client made on its first use (see the module doc); until a node answers, each use
    tries again. Scripts can be registered before it is made."""

    def __init__(self, make: Callable[[], RedisCluster]) -> None:
        self._make = make
        self._client: RedisCluster | None = None
        self._lock = threading.Lock()

    def get(self) -> RedisCluster:
        known = self._client
        if known is not None:
            return known
        # Made outside the lock: while the cluster is down, each request waits for its own attempt only.
        made = self._make()
        with self._lock:
            if self._client is None:
                self._client = made
                return made
            first = self._client
        made.close()  # another thread's was first
        return first

    def register_script(self, source: str) -> Script:
        # As bytes (UTF-8, RedisCluster's default encoding), a Script needs nothing of its registered client;
        # every call names the client it runs on (Connection.script).
        return Script(self, source.encode())  # type: ignore[arg-type]

    def close(self) -> None:
        """Close the client if it was made (closing never connects)."""
        if self._client is not None:
            self._client.close()


def _cluster_settings(url: str, socket_timeout: float, options: dict[str, Any]) -> dict[str, Any]:
    scheme = url.split("://", 1)[0].lower()
    settings: dict[str, Any] = {
        # max_connections: each node's pool's (redis-py's default is 100); the gates of Connection bound the
        # calls in flight to it, so a node's pool never runs out.
        **{name: value for name, value in options.items() if name != "retry"},
        **cluster_auth(url),
        "ssl": scheme == "rediss+cluster",
        "socket_timeout": socket_timeout,
        # The cluster client's own repeats (CLUSTER_RETRIES) replace the single-server option; other scopes
        # stay served while some slots have no primary (the servers need cluster-require-full-coverage no
        # for that, docs/cluster.md).
        "retry": Retry(CLUSTER_BACKOFF, CLUSTER_RETRIES),
        "require_full_coverage": False,
    }
    return settings


def cluster_nodes(url: str) -> list[ClusterNode]:
    """The startup nodes of a cluster URL (:func:`stores.redis.cluster_url.cluster_hosts`)."""
    return [ClusterNode(host, port) for host, port in cluster_hosts(url)]  # type: ignore[no-untyped-call]


def lua_source(*names: str) -> str:
    """Concatenated script files from ``stores/redis/lua`` (a shared prelude first, then the script)."""
    folder = resources.files("stores.redis") / "lua"
    return "\n".join((folder / f"{name}.lua").read_text(encoding="utf-8") for name in names)


def _os_poll() -> Callable[[], Any]:
    """``select.poll`` as the OS provides it, also where gevent has patched ``select``: a poll with a zero timeout
    never blocks, so it needs no event loop. gevent's would start watchers and a timeout and switch to its
    hub for it: about 25 µs against 1 µs, on every Redis call (the worker's turns are taken after each
    answer, quineling.server.hooks.take_turn)."""
    monkey = sys.modules.get("gevent.monkey")
    poll: Callable[[], Any] = monkey.get_original("select", "poll") if monkey else select.poll
    return poll


# Resolved once: imported before gevent patches ``select`` this is the OS's poll already, and after, its original.
_OS_POLL = _os_poll()


def _readable_now(sock: Any) -> bool:
    """Whether the socket has bytes to read or has been closed by the other side, without waiting."""
    poller = _OS_POLL()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


_fork_generation = 0  # bumped in a forked child, whose inherited per-thread connections are its parent's


def _forked() -> None:
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_forked)

# Server states that pass: a restarted server loading its data, a replica during failover, a full server,
# a flushed script cache (redis-py reloads a missing script itself; a flush between its load and its call
# is what remains). The request may be sent again once the state has passed.
_TRANSIENT = (
    rex.ConnectionError,  # includes BusyLoadingError (LOADING) and MaxConnectionsError
    rex.TimeoutError,
    rex.ReadOnlyError,  # READONLY: a replica, e.g. the old primary during a failover
    rex.OutOfMemoryError,  # OOM: maxmemory reached with a no-eviction policy
    rex.NoScriptError,
    rex.TryAgainError,
    rex.ClusterDownError,  # includes MasterDownError
    OSError,  # a socket error redis-py did not wrap (socket.timeout is an OSError too)
)
# The same for error replies redis-py has no class for (a plain ResponseError starting with the code):
# writes refused after a failed snapshot, a script running too long, too few replicas, a blocked read
# released by a role change.
_TRANSIENT_CODES = frozenset({"MISCONF", "BUSY", "NOREPLICAS", "UNBLOCKED"})


# The cluster client's own failures to read the slot map (it rereads it after a connection error): no node
# answers, the nodes disagree, slots have no primary. Its other RedisClusterExceptions are refusals of the
# call itself (keys in several slots, a command it cannot route): not transient.
_CLUSTER_MAP_FAILURES = (
    "Redis Cluster cannot be connected",
    "could not agree on a valid slots cache",
    "All slots are not covered",
)


def _transient(error: BaseException) -> bool:
    if isinstance(error, _TRANSIENT):
        return True
    if isinstance(error, rex.SlotNotCoveredError):
        return True
    if isinstance(error, rex.RedisClusterException):
        return any(failure in str(error) for failure in _CLUSTER_MAP_FAILURES)
    return isinstance(error, rex.ResponseError) and str(error).split(" ", 1)[0] in _TRANSIENT_CODES


# Connection errors for which a repeat on a fresh connection can succeed at once: not a server that is still
# loading, refuses our credentials or has no free connection.
_NOT_REPEATED = (
    rex.BusyLoadingError,
    rex.AuthenticationError,
    rex.AuthorizationError,
    rex.MaxConnectionsError,
)


def _repeat_helps(error: BaseException) -> bool:
    # NOSCRIPT reaching us: the script cache was flushed again between redis-py's reload and its resend (a
    # failover or SCRIPT FLUSH under load); the repeat reloads it once more.
    if isinstance(error, rex.NoScriptError):
        return True
    return isinstance(error, rex.ConnectionError) and not isinstance(error, _NOT_REPEATED)


# Connections each pool lends at once when none are configured (QUINELING_STORE_CONNECTIONS and
# QUINELING_BLOCKING_STORE_CONNECTIONS decide them in the server, quineling/settings.py).
DEFAULT_CONNECTIONS = 64
DEFAULT_BLOCKING_CONNECTIONS = 64


class Connection:
    """The client plus a round-trip counter: every server call of the backend goes through here.

    A connection is held only for the duration of one call (a command, a script, a blocking read): it is taken
    from the pool's free ones before the call and given back after it, so the connections a worker holds scale
    with its calls in flight, not with its clients (a kept-alive client or an open stream between two reads
    holds none). At most ``connections`` calls are in flight at once; one more waits for a free connection up to
    ``wait`` seconds (the reply deadline), then fails as the retryable outage. Blocking event reads lend from a
    pool of their own (``blocking_connections``), so a request never waits behind the streams.

    The free connections are kept here, each in a client of its own, rather than returned to redis-py's pool:
    its checkout and return cost about a third of the CPU of a small command under load. What the checkout also
    did — notice a connection the server has closed — is kept as one non-blocking poll of the socket
    (:meth:`_drop_if_closed`, about 4 µs).

    ``blocking`` is the client for blocking event reads (``XREAD BLOCK``), over a pool of its own whose read
    timeout exceeds the longest block (see :class:`~stores.redis.RedisBackend`); ``None``: ``client``. A
    cluster client keeps a pool per node and checks each connection out per command itself: only the gates
    apply to it. ``observer`` hears of every round trip and every failed call (:mod:`stores.observer`).
    """

    def __init__(
        self,
        client: Any,
        blocking: Any = None,
        observer: StoreObserver = UNOBSERVED,
        *,
        connections: int = DEFAULT_CONNECTIONS,
        blocking_connections: int = DEFAULT_BLOCKING_CONNECTIONS,
        wait: float = 5.0,
    ) -> None:
        self._shared = client
        self.observer = observer
        self._blocking = client if blocking is None else blocking
        self.cluster = isinstance(client, (RedisCluster, LazyCluster))
        self._scripts: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._round_trips = 0
        self._calls = Lent(connections)
        self._blocking_calls = self._calls if blocking is None else Lent(blocking_connections)
        self._wait = wait
        self._observer: Callable[[tuple[Any, ...]], None] | None = None

    @property
    def shared(self) -> Any:
        """The client shared by all threads (a cluster's is made here on first use)."""
        return self._made(self._shared)

    @property
    def blocking(self) -> Any:
        """The client of blocking event reads."""
        return self._made(self._blocking)

    @property
    def client(self) -> Any:
        """A client for calls outside the lent ones (tests, tools): the shared one, over the same pool."""
        return self.shared

    @property
    def connections(self) -> tuple[int, int]:
        """The connections lent at most at once: for calls, and for blocking reads."""
        return self._calls.size, self._blocking_calls.size

    def _made(self, client: Any) -> Any:
        if not isinstance(client, LazyCluster):
            return client
        try:
            return client.get()
        except (rex.RedisClusterException, rex.RedisError, OSError) as error:
            self.observer.error(type(error).__name__)
            raise StoreUnavailable(
                f"the Redis Cluster cannot be reached: {type(error).__name__}: {error}"
            ) from error

    def observe(self, observer: Callable[[tuple[Any, ...]], None]) -> None:
        """Call ``observer`` with the arguments of every command sent from now on (scripts' EVALSHA and
        SCRIPT LOAD included), before it is sent: tests check each call's keys share one slot."""
        self._observer = observer
        for client in (self.shared, self.blocking):
            self._watched(client)
        for lent in (self._calls, self._blocking_calls):
            lent.reset(_fork_generation)  # clients made from now on are watched

    def _watched(self, client: Any) -> Any:
        observer = self._observer
        if observer is not None:
            send = type(client).execute_command.__get__(client)

            def execute_command(*args: Any, **options: Any) -> Any:
                observer(args)
                return send(*args, **options)

            client.execute_command = execute_command
        return client

    def _take(self, lent: Lent, shared: Any) -> Any:
        """A client holding a connection of ``shared``'s pool for one call (give it back with :meth:`_give`); a
        cluster's one client, counted against the pool's size."""
        client = lent.take(lambda: self._new_client(shared), self._wait, _fork_generation)
        if not self.cluster:
            self._drop_if_closed(client)
        return client

    def _new_client(self, shared: Any) -> Any:
        if self.cluster:
            return self._made(shared)
        pool = shared.connection_pool
        client = redis.Redis(connection_pool=pool)
        client.connection = pool.get_connection()  # connects (a failure is the call's)
        return self._watched(client)

    def _give(self, lent: Lent, client: Any) -> None:
        lent.give(client)

    @staticmethod
    def _drop_if_closed(client: Any) -> None:
        """Disconnect a free connection if the server has closed it, or if it holds unread bytes (never
        the case for an idle connection between two calls): one non-blocking poll of the socket, a few
        microseconds. An unconnected one is left alone, so an outage costs one connect attempt per call, not
        two."""
        conn = getattr(client, "connection", None)
        if conn is None or getattr(conn, "_sock", None) is None:
            return
        sock = conn._sock
        try:
            # TLS may hold decrypted bytes above the socket; else one poll of the socket, as the OS gives it.
            stale = bool(getattr(sock, "pending", int)()) or _readable_now(sock)
        except (OSError, ValueError):  # closed under us
            stale = True
        if stale:
            conn.disconnect()

    def close(self) -> None:
        """Disconnect every connection of both pools, including those lent out."""
        if self.cluster:
            self._shared.close()  # every node's pool (a LazyCluster never made has none)
            if self._blocking is not self._shared:
                self._blocking.close()
            return
        self.shared.close()
        self.shared.connection_pool.disconnect()
        if self.blocking is not self.shared:
            self.blocking.close()
            self.blocking.connection_pool.disconnect()

    @property
    def round_trips(self) -> int:
        return self._round_trips

    def _count(self) -> None:
        with self._lock:
            self._round_trips += 1
        self.observer.round_trip()

    def _guard(self, call: Callable[[], Any], *, repeatable: bool) -> Any:
        self._count()
        try:
            try:
                return call()
            except rex.RedisError as error:
                if not (repeatable and _repeat_helps(error)):
                    raise
            self._count()  # the one repeat, on a fresh connection (redis-py dropped the failed one)
            return call()
        except (rex.RedisError, rex.RedisClusterException, OSError) as error:
            self.observer.error(type(error).__name__)
            if _transient(error):
                raise StoreUnavailable(f"Redis is unavailable: {type(error).__name__}: {error}") from error
            raise StoreError(f"Redis refused the call: {type(error).__name__}: {error}") from error

    def command(self, name: str, *args: Any, repeatable: bool, **options: Any) -> Any:
        """One command on a lent connection; ``repeatable``: safe to send twice (see module doc)."""

        def call() -> Any:
            client = self._take(self._calls, self._shared)
            try:
                return getattr(client, name)(*args, **options)
            finally:
                self._give(self._calls, client)

        return self._guard(call, repeatable=repeatable)

    def blocking_command(self, name: str, *args: Any, **options: Any) -> Any:
        """A read that may block on the server (``XREAD BLOCK``), on a connection lent by the blocking pool. A
        read only, so it is repeated once after a connection error."""

        def call() -> Any:
            client = self._take(self._blocking_calls, self._blocking)
            try:
                return getattr(client, name)(*args, **options)
            finally:
                self._give(self._blocking_calls, client)

        return self._guard(call, repeatable=True)

    def pipeline(
        self, fill: Callable[[Any], None], *, repeatable: bool, transaction: bool = True
    ) -> list[Any]:
        def run() -> list[Any]:
            # Through the pool itself, with a connection one of the free ones gives back to it: the pool
            # then never holds more than the calls' gate allows.
            client = self._take(self._calls, self._shared)
            try:
                shared = self.shared
                if not self.cluster and client.connection is not None:
                    shared.connection_pool.release(client.connection)
                    client.connection = None
                    client = None
                pipe = shared.pipeline(transaction=transaction)
                fill(pipe)
                replies: list[Any] = pipe.execute()
                return replies
            finally:
                if client is None:
                    self._calls.forget()
                else:
                    self._give(self._calls, client)

        replies: list[Any] = self._guard(run, repeatable=repeatable)
        return replies

    def script(
        self, *names: str, repeatable: bool, once: bool = False
    ) -> Callable[[Sequence[str], Sequence[Any]], Any]:
        """A registered script (prelude files first); calling it is one EVALSHA (plus a SCRIPT LOAD when the
        server does not know it yet, e.g. after a restart or a failover). ``repeatable``: a read, or a script
        whose second run changes nothing the first did not. ``once``: a write, wrapped in ``lua/once.lua`` and
        given an operation id of its own per call (recorded in the slot of its first key), so a repeat of the call
        answers the first run's reply: such a call is repeatable (say so, ``repeatable=True``). See the module
        doc."""
        name = "+".join(("once", *names) if once else names)
        with self._lock:
            script = self._scripts.get(name)
            if script is None:
                source = once_source(*names) if once else lua_source(*names)
                script = self._scripts[name] = self._shared.register_script(source)  # connects to nothing
        if not once:
            return lambda keys_, args: self._guard(
                lambda: self._evalsha(script, keys_, args), repeatable=repeatable
            )

        def call_once(keys_: Sequence[str], args: Sequence[Any]) -> Any:
            recorded = [*keys_, keys.operation(keys_[0], secrets.token_hex(12))]  # the same for its repeats
            return self._guard(lambda: self._evalsha(script, recorded, args), repeatable=repeatable)

        return call_once

    def _evalsha(self, script: Script, keys_: Sequence[str], args: Sequence[Any]) -> Any:
        client = self._take(self._calls, self._shared)
        try:
            return self._evalsha_on(client, script, keys_, args)
        finally:
            self._give(self._calls, client)

    def _evalsha_on(self, client: Any, script: Script, keys_: Sequence[str], args: Sequence[Any]) -> Any:
        """One EVALSHA of ``script`` on a lent connection, and on NOSCRIPT a SCRIPT LOAD and the EVALSHA
        again, as ``Script.__call__`` does. On one server the command is written to the thread's connection
        and its reply read directly: redis-py's ``execute_command`` around the same two steps (its lock, retry
        wrapper, timing and callbacks, none of which a script's reply needs) cost about 30 µs of CPU per call,
        half of a small script's whole round trip. A failed send or read disconnects the connection, as
        through the client; a cluster's calls keep going through its client, which routes them."""
        conn = None if self.cluster else client.connection
        if conn is None:
            return script(keys_, args, client=client)
        arguments = (len(keys_), *keys_, *args)
        try:
            return self._send(conn, "EVALSHA", script.sha, *arguments)
        except rex.NoScriptError:
            script.sha = client.script_load(script.script)
            return self._send(conn, "EVALSHA", script.sha, *arguments)

    def _send(self, conn: Any, *command: Any) -> Any:
        """``command`` on a redis-py connection, its reply as read (scripts' replies take no callback)."""
        if self._observer is not None:
            self._observer(command)
        conn.send_packed_command([pack(command)], check_health=False)
        return conn.read_response()


def pack(command: tuple[Any, ...]) -> bytes:
    """``command`` in the Redis protocol, by hiredis (redis-py's own dependency here), byte for byte what
    ``Connection.pack_command`` makes of the strings, numbers and bytes the stores send: that wrapper walks
    the arguments once more in Python first, 22 µs of a commit's 52 arguments against 7 µs."""
    packed: bytes = hiredis.pack_command(command)
    return packed


def once_source(*names: str) -> str:
    """A write script as ``lua/once.lua`` runs it: the script's body becomes the function ``once`` calls."""
    return "\n".join(
        [lua_source("once"), "local function body()", lua_source(*names), "end", "return once(body)"]
    )
