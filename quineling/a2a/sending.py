"""``Sending``: SendMessage and SendStreamingMessage — a new task, a follow-up, an idempotent replay.

One atomic commit per request: a send saves its task inside the runtime's own commit
(:class:`~quineling.a2a.executor.Dispatcher`), so the runtime's change set and the task are stored in one
atomic step — never one without the other (docs/decisions/0004-one-atomic-commit-per-request.md).

A follow-up races other requests on its task: its save is conditional on the version it loaded, and what the
loser gets is decided in :meth:`Sending._follow_up` (docs/decisions/0008-concurrent-updates-to-one-task.md).
A send with an ``Idempotency-Key`` claims the key in that same commit; an identical request under a claimed
key is answered from the task and its event log, and executes nothing (:mod:`quineling.a2a.idempotency`).
"""

from __future__ import annotations

from dataclasses import dataclass

from quineling.a2a import event_ids, idempotency, output_modes, wire
from quineling.a2a.context import CallContext
from quineling.a2a.errors import (
    InternalError,
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
    store_failure,
)
from quineling.a2a.event_ids import StreamEvent
from quineling.a2a.executor import Dispatcher, Execution, Outcome, Pending, QuinelingExecutor
from quineling.a2a.generations import generation_of
from quineling.a2a.idempotency import Claiming
from quineling.a2a.long_poll import GenerationMismatchError
from quineling.a2a.model import new_id, normalize_message, present_task
from quineling.a2a.subscription import event_number
from quineling.a2a.task_access import CONFLICT_ATTEMPTS, TaskAccess, logged, stamped, task_not_found
from quineling.runtime.errors import QuinelingError
from stores.base import TaskWrite
from stores.errors import KeyClaimed, StoreError, TaskConflict
from stores.jsontypes import JSON

IDEMPOTENCY_TTL_SECONDS = 24 * 3600.0  # how long an Idempotency-Key names its request (configurable)


@dataclass(frozen=True, slots=True)
class Sent:
    """A send's answer: the task after it and its events, and the generation before them (``base``)."""

    execution: Execution
    history_length: int | None
    base: int


