"""Decoded tasks kept for read-only callers (``TaskStore.load_shared``), by the version they were read at.

A task polled with GetTask is decoded once per version instead of once per read: an entry is only ever
answered for the exact version the store confirms in the same step (the memory store's entry, or the Redis
script's reply), and versions are never reused (no ABA, see ``TaskStore``), so a kept value can be old but
never served as current. The values are shared between callers, so none may change them. Bounded by count
and by the bytes of the JSON they were decoded from (decoded, a task takes about seven times its JSON's
bytes: 2 MiB of JSON is ~14 MiB of a worker's memory); least recently used first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

from stores.jsontypes import JSON

K = TypeVar("K")


class SharedValues(Generic[K]):
    def __init__(self, max_entries: int = 256, max_bytes: int = 2 * 1024 * 1024) -> None:
        self._entries: OrderedDict[K, tuple[int, JSON, int]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> tuple[int, JSON] | None:
        """The version and value kept for ``key`` (whatever its version), or ``None``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0], entry[1]

    def put(self, key: K, version: int, value: JSON, size: int) -> None:
        """Keep ``value`` as ``key``'s at ``version``; ``size``: the bytes of its JSON text. A value larger
        than a quarter of the bound is not kept (it would push out many small ones)."""
        with self._lock:
            self._drop(key)
            if size > self._max_bytes // 4:
                return
            self._entries[key] = (version, value, size)
            self._bytes += size
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                self._drop(next(iter(self._entries)))

    def discard(self, key: K) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: K) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[2]

    def __len__(self) -> int:
        return len(self._entries)
