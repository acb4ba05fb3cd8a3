"""One pool's Redis connections lent one call at a time (:class:`stores.redis.connection.Connection`): at most
``size`` of them exist, the free ones on a stack (the most recently used first, so an idle one is reused while
warm and the rest may time out). Taking a free one and giving it back are one list operation each, atomic for
threads and greenlets alike (a semaphore's acquire and release cost 3.5 µs a call under gevent); only a call
that finds none free and none left to make waits, polling every millisecond — the pool is then saturated."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from redis import exceptions as rex

BUSY_POLL_SECONDS = 0.001  # how often a call that found every connection lent looks again


class Lent:
    __slots__ = ("free", "generation", "lock", "made", "size")

    def __init__(self, size: int, generation: int = 0) -> None:
        if size < 1:
            raise ValueError(f"a Redis pool must lend at least one connection, got {size!r}")
        self.size = size
        self.free: list[Any] = []
        self.made = 0
        self.lock = threading.Lock()
        self.generation = generation

    def reset(self, generation: int) -> None:
        """Forget every connection (a forked child's are its parent's; or clients must be made anew)."""
        self.free, self.made, self.lock, self.generation = [], 0, threading.Lock(), generation

    def take(self, make: Callable[[], Any], wait: float, generation: int) -> Any:
        """A free client, or a new one from ``make`` while fewer than ``size`` exist; else wait up to ``wait``
        seconds for one to come back, then ``MaxConnectionsError``. ``generation``: the process's fork count."""
        if self.generation != generation:  # a forked child: its parent's connections are not its own
            self.reset(generation)
        deadline = 0.0
        while True:
            try:
                return self.free.pop()
            except IndexError:
                pass
            if self._reserve():
                try:
                    return make()
                except BaseException:
                    self.forget()
                    raise
            now = time.monotonic()
            deadline = deadline or now + wait
            if now >= deadline:
                raise rex.MaxConnectionsError(f"all {self.size} Redis connections stayed busy for {wait:g} s")
            time.sleep(BUSY_POLL_SECONDS)

    def give(self, client: Any) -> None:
        self.free.append(client)

    def forget(self) -> None:
        """One made connection is gone (it failed to connect, or went back to redis-py's pool)."""
        with self.lock:
            self.made -= 1

    def _reserve(self) -> bool:
        with self.lock:
            if self.made >= self.size:
                return False
            self.made += 1
            return True
