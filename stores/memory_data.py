"""What one memory backend holds, and the change-set steps its state and task stores share under its lock.

Values are stored as JSON text and decoded on every read, so no caller can mutate stored state by reference.
One :class:`threading.RLock` guards everything (gunicorn's gthread workers are threads); a
:class:`threading.Condition` on that lock wakes event-log readers.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from stores.changes import ChangeSet, Key, Quota, merge_quotas
from stores.errors import ConflictError, QuotaExceeded
from stores.records import encode


class MemoryData:
    """Everything one memory backend holds; shared by its state store and every task store it hands out."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.documents: dict[str, dict[Key, str]] = {}
        self.versions: dict[str, dict[Key, int]] = {}
        self.counters: dict[str, dict[str, int]] = {}
        # partition (tenant) → (scope, id) → memory_tasks.Entry: capacity and eviction are per partition
        self.tasks: dict[str, dict[tuple[str, str], Any]] = {}
        self.events: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.next_sequence: dict[str, int] = {}  # per partition, like the Redis backend's stats hash
        self.next_task_version: dict[str, int] = {}  # per partition: a task version is never reused
        self.paused: dict[tuple[str, str], float] = {}  # (scope, id) → last update, of every paused task
        self.scopes: dict[str, float] = {}  # scope registry (stores/scopes.py): partition → lease


@dataclass(frozen=True, slots=True)
class PreparedChanges:
    """A change set encoded outside the lock (a value that is not JSON fails without touching anything)."""

    scope: str
    changes: ChangeSet
    puts: dict[Key, str]
    quotas: list[Quota]


def prepare_changes(scope: str, changes: ChangeSet) -> PreparedChanges:
    puts = {key: encode(value) for key, value in changes.put.items()}
    return PreparedChanges(scope, changes, puts, merge_quotas(changes.quotas))


def check_changes(data: MemoryData, prepared: PreparedChanges) -> None:
    """Raise what the commit would refuse (versions first, then quotas); writes nothing. Under the lock."""
    versions = data.versions.get(prepared.scope, {})
    counters = data.counters.get(prepared.scope, {})
    for key, expected in prepared.changes.expect.items():
        if versions.get(key, 0) != expected:
            raise ConflictError(f"{key[0]}/{key[1]} changed since it was read")
    for quota in prepared.quotas:
        if quota.delta > 0 and counters.get(quota.name, 0) + quota.delta > quota.limit:
            raise QuotaExceeded(quota.name, quota.limit)


def apply_changes(data: MemoryData, prepared: PreparedChanges) -> None:
    """Write a checked change set. Under the lock, right after :func:`check_changes`."""
    docs = data.documents.setdefault(prepared.scope, {})
    versions = data.versions.setdefault(prepared.scope, {})
    counters = data.counters.setdefault(prepared.scope, {})
    for key, text in prepared.puts.items():
        docs[key] = text
        versions[key] = versions.get(key, 0) + 1
    for key in prepared.changes.delete:
        if key not in prepared.puts:
            docs.pop(key, None)
            versions.pop(key, None)
    for quota in prepared.quotas:
        counters[quota.name] = max(0, counters.get(quota.name, 0) + quota.delta)
