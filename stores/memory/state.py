"""The memory backend's state store: versioned documents per scope, committed under the backend's lock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from stores.base import StateStore, Versioned
from stores.changes import ChangeSet, Key
from stores.memory.data import MemoryData, apply_changes, check_changes, prepare_changes, sweep
from stores.records import decode
from stores.shared_reads import SharedDecodes


class MemoryStateStore(StateStore):
    def __init__(self, data: MemoryData, clock: Callable[[], float] | None = None) -> None:
        self._data = data
        self._clock = clock or time.time
        self._shared: SharedDecodes[tuple[str, Key]] = SharedDecodes()  # the values read_shared hands out

    @property
    def data(self) -> MemoryData:
        return self._data

    def now(self) -> float:
        return float(self._clock())

    def read(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        return self._read(scope, keys, shared=False)

    def read_shared(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        return self._read(scope, keys, shared=True)

    def _read(self, scope: str, keys: Iterable[Key], *, shared: bool) -> dict[Key, Versioned]:
        now = self.now()
        with self._data.lock:
            docs = self._data.documents.get(scope, {})
            versions = self._data.versions.get(scope, {})
            result: dict[Key, Versioned] = {}
            for key in keys:
                text = docs.get(key)
                if text is None or not self._data.alive(scope, key, now):
                    result[key] = Versioned(None, 0)
                    continue
                value = self._shared.decode((scope, key), text) if shared else decode(text)
                result[key] = Versioned(value, versions.get(key, 0))
            return result

    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        with self._data.lock:
            counters = self._data.counters.get(scope, {})
            return {name: counters.get(name, 0) for name in names}

    @property
    def location(self) -> object:
        return self._data

    def _commit_changes(self, scope: str, changes: ChangeSet) -> dict[Key, int]:
        prepared = prepare_changes(scope, changes)
        now = self.now()
        with self._data.lock:
            sweep(self._data, scope, now)
            check_changes(self._data, prepared)
            return apply_changes(self._data, prepared)
