"""State the client shares between processes and hosts — circuit breakers, the known-agents registry — kept as
documents of the project's state store (:mod:`stores`): memory (this process only) or Redis (every worker and
host using the same URL). Updates are optimistic: read, compute, commit expecting the version read, repeat on a
conflict, so concurrent writers never lose each other's changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from stores import ChangeSet, ConflictError, Key, StateStore, backend_from_url

SCOPE = "quineling-client"
JSONDict = dict[str, Any]


class SharedState:
    def __init__(self, store: StateStore, scope: str = SCOPE) -> None:
        self.store = store
        self.scope = scope

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SharedState:
        """``memory://`` or ``redis://host:port/db`` (any URL :func:`stores.backend_from_url` takes)."""
        return cls(backend_from_url(url, **options).state_store())

    def get(self, key: Key) -> JSONDict | None:
        return self.store.read(self.scope, [key])[key].value

    def get_many(self, keys: list[Key]) -> dict[Key, JSONDict | None]:
        found = self.store.read(self.scope, keys)
        return {key: found[key].value for key in keys}

    def update(
        self, key: Key, change: Callable[[JSONDict | None], JSONDict | None], attempts: int = 16
    ) -> JSONDict | None:
        """Apply ``change`` (current value → new value, ``None`` deletes) atomically; returns the new value.
        ``change`` may run more than once (after a conflict) and must not have side effects."""
        for _ in range(attempts):
            current = self.store.read(self.scope, [key])[key]
            new = change(current.value)
            if new == current.value:
                return new
            changes = (ChangeSet(expect={key: current.version}, delete=frozenset({key})) if new is None
                       else ChangeSet(expect={key: current.version}, put={key: new}))  # fmt: skip
            try:
                self.store.commit(self.scope, changes)
            except ConflictError:
                continue
            return new
        raise ConflictError(f"{key} kept changing under {attempts} attempts to update it")


_local: SharedState | None = None
_local_lock = threading.Lock()


def local_state() -> SharedState:
    """This process's own state (an embedded memory store), used when no store URL is given."""
    global _local
    with _local_lock:
        if _local is None:
            _local = SharedState.from_url("memory://")
        return _local
