"""The memory backend's task store: bounded per partition (tenant), with eviction, lazy paused-task expiry and
an event log. A save is split into a check (:meth:`MemoryTaskStore._plan`, raises and writes nothing) and an
apply, so :meth:`MemoryTaskStore.save_with_changes` can check a change set and a task save together under the
one lock before writing either. What a task is filed by comes from the store's describer."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from stores.base import (
    JSON,
    KeyClaim,
    Lifecycle,
    TaskDescriber,
    TaskEvent,
    TaskEvents,
    TaskFacts,
    TaskLimits,
    TaskPage,
    TaskQuery,
    TaskStore,
    TaskWrite,
    Versioned,
    task_partition,
)
from stores.changes import ChangeSet, Key
from stores.errors import ClaimsFull, KeyClaimed, TaskConflict, TaskStoreFull, TaskTooLarge
from stores.listing import CursorSigner, Row, select_page
from stores.memory.data import MemoryData, apply_changes, check_changes, prepare_changes, sweep
from stores.memory.task_table import TaskTable
from stores.records import decode, encode, expected_version, first_event_number
from stores.shared_reads import SharedValues

TaskRef = tuple[str, str]  # (scope, task id)


@dataclass(frozen=True, slots=True)
class Entry:
    text: str
    size: int
    sequence: int  # immutable admission sequence
    updated: float  # last update (store clock); polling never changes it
    facts: TaskFacts
    version: int  # from the partition's counter; every save assigns a greater one


@dataclass(frozen=True, slots=True)
class PreparedSave:
    """A task save encoded outside the lock."""

    ref: TaskRef
    partition: str
    text: str
    size: int
    facts: TaskFacts
    events: list[str]
    expect_version: int | None
    claim: KeyClaim | None = None
    claim_text: str = ""


@dataclass(frozen=True, slots=True)
class SavePlan:
    """A checked save: what it replaces and whom it evicts."""

    previous: Entry | None
    victims: list[TaskRef]


class MemoryTaskStore(TaskStore):
    def __init__(
        self,
        data: MemoryData,
        limits: TaskLimits,
        describe: TaskDescriber,
        clock: Callable[[], float] | None,
        signer: CursorSigner,
    ) -> None:
        self._data = data
        self.limits = limits
        self.describe = describe
        self._clock = clock or time.time
        self._signer = signer
        self._shared: SharedValues[TaskRef] = SharedValues()

    @property
    def location(self) -> object:
        return self._data

    def _expire(self, now: float) -> None:
        """Drop paused tasks whose last update is at least the TTL old (called under the lock). Only the
        paused index is scanned: every call does this, and most tasks are not paused."""
        ttl = self.limits.paused_ttl_seconds
        for ref in [r for r, updated in self._data.paused.items() if now - updated >= ttl]:
            self._remove(ref)

    def _remove(self, ref: TaskRef) -> None:
        tasks = self._data.tasks.get(task_partition(ref[0]))
        if tasks is not None:
            tasks.pop(ref, None)
        self._data.events.pop(ref, None)
        self._data.paused.pop(ref, None)

    def _entry(self, ref: TaskRef) -> Entry | None:
        tasks = self._data.tasks.get(task_partition(ref[0]))
        entry: Entry | None = tasks.get(ref) if tasks is not None else None
        return entry

    def load_versioned(self, scope: str, task_id: str) -> Versioned:
        with self._data.lock:
            self._expire(self._clock())
            entry = self._entry((scope, task_id))
            return Versioned(None, 0) if entry is None else Versioned(decode(entry.text), entry.version)

    def load_shared(self, scope: str, task_id: str) -> Versioned:
        ref = (scope, task_id)
        with self._data.lock:
            self._expire(self._clock())
            entry = self._entry(ref)
            if entry is None:
                self._shared.discard(ref)
                return Versioned(None, 0)
            kept = self._shared.get(ref)
            if kept is not None and kept[0] == entry.version:
                return Versioned(kept[1], entry.version)
            value = decode(entry.text)
            self._shared.put(ref, (entry.version, value), entry.size)
            return Versioned(value, entry.version)

    def save(
        self,
        scope: str,
        task: JSON,
        events: Iterable[JSON] = (),
        *,
        expect_version: int | None = None,
        claim: KeyClaim | None = None,
    ) -> int:
        prepared = self._prepare(scope, task, events, expect_version, claim)
        self._refuse_too_large(prepared)  # before taking the lock: it depends on nothing stored
        with self._data.lock:
            now = self._clock()
            self._expire(now)
            return self._apply(prepared, self._plan(prepared), now)

    def save_with_changes(
        self, scope: str, changes: ChangeSet, write: TaskWrite, now: float
    ) -> tuple[int, dict[Key, int]]:
        """Check the change set, then the task save, and only then write both (see ``StateStore.commit``)."""
        prepared = self._prepare(write.scope, write.task, write.events, write.expect_version, write.claim)
        staged = prepare_changes(scope, changes)
        with self._data.lock:
            task_now = self._clock()
            self._expire(task_now)
            sweep(self._data, scope, now)
            check_changes(self._data, staged)
            self._refuse_too_large(prepared)
            plan = self._plan(prepared)
            written = apply_changes(self._data, staged)
            return self._apply(prepared, plan, task_now), written

    def _prepare(
        self,
        scope: str,
        task: JSON,
        events: Iterable[JSON],
        expect_version: int | None,
        claim: KeyClaim | None = None,
    ) -> PreparedSave:
        expect_version = expected_version(expect_version)
        facts = self.describe(task)
        text = encode(task)
        encoded = [encode(event) for event in events]
        first_event_number(facts.generation, len(encoded))  # refuses an impossible generation early
        return PreparedSave(
            (scope, facts.task_id),
            task_partition(scope),
            text,
            len(text.encode()),
            facts,
            encoded,
            expect_version,
            claim,
            "" if claim is None else encode(claim.record),
        )

    def _refuse_too_large(self, prepared: PreparedSave) -> None:
        if prepared.size > self.limits.max_task_bytes:
            raise TaskTooLarge(
                f"task {prepared.facts.task_id} is {prepared.size} bytes; "
                f"the limit is {self.limits.max_task_bytes}"
            )

    def _plan(self, prepared: PreparedSave) -> SavePlan:
        """Check the version and capacity; raises (changing nothing) when the save cannot happen."""
        previous = self._entry(prepared.ref)
        if prepared.expect_version is not None:
            current = previous.version if previous else 0
            if current != prepared.expect_version:
                raise TaskConflict(prepared.facts.task_id, prepared.expect_version, current)
        if prepared.claim is not None:
            self._check_claim(prepared.partition, (prepared.ref[0], prepared.claim.key))
        return SavePlan(previous, self._plan_eviction(prepared, previous))

    def _live_claims(self, partition: str) -> dict[TaskRef, tuple[str, float]]:
        """The partition's claims with the lapsed ones dropped (under the lock)."""
        now = self._clock()
        claims = self._data.claims.setdefault(partition, {})
        for ref in [r for r, (_, expires) in claims.items() if expires <= now]:
            del claims[ref]
        return claims

    def _check_claim(self, partition: str, ref: TaskRef) -> None:
        claims = self._live_claims(partition)
        held = claims.get(ref)
        if held is not None:
            raise KeyClaimed(ref[1], decode(held[0]))
        if len(claims) >= self.limits.max_claims:
            raise ClaimsFull(
                f"{len(claims)} idempotency keys are live; the limit is {self.limits.max_claims}"
            )

    def load_claim(self, scope: str, key: str) -> JSON | None:
        with self._data.lock:
            held = self._live_claims(task_partition(scope)).get((scope, key))
            return None if held is None else decode(held[0])

    def _apply(self, prepared: PreparedSave, plan: SavePlan, now: float) -> int:
        """Write a planned save: evict, store, append events. Under the lock, right after :meth:`_plan`."""
        data, ref, partition = self._data, prepared.ref, prepared.partition
        for victim in plan.victims:
            self._remove(victim)
        previous = plan.previous
        if previous is None:
            data.next_sequence[partition] = data.next_sequence.get(partition, 0) + 1
            data.events.pop(ref, None)
        sequence = previous.sequence if previous else data.next_sequence[partition]
        version = data.next_task_version[partition] = data.next_task_version.get(partition, 0) + 1
        tasks = data.tasks.get(partition)
        if tasks is None:
            tasks = data.tasks[partition] = TaskTable(_evictable)
        tasks[ref] = Entry(prepared.text, prepared.size, sequence, now, prepared.facts, version)
        if prepared.facts.lifecycle is Lifecycle.PAUSED:
            data.paused[ref] = now
        else:
            data.paused.pop(ref, None)
        if prepared.claim is not None:
            claim_ref = (ref[0], prepared.claim.key)
            data.claims.setdefault(partition, {})[claim_ref] = (
                prepared.claim_text,
                now + prepared.claim.ttl_seconds,
            )
        if prepared.events:
            log = data.events.setdefault(ref, [])
            newest = log[-1][0] if log else 0
            first = first_event_number(prepared.facts.generation, len(prepared.events)) or newest + 1
            if first <= newest:
                log.clear()  # a log of an earlier numbering: it restarts (see TaskStore, "Event log")
            log.extend((first + i, t) for i, t in enumerate(prepared.events))
            del log[: max(0, len(log) - 1000)]
            data.changed.notify_all()
        return version

    def _plan_eviction(self, prepared: PreparedSave, previous: Entry | None) -> list[TaskRef]:
        """Victims of the partition that make the save fit, oldest last update first; raises (changing
        nothing) if none do. O(log n) per victim (stores/memory/task_table.py)."""
        tasks = self._data.tasks.get(prepared.partition)
        if tasks is None:
            return []
        count = len(tasks) + (0 if previous else 1)
        total = tasks.total_bytes - (previous.size if previous else 0) + prepared.size
        limits = self.limits

        def fits(evicted: int, evicted_bytes: int) -> bool:
            return count - evicted <= limits.max_tasks and total - evicted_bytes <= limits.max_total_bytes

        if fits(0, 0):
            return []
        victims = tasks.victims(prepared.ref, fits)
        if victims is None:
            raise TaskStoreFull("no terminal or paused task can be evicted to make room")
        return victims

    def list(self, scope: str, query: TaskQuery) -> TaskPage:
        with self._data.lock:
            self._expire(self._clock())
            tasks = self._data.tasks.get(task_partition(scope))
            mine: dict[str, Entry] = {tid: e for (s, tid), e in (tasks or {}).items() if s == scope}
            rows = [
                Row(tid, e.facts.status_time, e.sequence, e.facts.context_id, e.facts.state)
                for tid, e in mine.items()
            ]
            plan = select_page(rows, scope, query, self._signer)
            texts = [mine[tid].text for tid in plan.task_ids]
        return TaskPage([decode(t) for t in texts], plan.next_page_token, plan.total_size)

    def read_events(self, scope: str, task_id: str, after: str | None, timeout: float) -> TaskEvents:
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


def _evictable(entry: Entry) -> bool:
    return entry.facts.lifecycle is not Lifecycle.ACTIVE


def _event_id(number: int) -> str:
    return f"{number}-0"  # shaped like a Redis stream id, so callers see one format


def _event_number(event_id: str | None) -> int:
    if event_id is None:
        return 0
    head = event_id.split("-", 1)[0]
    if not head.isdigit():
        raise ValueError(f"not an event id: {event_id!r}")
    return int(head)
