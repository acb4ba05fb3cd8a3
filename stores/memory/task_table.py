"""One partition's tasks in the memory backend, with what eviction needs kept up to date on every write.

At capacity every save evicts, and finding the victim used to take a scan of every retained task (plus a sum
of their sizes on every save): a fifth of a SendMessage on the memory store. The table keeps the partition's
total size as it changes, and a heap of its evictable (terminal or paused) tasks ordered as eviction takes
them — oldest last update first, then admission order — so a save finds its victims in O(log n).

The heap is lazy: a save or removal does not search it; an entry whose task was removed or saved again since
(a different version) is stale and dropped when it reaches the top, and the heap is rebuilt when stale entries
outnumber the live ones, so it stays within a constant factor of the table.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any, Protocol

TaskRef = tuple[str, str]  # (scope, task id)
_HeapItem = tuple[float, int, TaskRef, int]  # (updated, sequence, ref, version)
_MISSING: Any = object()


class _Entry(Protocol):  # what the table reads of memory_tasks.Entry
    @property
    def size(self) -> int: ...
    @property
    def sequence(self) -> int: ...
    @property
    def updated(self) -> float: ...
    @property
    def version(self) -> int: ...


class TaskTable(dict[TaskRef, Any]):
    """``ref → Entry``; write it only with ``table[ref] = entry`` and ``table.pop(ref)`` (the other dict
    mutators are refused, so the totals cannot drift). ``evictable(entry)`` says whether an entry may be
    evicted (its lifecycle is not active)."""

    def __init__(self, evictable: Callable[[Any], bool]) -> None:
        super().__init__()
        self.total_bytes = 0
        self._evictable = evictable
        self._heap: list[_HeapItem] = []

    def __setitem__(self, ref: TaskRef, entry: _Entry) -> None:
        old = super().get(ref)
        if old is not None:
            self.total_bytes -= old.size
        super().__setitem__(ref, entry)
        self.total_bytes += entry.size
        if self._evictable(entry):
            heapq.heappush(self._heap, (entry.updated, entry.sequence, ref, entry.version))
            if len(self._heap) > 2 * len(self) + 16:
                self._rebuild()

    def pop(self, ref: TaskRef, default: Any = _MISSING) -> Any:
        entry = super().pop(ref, _MISSING)
        if entry is _MISSING:
            if default is _MISSING:
                raise KeyError(ref)
            return default
        self.total_bytes -= entry.size
        return entry

    def __delitem__(self, ref: TaskRef) -> None:
        self.pop(ref)

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a TaskTable is written with table[ref] = entry and table.pop(ref) only")

    setdefault = update = popitem = clear = __ior__ = _refuse

    def victims(self, spare: TaskRef, enough: Callable[[int, int], bool]) -> list[TaskRef] | None:
        """The evictable tasks other than ``spare``, in eviction order, up to the first prefix after which
        ``enough(evicted count, evicted bytes)`` holds; ``None`` if all of them are not enough. Changes
        nothing but the dropping of stale heap entries."""
        taken: list[_HeapItem] = []
        victims: list[TaskRef] = []
        count = size = 0
        heap = self._heap
        while not enough(count, size) and heap:
            item = heapq.heappop(heap)
            entry = super().get(item[2])
            if entry is None or entry.version != item[3]:
                continue  # stale: removed, or saved again (its newer entry is in the heap)
            taken.append(item)
            if item[2] == spare:
                continue
            victims.append(item[2])
            count += 1
            size += entry.size
        for item in taken:  # the plan may still be refused; the apply drops them when it evicts
            heapq.heappush(heap, item)
        return victims if enough(count, size) else None

    def _rebuild(self) -> None:
        self._heap = [
            (e.updated, e.sequence, ref, e.version) for ref, e in self.items() if self._evictable(e)
        ]
        heapq.heapify(self._heap)
