"""What a call's answer was, noted for its metrics and log line, with no web framework: the bindings and the
JSON-RPC core note the error or the task they answer with here; the HTTP edge
(:mod:`quineling.a2a.http.observation`) turns the notes into the request's metrics and log line."""

from __future__ import annotations

from typing import Any

from quineling.a2a.errors import A2AError
from quineling.observe import notes


def outcome_of(error: A2AError) -> str:
    if error.status_code == 503 and error.reason == "INTERNAL_ERROR":
        return "UNAVAILABLE"
    return error.reason


def note_error(error: A2AError) -> None:
    """The error this request is answered with (called where a binding renders one)."""
    notes.note_outcome(outcome_of(error))
    notes.note_task(error.metadata.get("taskId"))


def note_result(result: Any) -> None:
    """The task a successful answer is about: a Task, or a SendMessage response holding one."""
    if isinstance(result, dict):
        task = result.get("task", result)
        if isinstance(task, dict) and "status" in task:
            notes.note_task(task.get("id"))
