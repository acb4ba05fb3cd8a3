"""One Redis client shared by the Redis backend's stores: per-thread connections, round-trip counting, the
mapping of driver errors to store errors, and the Lua scripts of ``stores/lua``."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any

import redis

from stores.errors import StoreError, StoreUnavailable


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
        replies: list[Any] = self._guard(pipe.execute)
        return replies

    def script(self, *names: str) -> Callable[[Sequence[str], Sequence[Any]], Any]:
        """A registered script (prelude files first); calling it is one EVALSHA."""
        name = "+".join(names)
        with self._lock:
            script = self._scripts.get(name)
            if script is None:
                script = self._scripts[name] = self.shared.register_script(lua_source(*names))
        return lambda keys_, args: self._guard(lambda: script(keys_, args, client=self.client))
