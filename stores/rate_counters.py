"""Request counters for rate limits: fixed windows per identity, counted where every worker sees them.

A window starts with an identity's first request in it and lasts its ``seconds``; every request in it, allowed
or refused, counts (so a client that keeps sending while refused does not get through sooner). The Redis
counter (:mod:`stores.redis.rate_counters`) counts all windows of one request in one atomic script, so
concurrent requests from any worker of any host get exact, distinct counts; the memory counter keeps them in
the one process of ``memory://``.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Window:
    """One limit's window: ``name`` tells it apart among an identity's windows (it is part of the key)."""

    name: str
    seconds: int


@dataclass(frozen=True, slots=True)
class WindowCount:
    count: int  # requests in the window, this one included
    reset_seconds: float  # until the window ends and counting starts over


class RateCounter(ABC):
    @abstractmethod
    def hit(self, identity: str, windows: Sequence[Window]) -> list[WindowCount]:
        """Count one request of ``identity`` in each of ``windows``; the counts, in the same order. Raises
        :class:`~stores.errors.StoreError` when the store cannot count (nothing was counted, or on a lost
        reply perhaps everything)."""


class MemoryRateCounter(RateCounter):
    """In-process counts, for ``memory://``'s single process. (``limits``' own ``MemoryStorage`` starts a timer
    thread for its expiry on nearly every increment: measured 2.5 ms a request.) Ended windows are dropped
    by a sweep once as many windows have been opened as were alive at the last sweep, so the table stays
    within about twice the windows alive, for a constant cost per request."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._windows: dict[str, tuple[int, float]] = {}  # key -> (count, when the window ends)
        self._lock = threading.Lock()  # gthread: threads; gevent: patched, never held across a switch
        self._sweep_at = 1024

    def hit(self, identity: str, windows: Sequence[Window]) -> list[WindowCount]:
        now = self._clock()
        counts = []
        with self._lock:
            for window in windows:
                key = f"{window.name}:{identity}"
                count, ends = self._windows.get(key, (0, now))
                if ends <= now:  # ended (or new): a window starts with this request
                    count, ends = 0, now + window.seconds
                self._windows[key] = (count + 1, ends)
                counts.append(WindowCount(count + 1, ends - now))
            if len(self._windows) >= self._sweep_at:
                self._windows = {k: v for k, v in self._windows.items() if v[1] > now}
                self._sweep_at = max(1024, 2 * len(self._windows))
        return counts
