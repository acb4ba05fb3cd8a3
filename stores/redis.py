"""The Redis backend (``redis://``, ``rediss://``, ``unix://``): shared by every worker of every process.

Each store call is one server round trip: a read is one MULTI/EXEC pipeline of HMGETs, a commit is one EVALSHA
of ``lua/commit.lua`` — or, with a task attached, of ``lua/commit_task.lua`` (see
:meth:`stores.redis_tasks.RedisTaskStore.save_with_changes`). Keys come from :mod:`stores.keys`; scripts from
:mod:`stores.lua`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from typing import Any

from stores import keys
from stores.base import Backend, StateStore, TaskLimits, TaskStore, TaskWrite, Versioned
from stores.changes import ChangeSet, Key, merge_quotas
from stores.errors import ConflictError, QuotaExceeded, StoreError, StoreUnavailable
from stores.records import decode, encode


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def change_args(changes: ChangeSet) -> list[Any]:
    """A change set as ``lua/changes.lua`` reads it from ARGV."""
    quotas = merge_quotas(changes.quotas)
    args: list[Any] = [len(changes.expect), len(changes.put), len(changes.delete), len(quotas)]
    for key, version in changes.expect.items():
        args += [keys.document_field(key), int(version)]
    for key, value in changes.put.items():
        args += [keys.document_field(key), encode(value)]
    args += [keys.document_field(key) for key in sorted(changes.delete)]
    for quota in quotas:
        args += [quota.name, int(quota.delta), int(quota.limit)]
    return args


def state_keys(prefix: str, scope: str) -> list[str]:
    """A scope's documents, versions and counters keys, in the order the scripts expect them."""
    return [keys.documents(prefix, scope), keys.versions(prefix, scope), keys.counters(prefix, scope)]


def raise_state_refusal(reply: Any) -> None:
    """Raise what a ``changes.lua`` refusal means; return quietly for any other reply."""
    outcome = text(reply[0])
    if outcome == "conflict":
        raise ConflictError(f"{text(reply[1])} changed since it was read")
    if outcome == "quota":
        raise QuotaExceeded(text(reply[1]), int(text(reply[2])))


def lua_source(*names: str) -> str:
    """Concatenated script files from ``stores/lua`` (a shared prelude first, then the script)."""
    folder = resources.files("stores") / "lua"
    return "\n".join((folder / f"{name}.lua").read_text(encoding="utf-8") for name in names)


_fork_generation = 0  # bumped in a forked child, whose inherited per-thread connections are its parent's


def _forked() -> None:
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_forked)


class Connection:
    """The client plus a round-trip counter: every server call of the backend goes through here.

    Each thread calls Redis on a connection of its own (a single-connection client over the shared pool,
    made on the thread's first call): a server thread then never queues on the pool's lock or polls a pooled
    connection for stray data before each command, which cost about a third of the CPU of a small command
    under load. The connection returns to the pool when its thread ends; pipelines use the pool directly.
    """

    def __init__(self, client: Any) -> None:
        self.shared = client
        self._scripts: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._round_trips = 0
        self._own = threading.local()

    @property
    def client(self) -> Any:
        """This thread's client."""
        own = self._own
        if getattr(own, "generation", None) != _fork_generation:
            import redis

            own.client = redis.Redis(
                connection_pool=self.shared.connection_pool, single_connection_client=True
            )
            own.generation = _fork_generation
        return own.client

    def close(self) -> None:
        """Disconnect every connection of the pool, including those the threads hold."""
        self.shared.close()
        self.shared.connection_pool.disconnect()

    @property
    def round_trips(self) -> int:
        return self._round_trips

    def _count(self) -> None:
        with self._lock:
            self._round_trips += 1

    def _guard(self, call: Callable[[], Any]) -> Any:
        import redis

        self._count()
        try:
            return call()
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise StoreUnavailable(f"Redis is unreachable: {error}") from error
        except redis.RedisError as error:
            raise StoreError(f"Redis refused the call: {error}") from error

    def command(self, name: str, *args: Any, **options: Any) -> Any:
        return self._guard(lambda: getattr(self.client, name)(*args, **options))

    def pipeline(self, fill: Callable[[Any], None], *, transaction: bool = True) -> list[Any]:
        pipe = self.shared.pipeline(transaction=transaction)
        fill(pipe)
        return self._guard(pipe.execute)

    def script(self, *names: str) -> Callable[[Sequence[str], Sequence[Any]], Any]:
        """A registered script (prelude files first); calling it is one EVALSHA."""
        name = "+".join(names)
        with self._lock:
            script = self._scripts.get(name)
            if script is None:
                script = self._scripts[name] = self.shared.register_script(lua_source(*names))
        return lambda keys_, args: self._guard(lambda: script(keys_, args, client=self.client))


class RedisStateStore(StateStore):
    def __init__(self, conn: Connection, prefix: str) -> None:
        self._conn = conn
        self._prefix = prefix
        self.location = (conn, prefix)  # two stores over one location commit together
        self._commit = conn.script("changes", "commit")

    def read(self, scope: str, keys_: Iterable[Key]) -> dict[Key, Versioned]:
        wanted = list(dict.fromkeys(keys_))
        if not wanted:
            return {}
        fields = [keys.document_field(key) for key in wanted]

        def fill(pipe: Any) -> None:
            pipe.hmget(keys.documents(self._prefix, scope), fields)
            pipe.hmget(keys.versions(self._prefix, scope), fields)

        values, versions = self._conn.pipeline(fill)  # MULTI/EXEC: one consistent snapshot
        return {
            key: Versioned(
                None if value is None else decode(value), int(version or 0) if value is not None else 0
            )
            for key, value, version in zip(wanted, values, versions, strict=True)
        }

    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        values = self._conn.command("hmget", keys.counters(self._prefix, scope), wanted)
        return {name: int(value or 0) for name, value in zip(wanted, values, strict=True)}

    def commit(self, scope: str, changes: ChangeSet, *, task: TaskWrite | None = None) -> int | None:
        if task is not None:
            from stores.redis_tasks import RedisTaskStore

            if not isinstance(task.store, RedisTaskStore) or not task.store.joins(self):
                raise ValueError("a task written with a commit must belong to the same Redis backend")
            return task.store.save_with_changes(scope, changes, task)
        if not changes.expect and changes.is_empty:
            return None  # nothing to check, nothing to write
        reply = self._commit(state_keys(self._prefix, scope), change_args(changes))
        raise_state_refusal(reply)
        if text(reply[0]) != "ok":  # pragma: no cover - a script/contract mismatch
            raise StoreError(f"unexpected commit reply {reply!r}")
        return None


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
            import redis  # lazily: the memory backend must not need the driver

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
        self, limits: TaskLimits | None = None, *, clock: Callable[[], float] | None = None
    ) -> TaskStore:
        from stores.redis_tasks import RedisTaskStore

        return RedisTaskStore(self, limits or TaskLimits(), clock)

    def round_trips(self) -> int:
        return self.connection.round_trips

    def close(self) -> None:
        self.connection.close()
