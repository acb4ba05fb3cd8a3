"""The memory backend's scope registry (:mod:`stores.scopes`): leases in :class:`MemoryData`, admitted under
the backend's lock, so a reclaim and the deletion of what the reclaimed scope held are one step."""

from __future__ import annotations

from stores.base import task_partition
from stores.memory.data import MemoryData
from stores.scopes import Admission, Clock, ScopeLimits, ScopeRegistry


def drop_partition(data: MemoryData, partition: str) -> None:
    """Delete everything a partition holds: its documents, counters, retention leases, tasks, event logs and
    sequences. Under the lock."""
    for table in (data.documents, data.versions, data.counters, data.leases, data.floors, data.tasks):
        table.pop(partition, None)
    data.next_sequence.pop(partition, None)
    data.next_task_version.pop(partition, None)
    for refs in (data.events, data.paused):
        for ref in [ref for ref in refs if task_partition(ref[0]) == partition]:
            del refs[ref]


class MemoryScopeRegistry(ScopeRegistry):
    def __init__(self, data: MemoryData, limits: ScopeLimits, clock: Clock | None) -> None:
        super().__init__(limits, clock)
        self._data = data

    def _admit(self, scope: str, now: float, victim: str) -> Admission:
        leases = self._data.scopes
        with self._data.lock:
            if scope in leases or len(leases) < self.limits.max_scopes:
                leases[scope] = now
                return Admission(True)
            lease = leases.get(victim)
            if victim and lease is not None and lease <= self._cutoff(now):
                drop_partition(self._data, victim)
                del leases[victim]
                leases[scope] = now
                return Admission(True, reclaimed=victim)
            oldest = min(leases, key=leases.__getitem__)
            return Admission(False, oldest, leases[oldest])

    def live(self) -> dict[str, float]:
        with self._data.lock:
            return dict(self._data.scopes)
