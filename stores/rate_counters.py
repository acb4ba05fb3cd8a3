"""Request counters for rate limits: fixed windows per identity, counted where every worker sees them.

A window starts with an identity's first request in it and lasts its ``seconds``; every request in it, allowed
or refused, counts (so a client that keeps sending while refused does not get through sooner). The Redis
counter (:mod:`stores.redis_rate_counters`) counts all windows of one request in one atomic script, so
concurrent requests from any worker of any host get exact, distinct counts; the memory counter is
``limits``' in-process storage, for the one process of ``memory://``.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from limits.storage import MemoryStorage


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
    """In-process counts (``limits.storage.MemoryStorage``), for ``memory://``'s single process."""

    def __init__(self) -> None:
        self._storage = MemoryStorage()
        self._lock = threading.Lock()  # the windows of one request are counted together

    def hit(self, identity: str, windows: Sequence[Window]) -> list[WindowCount]:
        counts = []
        with self._lock:
            for window in windows:
                key = f"{window.name}:{identity}"
                count = self._storage.incr(key, window.seconds)
                reset = self._storage.get_expiry(key) - time.time()
                counts.append(WindowCount(count, max(0.0, reset)))
        return counts
