"""Task states and message roles of A2A 1.0: their wire names in proto-number order, and which states end a
task (terminal) or pause it for the caller (interrupted)."""

from __future__ import annotations

from enum import StrEnum


class TaskState(StrEnum):
    """The 1.0 task states, declared in proto-number order: a state's number is its index."""

    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    @property
    def short(self) -> str:
        """``completed``, ``input-required``, …: the lowercase name (the v0.3 one, but for UNSPECIFIED)."""
        return self.value.removeprefix("TASK_STATE_").lower().replace("_", "-")

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def interrupted(self) -> bool:
        return self in INTERRUPTED_STATES

    @classmethod
    def parse(cls, value: object) -> TaskState:
        """A 1.0 name, a v0.3 name (``input-required``) or a proto number; anything else is UNSPECIFIED."""
        if isinstance(value, int) and not isinstance(value, bool):
            return _BY_NUMBER[value] if 0 <= value < len(_BY_NUMBER) else cls.UNSPECIFIED
        if isinstance(value, str):
            name = value.strip().upper().replace("-", "_")
            try:
                return cls(name if name.startswith("TASK_STATE_") else f"TASK_STATE_{name}")
            except ValueError:
                return cls.UNSPECIFIED
        return cls.UNSPECIFIED


_BY_NUMBER = tuple(TaskState)
# The wire names as plain strings, indexed by proto number (what a request may give by name or number).
TASK_STATES: tuple[str, ...] = tuple(state.value for state in TaskState)
# A terminal task never changes again; an interrupted one waits for the caller (a message, credentials).
TERMINAL_STATES: frozenset[TaskState] = frozenset(
    {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}
)
INTERRUPTED_STATES: frozenset[TaskState] = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})

ROLE_UNSPECIFIED = "ROLE_UNSPECIFIED"
ROLE_USER = "ROLE_USER"
ROLE_AGENT = "ROLE_AGENT"
ROLES: tuple[str, ...] = (ROLE_UNSPECIFIED, ROLE_USER, ROLE_AGENT)  # indexed by proto number
