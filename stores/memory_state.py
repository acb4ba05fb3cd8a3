"""The memory backend's state store: versioned documents per scope, committed under the backend's lock."""

from __future__ import annotations

from collections.abc import Iterable

from stores.base import StateStore, Versioned
from stores.changes import ChangeSet, Key
from stores.memory_data import MemoryData, apply_changes, check_changes, prepare_changes
from stores.records import decode


class MemoryStateStore(StateStore):
    def __init__(self, data: MemoryData) -> None:
        self._data = data

    @property
    def data(self) -> MemoryData:
        return self._data

    def read(self, scope: str, keys: Iterable[Key]) -> dict[Key, Versioned]:
        with self._data.lock:
            docs = self._data.documents.get(scope, {})
            versions = self._data.versions.get(scope, {})
            result: dict[Key, Versioned] = {}
            for key in keys:
                text = docs.get(key)
                result[key] = Versioned(None if text is None else decode(text), versions.get(key, 0))
            return result

    def counters(self, scope: str, names: Iterable[str]) -> dict[str, int]:
        with self._data.lock:
            counters = self._data.counters.get(scope, {})
            return {name: counters.get(name, 0) for name in names}

    @property
    def location(self) -> object:
        return self._data

    def _commit_changes(self, scope: str, changes: ChangeSet) -> None:
        prepared = prepare_changes(scope, changes)
        with self._data.lock:
            check_changes(self._data, prepared)
            apply_changes(self._data, prepared)
