"""The memory backend's task store: bounded, with eviction, lazy paused-task expiry and an event log."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from stores.base import JSON, TaskEvent, TaskLimits, TaskPage, TaskQuery, TaskStore, Versioned
from stores.errors import TaskConflict, TaskStoreFull, TaskTooLarge
from stores.listing import CursorSigner, Row, select_page
from stores.memory import MemoryData
from stores.records import ACTIVE, PAUSED, TaskFacts, decode, encode, expected_version, task_facts

TaskRef = tuple[str, str]  # (scope, task id)


@dataclass(frozen=True, slots=True)
class Entry:
    text: str
    size: int
    sequence: int  # immutable admission sequence
    updated: float  # last update (store clock); polling never changes it
    facts: TaskFacts
    version: int  # from the store-wide counter; every save assigns a greater one


class MemoryTaskStore(TaskStore):
    def __init__(
        self,
        data: MemoryData,
        limits: TaskLimits,
        clock: Callable[[], float] | None,
        signer: CursorSigner,
    ) -> None:
        self._data = data
        self.limits = limits
        self._clock = clock or time.time
        self._signer = signer

    def _expire(self, now: float) -> None:
        """Drop paused tasks whose last update is at least the TTL old (called under the lock)."""
        tasks = self._data.tasks
        for ref in [r for r, e in tasks.items() if e.facts.retention == PAUSED and self._expired(e, now)]:
            self._remove(ref)

    def _expired(self, entry: Entry, now: float) -> bool:
        return now - entry.updated >= self.limits.paused_ttl_seconds

    def _remove(self, ref: TaskRef) -> None:
        self._data.tasks.pop(ref, None)
        self._data.events.pop(ref, None)

    def load_versioned(self, scope: str, task_id: str) -> Versioned:
        with self._data.lock:
            self._expire(self._clock())
            entry = self._data.tasks.get((scope, task_id))
            return Versioned(None, 0) if entry is None else Versioned(decode(entry.text), entry.version)

    def save(
        self, scope: str, task: JSON, events: Iterable[JSON] = (), *, expect_version: int | None = None
    ) -> int:
        expect_version = expected_version(expect_version)
        facts = task_facts(task)
        text = encode(task)
        size = len(text.encode())
        event_texts = [encode(event) for event in events]
        if size > self.limits.max_task_bytes:
            raise TaskTooLarge(
                f"task {facts.task_id} is {size} bytes; the limit is {self.limits.max_task_bytes}"
            )
        ref = (scope, facts.task_id)
        with self._data.lock:
            now = self._clock()
            self._expire(now)
            tasks = self._data.tasks
            previous = tasks.get(ref)
            if expect_version is not None:
                current = previous.version if previous else 0
                if current != expect_version:
                    raise TaskConflict(facts.task_id, expect_version, current)
            victims = self._plan_eviction(ref, size, previous)
            for victim in victims:
                self._remove(victim)
            if previous is None:
                self._data.next_sequence += 1
                self._data.events.pop(ref, None)
            sequence = previous.sequence if previous else self._data.next_sequence
            self._data.next_task_version += 1
            version = self._data.next_task_version
            tasks[ref] = Entry(text, size, sequence, now, facts, version)
            if event_texts:
                log = self._data.events.setdefault(ref, [])
                start = log[-1][0] if log else 0
                log.extend((start + i, t) for i, t in enumerate(event_texts, 1))
                del log[: max(0, len(log) - 1000)]
                self._data.changed.notify_all()
            return version

    def _plan_eviction(self, ref: TaskRef, size: int, previous: Entry | None) -> list[TaskRef]:
        """Victims that make the save fit, oldest last update first; raises (changing nothing) if none do."""
        tasks = self._data.tasks
        count = len(tasks) + (0 if previous else 1)
        total = sum(e.size for e in tasks.values()) - (previous.size if previous else 0) + size
        candidates = sorted(
            (e.updated, e.sequence, r) for r, e in tasks.items() if r != ref and e.facts.retention != ACTIVE
        )
        victims: list[TaskRef] = []
        for _, _, victim in candidates:
            if count <= self.limits.max_tasks and total <= self.limits.max_total_bytes:
                break
            victims.append(victim)
            count -= 1
            total -= tasks[victim].size
        if count > self.limits.max_tasks or total > self.limits.max_total_bytes:
            raise TaskStoreFull("no terminal or paused task can be evicted to make room")
        return victims

    def list(self, scope: str, query: TaskQuery) -> TaskPage:
        with self._data.lock:
            self._expire(self._clock())
            mine = {tid: e for (s, tid), e in self._data.tasks.items() if s == scope}
            rows = [
                Row(tid, e.facts.status_timestamp, e.sequence, e.facts.context_id, e.facts.state)
                for tid, e in mine.items()
            ]
            plan = select_page(rows, scope, query, self._signer)
            texts = [mine[tid].text for tid in plan.task_ids]
        return TaskPage([decode(t) for t in texts], plan.next_page_token, plan.total_size)

    def read_events(self, scope: str, task_id: str, after: str | None, timeout: float) -> list[TaskEvent]:
        position = _event_number(after)
        deadline = time.monotonic() + max(0.0, timeout)
        with self._data.changed:
            while True:
                log = self._data.events.get((scope, task_id), [])
                fresh = [(n, t) for n, t in log if n > position]
                if fresh:
                    return [TaskEvent(_event_id(n), decode(t)) for n, t in fresh]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._data.changed.wait(remaining)

    def last_event_id(self, scope: str, task_id: str) -> str | None:
        with self._data.lock:
            log = self._data.events.get((scope, task_id))
            return _event_id(log[-1][0]) if log else None


def _event_id(number: int) -> str:
    return f"{number}-0"  # shaped like a Redis stream id, so callers see one format


def _event_number(event_id: str | None) -> int:
    if event_id is None:
        return 0
    head = event_id.split("-", 1)[0]
    if not head.isdigit():
        raise ValueError(f"not an event id: {event_id!r}")
    return int(head)