class Sending:
    def __init__(
        self,
        runtime: Dispatcher,
        tasks: TaskAccess,
        executor: QuinelingExecutor,
        idempotency_ttl: float = IDEMPOTENCY_TTL_SECONDS,
    ) -> None:
        self.runtime = runtime
        self.tasks = tasks
        self.executor = executor
        self.idempotency_ttl = idempotency_ttl

    def framed(self, ctx: CallContext, sent: Sent) -> list[JSON]:
        """A streaming send's events, each with its SSE id (docs/decisions/0014-resumable-streams.md): the
        events' own generations; a follow-up's opening snapshot gets the generation before its first event."""
        execution = sent.execution
        events = execution.stream()
        task_id = execution.task["id"]
        cursors = list(range(sent.base + 1, sent.base + len(execution.events) + 1))
        if len(events) > len(execution.events):
            cursors.insert(0, sent.base)
        events[0] = {"task": present_task(events[0]["task"], sent.history_length)}
        return [
            StreamEvent(event, event_ids.encode(ctx.scope, task_id, cursor))
            for event, cursor in zip(events, cursors, strict=True)
        ]

    def execute(self, params: JSON, ctx: CallContext, *, streaming: bool) -> Sent:
        params = wire.require_object(params, "params")
        message = normalize_message(wire.field(params, "message"))
        wire.metadata(params)  # validated for every binding alike; the request's metadata is not kept
        config = wire.require_object(wire.field(params, "configuration"), "configuration")
        history_length = wire.history_length(config)
        # returnImmediately/blocking is read for validation only: the work is synchronous, and push configs are
        # ignored because the pushNotifications capability is off.
        wire.boolean(config, "returnImmediately")
        modes = output_modes.accepted(wire.field(config, "acceptedOutputModes"))
        if wire.field(params, "ifGenerationMatch") is not None:
            # Not a member of SendMessageRequest: the draft 1.1 precondition lives in its configuration.
            raise InvalidParamsError(
                "params.ifGenerationMatch is not a field of SendMessageRequest; "
                "send it as params.configuration.ifGenerationMatch"
            )
        expected = wire.integer(config, "ifGenerationMatch")
        if expected is not None and expected < 0:
            raise InvalidParamsError("configuration.ifGenerationMatch must not be negative")
        key = idempotency.valid_key(ctx.idempotency_key)
        if key is None:
            return self._run(ctx, message, history_length, None, expected, modes, streaming=streaming)
        request = idempotency.fingerprint(params)
        held = self.tasks.load_claim(ctx, key)
        if held is not None:
            return self._replay(ctx, request, held, history_length)
        try:
            claiming = Claiming(key, request, self.idempotency_ttl)
            return self._run(ctx, message, history_length, claiming, expected, modes, streaming=streaming)
        except KeyClaimed as taken:  # an identical request committed first: answer as it did
            return self._replay(ctx, request, taken.record, history_length)

    def _run(
        self,
        ctx: CallContext,
        message: JSON,
        history_length: int | None,
        claiming: Claiming | None,
        expected: int | None,
        modes: frozenset[str],
        *,
        streaming: bool,
    ) -> Sent:
        """Execute a send; ``expected`` is its ``ifGenerationMatch``, if any (ignored for a new task, as the
        draft says: there is no generation to match yet); ``streaming``:
        a SendStreamingMessage (its new task's events are logged even when it ends at once, see
        :func:`~quineling.a2a.task_access.logged`)."""
        task_id = message.get("taskId")
        if task_id:
            execution = self._follow_up(ctx, task_id, message, claiming, expected, modes)
        else:
            pending = self.executor.prepare_start(
                new_id(), message.get("contextId") or new_id(), message, modes
            )
            try:
                execution = self._dispatch_and_save(ctx, pending, 0, 0, claiming, streaming=streaming)
            except TaskConflict:  # a fresh random id already taken: not expected to happen
                raise InternalError(
                    "Task storage already holds a task with the generated id; retry"
                ) from None
        return Sent(execution, history_length, generation_of(execution.task) - len(execution.events))

    def _replay(self, ctx: CallContext, request: str, held: object, history_length: int | None) -> Sent:
        """The answer to a send whose Idempotency-Key an identical request already used: the task it named,
        and for a stream its events again, from the task's event log; nothing is executed. A different
        request under the key is refused."""
        if not idempotency.well_formed(held) or held["fingerprint"] != request:  # type: ignore[index]
            raise idempotency.IdempotencyKeyReusedError(
                "This Idempotency-Key was already used for a different request (its params, message.messageId "
                "aside, differ); send a new request with a new key"
            )
        assert isinstance(held, dict)
        task_id, first, last = held["taskId"], held["from"], held["to"]
        task = self.tasks.load_versioned(ctx, task_id).value
        if task is None:
            raise TaskNotFoundError(
                f"Task {task_id}, which this Idempotency-Key's request answered with, is no longer stored "
                "(evicted or expired); nothing was executed again",
                metadata={"taskId": task_id},
            )
        try:
            logged_events = self.tasks.task_store.read_events(ctx.scope, task_id, f"{first}-0", 0)
        except StoreError as exc:
            raise store_failure(exc) from exc
        logged_events = [e for e in logged_events if event_number(e.event_id) <= last]
        if [event_number(e.event_id) for e in logged_events] != list(range(first + 1, last + 1)):
            logged_events = []  # no longer all in the log: the task as it is now stands for them
        events = [e.payload for e in logged_events]
        opening = None if events and "task" in events[0] else task
        return Sent(Execution(task, events, opening), history_length, first)

    def _dispatch_and_save(
        self,
        ctx: CallContext,
        pending: Pending,
        expect_version: int,
        generation: int,
        claiming: Claiming | None = None,
        *,
        streaming: bool = True,
    ) -> Execution:
        """Dispatch ``pending`` and save its task conditionally in the runtime's commit; ``generation`` is the
        task's as loaded (0 for a new one), and every change gets the next.

        :class:`TaskConflict` propagates (the caller decides; nothing of the request was committed then);
        other store failures become protocol errors. With ``claiming``, the write claims its idempotency key;
        :class:`KeyClaimed` propagates when an identical request already did."""
        if not pending.needs_dispatch:
            before = stamped(pending.before, generation)
            self.tasks.save(ctx, before, expect_version=expect_version, claiming=claiming)
            return before
        self.tasks.admit(ctx)
        finished: list[Execution] = []

        def attach(outcome: Outcome) -> TaskWrite:
            # Called again for each recomputed outcome: the last call is the write that was committed.
            execution = stamped(pending.finish(outcome), generation)
            finished.append(execution)
            return TaskWrite(
                self.tasks.task_store,
                ctx.scope,
                execution.task,
                logged(execution, expect_version, streaming=streaming, keyed=claiming is not None),
                expect_version,
                None if claiming is None else claiming.claim(execution),
            )

        try:
            self.runtime.dispatch(pending.request, scope=ctx.partition, attach=attach)
        except QuinelingError:
            pass  # recorded on the task as FAILED, in the same commit
        except (TaskConflict, KeyClaimed):
            raise
        except StoreError as exc:
            raise store_failure(exc) from None
        if not finished:
            raise InternalError("The runtime answered without recording the task; retry")
        self.tasks.committed(finished[-1])
        return finished[-1]

    def _follow_up(
        self,
        ctx: CallContext,
        task_id: str,
        message: JSON,
        claiming: Claiming | None = None,
        expected: int | None = None,
        modes: frozenset[str] = output_modes.DEFAULT,
    ) -> Execution:
        """Load the task and its version, check it still accepts messages, dispatch, save conditionally.

        If another request saved the task between our load and our save, the save conflicts, and nothing of
        this message was committed (the runtime's effects ride along the save). The message is then applied
        again — dispatched again — to the fresh task while that is still non-terminal. If the task has
        meanwhile become terminal, or vanished, or keeps changing, the request fails with a retryable
        InternalError that says so, and the stored task is left as the other request made it.
        """
        current = self.tasks.load_versioned(ctx, task_id)
        task = _accepting(task_id, current.value, message)
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            # Checked on the task as loaded; the save is conditional on that load, so it holds at the commit.
            _check_generation(task_id, generation_of(task), expected)
            pending = self.executor.prepare_resume(task, message, modes)
            try:
                return self._dispatch_and_save(ctx, pending, current.version, generation_of(task), claiming)
            except TaskConflict:
                if claiming is not None and (held := self.tasks.load_claim(ctx, claiming.key)) is not None:
                    raise KeyClaimed(claiming.key, held) from None  # the change was an identical request's
                if attempt == CONFLICT_ATTEMPTS:
                    raise _concurrent_change(task_id, "kept changing") from None
            current = self.tasks.load_versioned(ctx, task_id)
            if current.value is None:
                raise _concurrent_change(task_id, "is no longer available")
            state = current.value["status"]["state"]
            if state in wire.TERMINAL:
                raise _concurrent_change(task_id, f"is now {state}", state)
            task = current.value
        raise AssertionError("unreachable")  # pragma: no cover


