"""The validating task state machine: every state a client sees for one task, on a stream or between polls,
must follow from the one before.

A2A 1.0 has no formal table; this one is the lifecycle the protocol describes. A task starts anywhere (SUBMITTED
may be skipped, REJECTED may come first); SUBMITTED moves on; WORKING moves on but never back to SUBMITTED; an
interrupted task (INPUT_REQUIRED, AUTH_REQUIRED) resumes or ends; a terminal task (COMPLETED, FAILED, CANCELED,
REJECTED) never changes again — seeing its own state repeated (a final snapshot sent twice) is fine, any other
state after it is an illegal transition. UNSPECIFIED carries no information and is skipped.
"""

from __future__ import annotations

from quineling.client.errors import ProtocolError
from quineling.client.models import INTERRUPTED, TERMINAL, TaskState

_ONWARD = frozenset({TaskState.WORKING, *INTERRUPTED, *TERMINAL})
LEGAL: dict[TaskState, frozenset[TaskState]] = {
    TaskState.SUBMITTED: frozenset({TaskState.SUBMITTED, *_ONWARD}),
    TaskState.WORKING: _ONWARD,
    # A follow-up message may put an interrupted task back in the queue before work resumes.
    TaskState.INPUT_REQUIRED: frozenset({TaskState.SUBMITTED, *_ONWARD}),
    TaskState.AUTH_REQUIRED: frozenset({TaskState.SUBMITTED, *_ONWARD}),
    **{state: frozenset({state}) for state in TERMINAL},
}


class TaskStateMachine:
    """Tracks one task's state; :meth:`advance` raises :class:`ProtocolError` naming both states when the
    agent reports an illegal transition."""

    def __init__(self, task_id: str = "", state: TaskState | None = None) -> None:
        self.task_id = task_id
        self.state = state

    def advance(self, new: TaskState) -> TaskState | None:
        if new is TaskState.UNSPECIFIED:
            return self.state
        old = self.state
        if old is not None and new not in LEGAL[old]:
            which = f"task {self.task_id}" if self.task_id else "the task"
            raise ProtocolError(
                f"illegal task state transition for {which}: {old.value} -> {new.value}",
                hint="the agent reported a state that cannot follow the previous one (a terminal task never "
                "changes); this is a bug in the agent",
            )
        self.state = new
        return new
