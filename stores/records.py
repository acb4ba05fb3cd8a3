"""How both backends encode values and classify tasks: compact JSON, and a task's listing/eviction facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stores import codec
from stores.base import JSON, PAUSED_STATES, TERMINAL_STATES


def encode(value: Any) -> str:
    """Compact JSON; the stored size of a task is the UTF-8 length of this text."""
    return codec.dumps(value)


def decode(text: str | bytes) -> Any:
    return codec.loads(text)


ACTIVE, TERMINAL, PAUSED = "active", "terminal", "paused"


@dataclass(frozen=True, slots=True)
class TaskFacts:
    """What a store needs to know about a task besides its body."""

    task_id: str
    state: str | None
    status_timestamp: str | None
    context_id: str | None

    @property
    def retention(self) -> str:
        """``terminal`` and ``paused`` tasks may be evicted; ``active`` (anything else) never is."""
        if self.state in TERMINAL_STATES:
            return TERMINAL
        if self.state in PAUSED_STATES:
            return PAUSED
        return ACTIVE

    def info(self) -> JSON:
        return {"ts": self.status_timestamp, "ctx": self.context_id, "state": self.state}


def task_facts(task: JSON) -> TaskFacts:
    task_id = task.get("id") if isinstance(task, dict) else None
    if not isinstance(task_id, str) or not task_id:
        raise ValueError("a task needs a non-empty string 'id'")
    status = task.get("status")
    status = status if isinstance(status, dict) else {}
    state, stamp, context = status.get("state"), status.get("timestamp"), task.get("contextId")
    return TaskFacts(
        task_id=task_id,
        state=state if isinstance(state, str) else None,
        status_timestamp=stamp if isinstance(stamp, str) else None,
        context_id=context if isinstance(context, str) else None,
    )


def expected_version(value: int | None) -> int | None:
    """Validate a ``save(expect_version=…)`` argument: ``None`` or a non-negative integer."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"expect_version must be None or a non-negative integer, got {value!r}")
    return value
