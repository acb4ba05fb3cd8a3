"""``TaskAccess``: how a request reads and writes its tasks in the task store.

Every change to a stored task is a conditional save (``expect_version`` = the version it was loaded at; a new
task expects 0), so two requests acting on one task can never silently overwrite each other
(docs/decisions/0008-concurrent-updates-to-one-task.md). :class:`TaskConflict` (and :class:`KeyClaimed`)
reach the caller, who decides; every other store failure becomes a protocol error here. A write stamps its
task and events with generations (:func:`stamped`), logs what may be read again (:func:`logged`), and reports
the states it moved the task through (``on_states``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from quineling.a2a import wire
from quineling.a2a.context import CallContext
from quineling.a2a.errors import TaskNotFoundError, UnavailableError, store_failure
from quineling.a2a.executor import Execution
from quineling.a2a.generations import stamp_event, with_generation
from quineling.a2a.idempotency import Claiming
from stores.base import TaskStore, Versioned
from stores.errors import KeyClaimed, ScopeLimitReached, StoreError, TaskConflict
from stores.jsontypes import JSON
from stores.scopes import ScopeRegistry

CONFLICT_ATTEMPTS = 3  # conditional saves per request before a task that keeps changing is given up on


class TaskAccess:
    def __init__(
        self,
        task_store: TaskStore,
        scopes: ScopeRegistry | None = None,
        on_states: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.task_store = task_store
        self.scopes = scopes  # bounds live scopes; every write admits its partition first
        # Hears the states a committed write moved a task through (the quineling_task_transitions metric).
        self.on_states = on_states

    def load(self, ctx: CallContext, task_id: str) -> JSON:
        """The task for a caller that only reads it (shared: never change it, :meth:`TaskStore.load_shared`)."""
        task = self.load_versioned(ctx, task_id, shared=True).value
        if task is None:
            raise task_not_found(task_id)
        return task

    def load_versioned(self, ctx: CallContext, task_id: str, *, shared: bool = False) -> Versioned:
        """The task and its version for a read-modify-write (``shared``: for a read only); ``Versioned(None,
        0)`` when it is not there."""
        load = self.task_store.load_shared if shared else self.task_store.load_versioned
        try:
            return load(ctx.scope, task_id)
        except StoreError as exc:
            raise store_failure(exc) from exc

    def admit(self, ctx: CallContext) -> None:
        """Before a write: the caller's partition is a live scope, or becomes one (stores/scopes.py)."""
        if self.scopes is None:
            return
        try:
            self.scopes.admit(ctx.partition)
        except ScopeLimitReached as full:
            seconds = max(1, math.ceil(full.retry_after))
            # Transient like a storage outage (it passes when a scope has been idle long enough): the same
            # retryable 503 answer, with the wait this refusal knows.
            raise UnavailableError(
                f"This service already holds the most principals and tenants it keeps at once ({full.limit}); "
                f"a new one can start when one has been idle long enough, in about {seconds} s. Retry later.",
                retry_after=seconds,
            ) from None
        except StoreError as exc:
            raise store_failure(exc) from None

    def load_claim(self, ctx: CallContext, key: str) -> object:
        try:
            return self.task_store.load_claim(ctx.scope, key)
        except StoreError as exc:
            raise store_failure(exc) from exc

    def save(
        self, ctx: CallContext, execution: Execution, *, expect_version: int, claiming: Claiming | None = None
    ) -> None:
        """Save conditionally. :class:`TaskConflict` (and :class:`KeyClaimed`) propagate (the caller decides);
        other failures become protocol errors."""
        self.admit(ctx)
        try:
            self.task_store.save(
                ctx.scope,
                execution.task,
                logged(execution, expect_version, streaming=True, keyed=claiming is not None),
                expect_version=expect_version,
                claim=None if claiming is None else claiming.claim(execution),
            )
        except (TaskConflict, KeyClaimed):
            raise
        except StoreError as exc:
            raise store_failure(exc) from exc
        self.committed(execution)

    def committed(self, execution: Execution) -> None:
        if self.on_states is not None:
            self.on_states(_states_entered(execution))


def task_not_found(task_id: str) -> TaskNotFoundError:
    # Unknown, evicted, expired or another scope's: all look the same (no existence leaks).
    return TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})


def _states_entered(execution: Execution) -> list[str]:
    """The states a committed execution moved its task through, in order: its events' snapshots and status
    updates, or the task's own state when it logged none."""
    states = [
        event[kind]["status"]["state"]
        for event in execution.events
        for kind in ("task", "statusUpdate")
        if kind in event
    ]
    return states or [execution.task["status"]["state"]]


def logged(execution: Execution, expect_version: int, *, streaming: bool, keyed: bool) -> tuple[JSON, ...]:
    """The events of a save that go into the task's event log. Every change is an event whose log number is its
    generation: a client whose streaming send was cut resumes from the log, a subscriber follows it, a
    long-poll waits on it, a keyed send's replay reads it (docs/decisions/0014-resumable-streams.md). One
    save is not logged: a new task's first, from a non-streaming send without an Idempotency-Key, that leaves
    the task terminal. No stream of it exists or can start (no event id was issued; a terminal task takes no
    new subscription), nothing follows or waits on a task that no longer changes, and no replay reads it; the
    log would only be stored, shipped to the store and evicted (a third of a Redis commit's bytes)."""
    settled = execution.task["status"]["state"] in wire.TERMINAL
    if expect_version == 0 and settled and not streaming and not keyed:
        return ()
    return tuple(execution.events)


def stamped(execution: Execution, generation: int) -> Execution:
    """``execution`` with generations: its events get ``generation + 1`` on, the task the last; a follow-up's
    opening snapshot shows the state of its first event. Copies; the executor's objects stay as they were."""
    events = [stamp_event(event, generation + i) for i, event in enumerate(execution.events, 1)]
    newest = generation + len(events)
    opening = execution.opening
    if opening is not None:
        opening = with_generation(opening, min(generation + 1, newest))
    return Execution(with_generation(execution.task, newest), events, opening)
