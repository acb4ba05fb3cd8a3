"""The in-process backend (``memory://``): both stores in this process's memory, for a single process."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from stores.base import Backend, TaskDescriber, TaskLimits, TaskStore
from stores.listing import CursorSigner
from stores.memory_data import MemoryData
from stores.memory_scopes import MemoryScopeRegistry
from stores.memory_state import MemoryStateStore
from stores.memory_tasks import MemoryTaskStore
from stores.scopes import Clock, ScopeLimits


class MemoryBackend(Backend):
    """Both stores in this process's memory. Cursors are signed with a secret random per instance."""

    scheme = ("memory",)
    local = True

    def __init__(self, url: str = "memory://", **_options: Any) -> None:
        self.url = url
        self._data = MemoryData()
        self._state = MemoryStateStore(self._data)
        self._signer = CursorSigner(secrets.token_hex(8), secrets.token_bytes(32))

    def state_store(self) -> MemoryStateStore:
        return self._state

    def task_store(
        self,
        limits: TaskLimits | None = None,
        *,
        describe: TaskDescriber,
        clock: Callable[[], float] | None = None,
    ) -> TaskStore:
        return MemoryTaskStore(self._data, limits or TaskLimits(), describe, clock, self._signer)

    def scope_registry(
        self, limits: ScopeLimits | None = None, *, clock: Clock | None = None
    ) -> MemoryScopeRegistry:
        return MemoryScopeRegistry(self._data, limits or ScopeLimits(), clock)

    def ping(self) -> None:
        """Nothing to reach: the data is in this process."""
