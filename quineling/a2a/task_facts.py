"""What the task store files an A2A task by: the protocol supplies it, so no storage backend reads the wire
format (``stores.base.TaskFacts``)."""

from __future__ import annotations

from typing import Any

from quineling.a2a import wire
from quineling.a2a.generations import generation_of
from quineling.protocol.states import INTERRUPTED_STATES
from stores.base import Lifecycle, TaskFacts

# A paused task waits for its caller: evictable, and dropped after the paused-task lifetime.
PAUSED = INTERRUPTED_STATES


def lifecycle_of(state: str | None) -> Lifecycle:
    if state in wire.TERMINAL:
        return Lifecycle.TERMINAL
    if state in PAUSED:
        return Lifecycle.PAUSED
    return Lifecycle.ACTIVE


def describe_task(task: dict[str, Any]) -> TaskFacts:
    """The facts of a 1.0 task; :class:`ValueError` for a body without a non-empty string ``id``."""
    task_id = task.get("id") if isinstance(task, dict) else None
    if not isinstance(task_id, str) or not task_id:
        raise ValueError("a task needs a non-empty string 'id'")
    status = task.get("status")
    status = status if isinstance(status, dict) else {}
    state, stamp, context = status.get("state"), status.get("timestamp"), task.get("contextId")
    state = state if isinstance(state, str) else None
    return TaskFacts(
        task_id=task_id,
        lifecycle=lifecycle_of(state),
        state=state,
        status_time=stamp if isinstance(stamp, str) else None,
        context_id=context if isinstance(context, str) else None,
        generation=generation_of(task) or None,  # numbers the save's events (stores.base.TaskStore)
    )
