"""The in-process backend (``memory://``): both stores in this process's memory, for a single process.

Operators reach it only from inside the serving process: :meth:`MemoryBackend.usage` and
:meth:`MemoryBackend.reset` work as on Redis, but another process (``quineling store …``) cannot see this
memory, and restarting the server empties it (docs/decisions/0024-retention.md).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from stores.base import Backend, ScopeUsage, TaskDescriber, TaskLimits, TaskStore
from stores.listing import CursorSigner
from stores.memory.data import MemoryData, drop_scope_documents, sweep
from stores.memory.scopes import MemoryScopeRegistry
from stores.memory.state import MemoryStateStore
from stores.memory.tasks import MemoryTaskStore
from stores.rate_counters import MemoryRateCounter
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
        self._rate_counter: MemoryRateCounter | None = None  # made when asked for: it starts a timer thread

    def state_store(self, clock: Callable[[], float] | None = None) -> MemoryStateStore:
        return self._state if clock is None else MemoryStateStore(self._data, clock)

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

    def rate_counter(self) -> MemoryRateCounter:
        if self._rate_counter is None:
            self._rate_counter = MemoryRateCounter()
        return self._rate_counter

    def ping(self) -> None:
        """Nothing to reach: the data is in this process."""

    def scopes(self) -> list[str]:
        with self._data.lock:
            return sorted(self._data.scopes)

    def usage(self, scope: str, now: float | None = None) -> ScopeUsage:
        with self._data.lock:
            sweep(self._data, scope, time.time() if now is None else now)
            return self._usage(scope)

    def reset(self, scope: str) -> ScopeUsage:
        data = self._data
        with data.lock:
            held = self._usage(scope)
            drop_scope_documents(data, scope)
            data.claims.pop(scope, None)
            for ref in data.tasks.pop(scope, {}):
                data.events.pop(ref, None)
                data.paused.pop(ref, None)
            data.changed.notify_all()
            return held

    def _usage(self, scope: str) -> ScopeUsage:
        """What ``scope`` holds as it stands. Under the lock."""
        data = self._data
        docs = data.documents.get(scope, {})
        counters = {name: value for name, value in data.counters.get(scope, {}).items() if value}
        leases = data.leases.get(scope)
        frees_at = {}
        for name in counters:
            at = leases.frees_at(name) if leases else None
            if at is not None:
                frees_at[name] = at
        tasks = data.tasks.get(scope)
        return ScopeUsage(
            scope,
            counters,
            len(docs),
            sum(len(text.encode()) for text in docs.values()),
            len(tasks) if tasks else 0,
            tasks.total_bytes if tasks else 0,
            frees_at,
        )
