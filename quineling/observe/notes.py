"""What the request being served turned out to be — its id, binding, A2A method, outcome, task, runtime
operation — noted by whichever layer learns it, read once when the response is made (metrics and the request
log line) and by every log record of the request (its ``request_id``).

A context variable, so each thread (gthread) or greenlet (gevent) serving a request has its own, and the
runtime side (:class:`~quineling.observe.metrics.ObservedDispatcher`) can note its operation without Flask.
Every label noted here comes from a closed set; only ``task_id`` and ``request_id`` are free text, and they
go to logs only, never into a metric label."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

NO_METHOD = "none"  # the request never got as far as naming an A2A method (refused before, or no route)
UNKNOWN_METHOD = "unknown"  # it named one this server does not serve
TASK_ID_LOG_LIMIT = 128  # a task id from the request is the caller's text: logged at most this long


@dataclass(slots=True)
class RequestNotes:
    request_id: str
    binding: str = "other"
    method: str = NO_METHOD
    outcome: str | None = None  # the A2A error reason, when the request failed with one
    task_id: str | None = None
    operation: str | None = None


_current: ContextVar[RequestNotes | None] = ContextVar("quineling_request_notes", default=None)


def begin(request_id: str, binding: str, method: str = NO_METHOD) -> RequestNotes:
    notes = RequestNotes(request_id, binding, method)
    _current.set(notes)
    return notes


def end() -> None:
    _current.set(None)


def current() -> RequestNotes | None:
    return _current.get()


def note_call(binding: str, method: str) -> None:
    notes = _current.get()
    if notes is not None:
        notes.binding, notes.method = binding, method


def note_outcome(reason: str) -> None:
    """The error the request is answered with (the last one noted wins: it is the one rendered)."""
    notes = _current.get()
    if notes is not None:
        notes.outcome = reason


def note_task(task_id: object) -> None:
    notes = _current.get()
    if notes is not None and isinstance(task_id, str) and task_id:
        notes.task_id = task_id[:TASK_ID_LOG_LIMIT]


def note_operation(operation: str) -> None:
    notes = _current.get()
    if notes is not None:
        notes.operation = operation
