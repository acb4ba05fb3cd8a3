"""A process-local read cache in front of any state store, for kinds of documents that (almost) never change.

On a network store the read before a commit is half of a request's round trips, and most of what is read —
content-addressed artifacts, execution records — is the same every time. :class:`CachingStateStore` answers
such reads from memory, but never *trusts* them: a cached value comes back as ``Versioned(…, confirmed=False)``
and the reader must confirm its version in a commit (an expectation, as for every read). The runtime does
that in the commit it makes anyway, so a hit saves a round trip and a stale entry costs one conflict, after
which the entry is dropped and the request recomputed on a fresh read. Correctness never depends on the cache.

Entries are stored as JSON text and decoded on every hit, so no caller can mutate another's value; the cache
is bounded by entries and bytes (least recently used first out, :mod:`stores.bounded_lru`) and safe across
threads. A caller that only looks (:meth:`StateStore.read_shared`: ``run`` reading its artifact) gets a hit's
value decoded once per entry and shared (:mod:`stores.shared_reads`): the decode of a 4 KiB artifact was
a tenth of a ``run``'s CPU in this process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from stores import codec
from stores.base import StateStore, TaskWrite, Versioned
from stores.bounded_lru import BoundedLru
from stores.changes import ChangeSet, Key
from stores.errors import ConflictError
from stores.shared_reads import SharedDecodes

_Entry = tuple[str, int]  # JSON text, version


class CachingStateStore(StateStore):
    """``inner`` with reads of ``kinds`` cached; everything else passes through unchanged."""

    def __init__(
        self,
        inner: StateStore,
        kinds: Iterable[str],
        *,
        max_entries: int = 4096,
        max_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        self.inner = inner
        self.kinds = frozenset(kinds)
        self._entries: BoundedLru[tuple[str, Key], _Entry] = BoundedLru(max_entries, max_bytes)
        self._lock = threading.Lock()  # the counters'
        self._shared: SharedDecodes[tuple[str, Key]] = SharedDecodes()
        self.hits = 0
        self.misses = 0

    @property
    def max_entries(self) -> int:
        return self._entries.max_entries

    @property
    def max_bytes(self) -> int:
        return self._entries.max_bytes

    @property
    def origin(self) -> StateStore:
        return self.inner.origin

    def __len__(self) -> int:
        return len(self._entries)

    def read(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        return self._read(scope, keys, shared=False)

    def read_shared(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        return self._read(scope, keys, shared=True)

    def _read(self, scope: str, keys: Iterable[Key], *, shared: bool) -> dict[Key, Versioned]:
        wanted = list(dict.fromkeys(keys))
        cached: dict[Key, _Entry] = {}
        for key in wanted:
            entry = self._entries.get((scope, key)) if key[0] in self.kinds else None
            if entry is not None:
                cached[key] = entry
        with self._lock:
            self.hits += len(cached)
            self.misses += sum(1 for key in wanted if key[0] in self.kinds) - len(cached)
        missing = [key for key in wanted if key not in cached]
        fresh = self.inner.read(scope, missing) if missing else {}
        for key, versioned in fresh.items():
            if key[0] in self.kinds and versioned.value is not None:
                self._remember(scope, key, codec.dumps(versioned.value), versioned.version)
        out: dict[Key, Versioned] = {}
        for key in wanted:
            if key in cached:
                text, version = cached[key]
                value = self._shared.decode((scope, key), text) if shared else codec.loads(text)
                out[key] = Versioned(value, version, confirmed=False)
            else:
                out[key] = fresh[key]
        return out

    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        return self.inner.counters(scope, names)

    def now(self) -> float:
        return self.inner.now()

    def commit(
        self,
        scope: str,
        changes: ChangeSet,
        *,
        task: TaskWrite | None = None,
        versions: dict[Key, int] | None = None,
    ) -> int | None:
        written: dict[Key, int] = {}
        try:
            version = self.inner.commit(scope, changes, task=task, versions=written)
        except ConflictError:
            # Something read is stale; which one the store does not say, so forget every cached one.
            self._forget(scope, changes.expect)
            raise
        # What was just written, at the version the store gave it, is what a read in this process would see
        # next, unless another process writes it first (then: one conflict). A version is never reused for a
        # key (StateStore), so a copy kept here can never match a later incarnation of its document.
        self._forget(scope, changes.delete)
        for key, value in changes.put.items():
            if key[0] in self.kinds and key in written:
                self._remember(scope, key, codec.dumps(value), written[key])
        if versions is not None:
            versions.update(written)
        return version

    def close(self) -> None:
        self.inner.close()

    def _remember(self, scope: str, key: Key, text: str, version: int) -> None:
        # Characters stand for bytes: the same for the ASCII JSON artifacts are, and cheaper to count.
        self._entries.put((scope, key), (text, version), len(text))

    def _forget(self, scope: str, keys: Iterable[Key]) -> None:
        for key in keys:
            self._entries.discard((scope, key))