def _accepting(task_id: str, task: JSON | None, message: JSON) -> JSON:
    """``task`` if it accepts ``message`` as a follow-up; otherwise the protocol error (a terminal task
    accepts none: UnsupportedOperation)."""
    if task is None:
        raise task_not_found(task_id)
    if message.get("contextId") and message["contextId"] != task["contextId"]:
        raise InvalidParamsError(
            f"contextId {message['contextId']!r} does not match task {task_id!r}",
        )
    if task["status"]["state"] in wire.TERMINAL:
        raise UnsupportedOperationError(
            f"Task {task_id} is in terminal state {task['status']['state']} and accepts no messages",
            metadata={"taskId": task_id},
        )
    return task


def _check_generation(task_id: str, generation: int, expected: int | None) -> None:
    if expected is not None and generation != expected:
        raise GenerationMismatchError(
            f"ifGenerationMatch is {expected} but task {task_id} is at generation {generation}; nothing was "
            "executed. Call GetTask for the task's current state.",
            metadata={
                "taskId": task_id,
                "expectedGeneration": str(expected),
                "currentGeneration": str(generation),
            },
        )


def _concurrent_change(task_id: str, now: str, state: str | None = None) -> InternalError:
    """The loser of a follow-up race: its message is not on the task and its runtime request committed
    nothing, so sending it again is safe."""
    metadata = {"taskId": task_id, "retryable": "true"}
    if state:
        metadata["taskState"] = state
    return InternalError(
        f"Task {task_id} was changed by a concurrent request while this message was processed and {now}. "
        "The message was not recorded on the task, and its runtime request committed nothing. "
        "Use GetTask to see the task's current state.",
        metadata=metadata,
    )
