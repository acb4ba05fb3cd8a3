"""A thread-safe map bounded by entries and by the sizes its callers state: least recently used out first.

The one eviction policy of the per-process caches: the read cache (:mod:`stores.cache`), the decoded tasks of
shared reads (:mod:`stores.shared_reads`) and the runtime's answer memo (``quineling/runtime/memo.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedLru(Generic[K, V]):
    """At most ``max_entries`` values whose sizes add up to at most ``max_bytes``. A value larger than
    ``max_item_bytes`` (default ``max_bytes``) is not kept: it would push out everything else."""

    def __init__(self, max_entries: int, max_bytes: int, max_item_bytes: int | None = None) -> None:
        if max_entries < 1 or max_bytes < 1:
            raise ValueError("a bounded cache needs room for at least one entry")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_item_bytes = max_bytes if max_item_bytes is None else min(max_item_bytes, max_bytes)
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (now the most recently used), or ``None``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Keep ``value`` for ``key`` in place of any earlier one, evicting the least recently used beyond
        the bounds; a value over ``max_item_bytes`` only drops the earlier one."""
        with self._lock:
            self._drop(key)
            if size > self.max_item_bytes:
                return
            self._entries[key] = (value, size)
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def discard(self, key: K) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: K) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[1]

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size(self) -> int:
        """The sizes of the values kept, added up."""
        return self._bytes
