"""Decoded tasks kept for read-only callers (``TaskStore.load_shared``), by the version they were read at.

A task polled with GetTask is decoded once per version instead of once per read: an entry is only ever
answered for the exact version the store confirms in the same step (the memory store's entry, or the Redis
script's reply), and versions are never reused (no ABA, see ``TaskStore``), so a kept value can be old but
never served as current. The values are shared between callers, so none may change them. Bounded by count
and by the bytes of the JSON they were decoded from (decoded, a task takes about seven times its JSON's
bytes: 2 MiB of JSON is ~14 MiB of a worker's memory); least recently used first out.
"""

from __future__ import annotations

from typing import TypeVar

from stores.bounded_lru import BoundedLru
from stores.jsontypes import JSON

K = TypeVar("K")


class SharedValues(BoundedLru[K, tuple[int, JSON]]):
    """Decoded tasks by key, each with the version it was read at. A task over a quarter of the bound is not
    kept (it would push out many small ones)."""

    def __init__(self, max_entries: int = 256, max_bytes: int = 2 * 1024 * 1024) -> None:
        super().__init__(max_entries, max_bytes, max_item_bytes=max_bytes // 4)
