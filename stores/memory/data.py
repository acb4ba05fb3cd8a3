"""What one memory backend holds, and the change-set steps its state and task stores share under its lock.

Values are stored as JSON text and decoded on every read, so no caller can mutate stored state by reference.
One :class:`threading.RLock` guards everything (gunicorn's gthread workers are threads); a
:class:`threading.Condition` on that lock wakes event-log readers. Under gunicorn's gevent worker, which
monkey-patches ``threading`` before the app (and so this store) is created, both are gevent's: a reader
waiting for events yields to the other greenlets instead of blocking the process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from stores.changes import ChangeSet, Key, Lease, Quota, merge_quotas
from stores.errors import ConflictError, QuotaExceeded
from stores.memory.leases import ScopeLeases
from stores.memory.task_table import TaskTable
from stores.records import encode


class MemoryData:
    """Everything one memory backend holds; shared by its state store and every task store it hands out."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.documents: dict[str, dict[Key, str]] = {}
        self.versions: dict[str, dict[Key, int]] = {}
        self.counters: dict[str, dict[str, int]] = {}
        self.leases: dict[str, ScopeLeases] = {}
        # Per scope: the highest version any document that went away had; a new document starts above it.
        self.floors: dict[str, int] = {}
        # partition (tenant) → (scope, id) → memory_tasks.Entry: capacity and eviction are per partition
        self.tasks: dict[str, TaskTable] = {}
        self.events: dict[tuple[str, str], list[tuple[int, str]]] = {}
        self.next_sequence: dict[str, int] = {}  # per partition, like the Redis backend's stats hash
        self.next_task_version: dict[str, int] = {}  # per partition: a task version is never reused
        # partition → (scope, idempotency key) → (record JSON, expiry time): see stores.base.KeyClaim
        self.claims: dict[str, dict[tuple[str, str], tuple[str, float]]] = {}
        self.paused: dict[tuple[str, str], float] = {}  # (scope, id) → last update, of every paused task
        self.scopes: dict[str, float] = {}  # scope registry (stores/scopes.py): partition → lease

    def scope_leases(self, scope: str) -> ScopeLeases:
        leases = self.leases.get(scope)
        if leases is None:
            leases = self.leases[scope] = ScopeLeases()
        return leases

    def alive(self, scope: str, key: Key, now: float) -> bool:
        """Whether a document is stored and not lapsed. Under the lock."""
        docs = self.documents.get(scope, {})
        if key not in docs:
            return False
        leases = self.leases.get(scope)
        return leases is None or leases.alive(key, now, docs)


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


def sweep(data: MemoryData, scope: str, now: float) -> None:
    """Drop the scope's documents that lapsed by ``now``, with what they own, giving back what they held.
    Under the lock, first thing in every commit."""
    leases = data.leases.get(scope)
    if leases is None:
        return
    for key in leases.due(now):
        _lapse(data, scope, leases, key)


def _lapse(data: MemoryData, scope: str, leases: ScopeLeases, key: Key) -> None:
    counters = data.counters.setdefault(scope, {})
    for name, amount in leases.holds.get(key, {}).items():
        counters[name] = max(0, counters.get(name, 0) - amount)
    _drop(data, scope, key)
    owned = leases.dependents.pop(key, set())
    leases.clear(key)
    for dependent in sorted(owned):
        _lapse(data, scope, leases, dependent)


def _drop(data: MemoryData, scope: str, key: Key) -> None:
    """Remove a document and its version, keeping the scope's version floor above it."""
    data.documents.get(scope, {}).pop(key, None)
    version = data.versions.get(scope, {}).pop(key, None)
    if version is not None and version > data.floors.get(scope, 0):
        data.floors[scope] = version


def check_changes(data: MemoryData, prepared: PreparedChanges) -> None:
    """Raise what the commit would refuse (versions first, then quotas); writes nothing. Under the lock,
    after :func:`sweep`."""
    versions = data.versions.get(prepared.scope, {})
    counters = data.counters.get(prepared.scope, {})
    for key, expected in prepared.changes.expect.items():
        if versions.get(key, 0) != expected:
            raise ConflictError(f"{key[0]}/{key[1]} changed since it was read")
    for quota in prepared.quotas:
        if quota.delta > 0 and counters.get(quota.name, 0) + quota.delta > quota.limit:
            leases = data.leases.get(prepared.scope)
            frees_at = leases.frees_at(quota.name) if leases else None
            raise QuotaExceeded(quota.name, quota.limit, frees_at)


def apply_changes(data: MemoryData, prepared: PreparedChanges) -> dict[Key, int]:
    """Write a checked change set; returns the new versions of the put documents. Under the lock, right
    after :func:`check_changes`."""
    scope, changes = prepared.scope, prepared.changes
    docs = data.documents.setdefault(scope, {})
    versions = data.versions.setdefault(scope, {})
    counters = data.counters.setdefault(scope, {})
    leases = data.scope_leases(scope)
    written: dict[Key, int] = {}
    for key, text in prepared.puts.items():
        docs[key] = text
        written[key] = versions[key] = versions[key] + 1 if key in versions else data.floors.get(scope, 0) + 1
        leases.clear(key)
        _set_lease(leases, key, changes.leases.get(key))
    for key in changes.delete:
        if key not in prepared.puts:
            _drop(data, scope, key)
            owned = leases.dependents.pop(key, set())
            leases.clear(key)
            for dependent in sorted(owned):
                _lapse(data, scope, leases, dependent)
    for key, at in changes.extend.items():
        if key in docs:
            leases.extend(key, at)
    for quota in prepared.quotas:
        counters[quota.name] = max(0, counters.get(quota.name, 0) + quota.delta)
    return written


def _set_lease(leases: ScopeLeases, key: Key, lease: Lease | None) -> None:
    if lease is None:
        return
    if lease.expires_at is not None:
        leases.set_expiry(key, lease.expires_at)
    if lease.owner is not None:
        leases.set_owner(key, lease.owner)
    if lease.holds:
        leases.holds[key] = dict(lease.holds)


def drop_scope_documents(data: MemoryData, scope: str) -> None:
    """Forget every document, counter and lease of ``scope``, keeping its version floor above all of them
    (so no version is reused). Under the lock."""
    versions = data.versions.pop(scope, {})
    data.floors[scope] = max([data.floors.get(scope, 0), *versions.values()])
    data.documents.pop(scope, None)
    data.counters.pop(scope, None)
    data.leases.pop(scope, None)
