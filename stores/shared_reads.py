"""Decoded values kept for read-only callers: tasks (``TaskStore.load_shared``) and documents
(``StateStore.read_shared``).

A task polled with GetTask is decoded once per version instead of once per read: an entry is only ever
answered for the exact version the store confirms in the same step (the memory store's entry, or the Redis
script's reply), and task versions are never reused (no ABA, see ``TaskStore``), so a kept value can be old but
never served as current. A document (the artifact every ``run`` of it reads) is kept with the very text object
it was decoded from and answered only while the store (the memory store, the read cache) still holds that
object: a rewritten document is a new text, however its version came about. The values are shared between
callers, so none may change them. Bounded by count and by the bytes of the JSON they were decoded from
(decoded, a task takes about seven times its JSON's bytes: 2 MiB of JSON is ~14 MiB of a worker's memory);
least recently used first out.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from stores import codec
from stores.bounded_lru import BoundedLru
from stores.jsontypes import JSON

K = TypeVar("K")


class SharedValues(BoundedLru[K, tuple[int, JSON]]):
    """Decoded values by key, each with the version it was read at. A value over a quarter of the bound is not
    kept (it would push out many small ones)."""

    def __init__(self, max_entries: int = 256, max_bytes: int = 2 * 1024 * 1024) -> None:
        super().__init__(max_entries, max_bytes, max_item_bytes=max_bytes // 4)


class SharedDecodes(Generic[K]):
    """Values decoded from stored JSON texts, by key, each with its text: :meth:`decode` answers the kept value
    only for the identical text object, so no value outlives the text it came from. Kept few (64 documents,
    1 MiB of their JSON): a decoded document is hundreds of objects that the collector walks as long as they
    are kept, and a set that churns through many of them costs every request of the worker."""

    def __init__(self, max_entries: int = 64, max_bytes: int = 1024 * 1024) -> None:
        self._values: BoundedLru[K, tuple[str | bytes, Any]] = BoundedLru(
            max_entries, max_bytes, max_item_bytes=max_bytes // 4
        )

    def decode(self, key: K, text: str | bytes) -> Any:
        """The value of ``text`` (any JSON value), shared with the other decodes of this very text."""
        kept = self._values.get(key)
        if kept is not None and kept[0] is text:
            return kept[1]
        value = codec.loads(text)
        self._values.put(key, (text, value), len(text))
        return value
