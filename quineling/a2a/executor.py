"""The Quineling executor: one A2A user message → one ``Runtime.dispatch`` → task state, artifact, events.

Request contract (docs/runtime-operations.md, "Sending an operation"):

* exactly one data part whose ``mediaType`` is ``application/json`` (parameters allowed) **or absent** — a
  ``data`` part is JSON by construction, so a missing media type is accepted; any other media type is refused;
* or exactly one text part: shorthand for ``{"operation": "create", "thought": <text>}``, text unchanged;
* anything else (no parts, several parts, file parts, role other than ``ROLE_USER``) is an envelope error.

Outcomes: success → COMPLETED; ``result.status == "clarify"`` → INPUT_REQUIRED; ``unsupported`` /
``inconsistent`` → REJECTED (the artifact keeps the diagnostics); a :class:`QuinelingError` → FAILED with a
status message whose ``metadata.quinelingError`` is ``{code, message, path}``. An envelope error on an
INPUT_REQUIRED task leaves it INPUT_REQUIRED, so a corrected follow-up can still complete it.

Work is synchronous and bounded: the whole execution happens inside the request, so blocking sends and
``returnImmediately`` both return the task after dispatch (the protocol allows a synchronous agent to do so).
Everything here is pure over its inputs; the service does the loading and the single save. The executor
prepares a :class:`Pending` execution (the task up to WORKING, and the runtime request it carries); its
``finish(outcome or error)`` builds the finished task, as often as asked, so the service can hand it to
``Runtime.dispatch(…, attach=…)`` and have the task saved in the runtime's own commit (one atomic step).

Tasks are updated copy-on-write: every change assigns a new ``status``, ``history`` or ``artifacts`` container
instead of mutating one in place. Snapshots (the stream's opening ``task``, the logged events) are therefore
shallow copies, which keeps a large result artifact from being deep-copied several times per request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from quineling.a2a import output_modes, wire
from quineling.a2a.model import RESULT_ARTIFACT_ID, agent_message
from quineling.runtime.errors import QuinelingError
from stores.base import TaskWrite
from stores.jsontypes import JSON

REJECTING_STATUSES = frozenset({"unsupported", "inconsistent"})

Outcome = JSON | QuinelingError  # what a dispatch ends with: {operation, result}, or the runtime's error


class Dispatcher(Protocol):
    """What ``Runtime.dispatch`` offers, and the one contract the service relies on: run ``request`` in
    ``scope`` and commit ``attach(outcome)`` — the task write — in the same atomic step as the outcome's
    effects, calling ``attach`` again for every recomputed outcome. Raises the runtime's
    :class:`QuinelingError` (its write committed too), or a store error about the write itself
    (:class:`~stores.errors.TaskConflict`: then nothing was committed)."""

    def dispatch(self, request: Any, *, scope: str, attach: Callable[[Outcome], TaskWrite]) -> JSON: ...


@dataclass(slots=True)
class Execution:
    """A task after one message, the events it produced (for the store's log), and the stream's first
    ``task`` snapshot."""

    task: JSON
    events: list[JSON] = field(default_factory=list)
    opening: JSON | None = None

    def stream(self) -> list[JSON]:
        """The events a streaming send yields: a ``task`` snapshot first, then the updates."""
        if self.events and "task" in self.events[0]:
            return list(self.events)
        return [{"task": self.opening or self.task}, *self.events]


@dataclass(frozen=True, slots=True)
class Pending:
    """A task prepared for one message: ``before`` is the task as it stands before the runtime runs; ``request``
    is the runtime request to dispatch, or ``None`` when there is nothing to dispatch and ``before`` is final
    (a bad envelope). ``finish(outcome)`` is pure: it copies ``before`` and never mutates it."""

    before: Execution
    request: Any
    finisher: Callable[[Execution, Outcome], Execution]

    @property
    def needs_dispatch(self) -> bool:
        return self.request is not None

    def finish(self, outcome: Outcome) -> Execution:
        if not self.needs_dispatch:
            return self.before
        # Copy-on-write containers (see the module docstring): a shallow copy keeps ``before`` intact.
        copied = Execution(dict(self.before.task), list(self.before.events), self.before.opening)
        return self.finisher(copied, outcome)


def request_of(message: JSON) -> Any:
    """The runtime request a message carries, or a QuinelingError('invalid-request') for a bad envelope."""
    if message.get("role") != "ROLE_USER":
        raise QuinelingError("invalid-request", "the message role must be ROLE_USER", "message.role")
    parts = message.get("parts", [])
    if len(parts) != 1:
        raise QuinelingError(
            "invalid-request",
            f"send exactly one JSON data part or one text part (got {len(parts)} parts)",
            "message.parts",
        )
    part = parts[0]
    if "text" in part:
        return {"operation": "create", "thought": part["text"]}
    if "data" in part:
        media = part.get("mediaType", "application/json").split(";")[0].strip().lower()
        if media != "application/json":
            raise QuinelingError(
                "invalid-request", "a data part must have mediaType application/json", "message.parts[0]"
            )
        return part["data"]
    raise QuinelingError(
        "invalid-request", "file parts are not accepted; send one JSON data part", "message.parts[0]"
    )


def _status_event(task: JSON) -> JSON:
    return {"statusUpdate": {"taskId": task["id"], "contextId": task["contextId"], "status": task["status"]}}


class QuinelingExecutor:
    """Builds task states from messages and outcomes; pure over its inputs and the clock."""

    def __init__(self, clock: Callable[[], str] = wire.now_rfc3339) -> None:
        self.clock = clock

    # -- entry points ---------------------------------------------------------------------------------

    def prepare_start(
        self,
        task_id: str,
        context_id: str,
        message: JSON,
        modes: frozenset[str] = output_modes.DEFAULT,
    ) -> Pending:
        """A new task for ``message`` up to WORKING (the caller dispatches, finishes and saves it once);
        ``modes``: the renderings of the result the send accepts (quineling/a2a/output_modes.py)."""
        message = {**message, "taskId": task_id, "contextId": context_id}
        task: JSON = {"id": task_id, "contextId": context_id, "history": [message]}
        self._set_status(task, "TASK_STATE_SUBMITTED")
        execution = Execution(task, opening=dict(task))
        execution.events.append({"task": dict(task)})
        try:
            request = request_of(message)
        except QuinelingError as exc:
            self._fail(execution, exc)
            return Pending(execution, None, self._finisher(modes))
        return self._working(execution, request, modes)

    def prepare_resume(
        self, task: JSON, message: JSON, modes: frozenset[str] = output_modes.DEFAULT
    ) -> Pending:
        """A follow-up message on a non-terminal task: the whole transcript is kept."""
        task = dict(task)
        message = {**message, "taskId": task["id"], "contextId": task["contextId"]}
        self._retire_status_message(task)
        task["history"] = [*task.get("history", []), message]
        execution = Execution(task)
        try:
            request = request_of(message)
        except QuinelingError as exc:
            if task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED":
                # A malformed envelope keeps the task waiting for a corrected follow-up.
                self._set_status(task, "TASK_STATE_INPUT_REQUIRED", self._error_message(task, exc))
                execution.opening = dict(task)
                execution.events.append(_status_event(task))
                return Pending(execution, None, self._finisher(modes))
            execution.opening = dict(task)
            self._fail(execution, exc)
            return Pending(execution, None, self._finisher(modes))
        self._set_status(task, "TASK_STATE_WORKING")
        execution.opening = dict(task)
        return self._working(execution, request, modes)

    def cancel(self, task: JSON) -> Execution:
        task = dict(task)
        self._retire_status_message(task)
        self._set_status(task, "TASK_STATE_CANCELED")
        return Execution(task, [_status_event(task)], dict(task))

    # -- steps ----------------------------------------------------------------------------------------

    def _working(self, execution: Execution, request: Any, modes: frozenset[str]) -> Pending:
        task = execution.task
        self._set_status(task, "TASK_STATE_WORKING")
        execution.events.append(_status_event(task))
        return Pending(execution, request, self._finisher(modes))

    def _finisher(self, modes: frozenset[str]) -> Callable[[Execution, Outcome], Execution]:
        return lambda execution, outcome: self._finish(execution, outcome, modes)

    def _finish(self, execution: Execution, outcome: Outcome, modes: frozenset[str]) -> Execution:
        """Record the runtime's outcome on a (copied) WORKING execution, its result rendered as ``modes``."""
        if isinstance(outcome, QuinelingError):
            self._fail(execution, outcome)
            return execution
        task = execution.task
        artifact = {
            "artifactId": RESULT_ARTIFACT_ID,
            "name": RESULT_ARTIFACT_ID,
            "parts": output_modes.result_parts(outcome, modes),
        }
        # The stable container id means a follow-up's result replaces the earlier one.
        others = [a for a in task.get("artifacts", []) if a.get("artifactId") != RESULT_ARTIFACT_ID]
        task["artifacts"] = [*others, artifact]
        # The result is sent whole, in one chunk: marking it the last closes the artifact for chunk-aware
        # clients (lastChunk absent reads as "more may follow").
        update = {
            "taskId": task["id"],
            "contextId": task["contextId"],
            "artifact": artifact,
            "lastChunk": True,
        }
        execution.events.append({"artifactUpdate": update})
        state, message = self._state_of(task, outcome)
        self._set_status(task, state, message)
        execution.events.append(_status_event(task))
        return execution

    def _state_of(self, task: JSON, outcome: JSON) -> tuple[str, JSON | None]:
        result = outcome.get("result")
        status = result.get("status") if isinstance(result, dict) else None
        status = status if isinstance(status, str) else None  # looked up in a set below: must be hashable
        operation = outcome.get("operation", "request")
        if status == "clarify":
            text = (
                f"The {operation} request needs clarification; send a complete replacement request on this "
                "task. The quineling-result artifact carries the diagnostics."
            )
            return "TASK_STATE_INPUT_REQUIRED", agent_message(task, text)
        if status in REJECTING_STATUSES:
            text = (
                f"The {operation} request is {status}; the quineling-result artifact carries the diagnostics."
            )
            return "TASK_STATE_REJECTED", agent_message(task, text)
        return "TASK_STATE_COMPLETED", None

    def _fail(self, execution: Execution, exc: QuinelingError) -> None:
        task = execution.task
        self._set_status(task, "TASK_STATE_FAILED", self._error_message(task, exc))
        execution.events.append(_status_event(task))

    def _error_message(self, task: JSON, exc: QuinelingError) -> JSON:
        text = f"Request failed ({exc.code}): {exc.message}"
        if exc.path:
            text += f" [at {exc.path}]"
        return agent_message(task, text, {"quinelingError": exc.to_dict()})

    def _retire_status_message(self, task: JSON) -> None:
        """A replaced status message moves into history, so the transcript keeps every agent reply."""
        status = task.get("status", {})
        previous = status.get("message")
        if previous:
            task["status"] = {k: v for k, v in status.items() if k != "message"}
            task["history"] = [*task.get("history", []), previous]

    def _set_status(self, task: JSON, state: str, message: JSON | None = None) -> None:
        status: JSON = {"state": state, "timestamp": self.clock()}
        if message:
            status["message"] = message
        task["status"] = status
