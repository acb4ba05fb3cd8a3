"""``A2AService``: the one binding-agnostic request handler behind JSON-RPC, HTTP+JSON and v0.3 compat.

Methods take 1.0 request JSON (``params``) and a :class:`~quineling.a2a.context.CallContext`, return 1.0
response JSON (or an iterator of StreamResponse dicts), and raise :class:`~quineling.a2a.errors.A2AError`.
Streaming methods validate eagerly: they raise before returning the iterator when the request fails before
its first event.

One atomic commit per request: a SendMessage saves its task inside the runtime's own commit
(:class:`~quineling.a2a.executor.Dispatcher`), so the runtime's change set and the task are stored in one
atomic step — never one without the other (docs/decisions-a2a.md, "One atomic commit per request").

Concurrent updates: every change to a stored task is a conditional save (``expect_version`` = the version
it was loaded at; a new task expects 0), so two requests acting on one task can never silently overwrite each
other. What the loser of such a race gets is decided in :meth:`A2AService.cancel_task` and
:meth:`A2AService._follow_up` (docs/decisions-a2a.md, "Concurrent updates to one task").
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from quineling.a2a import event_ids, idempotency, output_modes, wire
from quineling.a2a.context import CallContext
from quineling.a2a.errors import (
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnavailableError,
    UnsupportedOperationError,
    store_failure,
)
from quineling.a2a.event_ids import StreamEvent
from quineling.a2a.executor import Dispatcher, Execution, Outcome, Pending, QuinelingExecutor
from quineling.a2a.generations import generation_of, stamp_event, with_generation
from quineling.a2a.long_poll import GenerationMismatchError, LongPoll
from quineling.a2a.model import new_id, normalize_message, present_task
from quineling.a2a.subscription import NotResumable, StreamSettings, event_number, follow
from quineling.runtime.errors import QuinelingError
from stores.base import KeyClaim, TaskQuery, TaskStore, TaskWrite, Versioned
from stores.errors import InvalidCursor, KeyClaimed, ScopeLimitReached, StoreError, TaskConflict
from stores.jsontypes import JSON
from stores.scopes import ScopeRegistry

CONFLICT_ATTEMPTS = 3  # conditional saves per request before a task that keeps changing is given up on
IDEMPOTENCY_TTL_SECONDS = 24 * 3600.0  # how long an Idempotency-Key names its request (configurable)


@dataclass(frozen=True, slots=True)
class Sent:
    """A send's answer: the task after it and its events, and the generation before them (``base``)."""

    execution: Execution
    history_length: int | None
    base: int


@dataclass(frozen=True, slots=True)
class Claiming:
    """A send's idempotency key and request fingerprint, claimed with its task's write."""

    key: str
    request: str
    ttl_seconds: float

    def claim(self, execution: Execution) -> KeyClaim:
        last = generation_of(execution.task)
        first = last - len(execution.events)
        record = idempotency.record(self.request, execution.task["id"], first, last)
        return KeyClaim(self.key, record, self.ttl_seconds)


class A2AService:
    def __init__(
        self,
        runtime: Dispatcher,
        task_store: TaskStore,
        card_provider: Callable[[str], JSON],
        *,
        clock: Callable[[], str] = wire.now_rfc3339,
        stream: StreamSettings | None = None,
        scopes: ScopeRegistry | None = None,
        idempotency_ttl: float = IDEMPOTENCY_TTL_SECONDS,
        long_poll: LongPoll | None = None,
        on_states: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.runtime = runtime
        # Hears the states a committed write moved a task through (the quineling_task_transitions metric).
        self.on_states = on_states
        self.task_store = task_store
        self.scopes = scopes  # bounds live scopes; every write admits its partition first
        self.executor = QuinelingExecutor(clock)
        self._card = card_provider
        self.stream_settings = stream or StreamSettings()
        self.idempotency_ttl = idempotency_ttl
        self.long_poll = long_poll or LongPoll()

    # -- discovery ------------------------------------------------------------------------------------

    def card(self, version: str = "1.0") -> JSON:
        return self._card(version)

    def get_extended_agent_card(self, params: JSON | None, ctx: CallContext) -> JSON:
        raise UnsupportedOperationError("This agent does not declare an extended agent card")

    # -- messages -------------------------------------------------------------------------------------

    def send_message(self, params: JSON, ctx: CallContext) -> JSON:
        sent = self._execute(params, ctx, streaming=False)
        return {"task": present_task(sent.execution.task, sent.history_length)}

    def send_message_stream(self, params: JSON, ctx: CallContext) -> Iterator[JSON]:
        # The work is synchronous, so it runs (and fails) here, before the caller commits to a stream.
        return iter(self._framed(ctx, self._execute(params, ctx, streaming=True)))

    def _framed(self, ctx: CallContext, sent: Sent) -> list[JSON]:
        """A streaming send's events, each with its SSE id (docs/decisions-a2a.md, "Resumable streams"): the
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

    def _execute(self, params: JSON, ctx: CallContext, *, streaming: bool) -> Sent:
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
        held = self._load_claim(ctx, key)
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
        :func:`_logged`)."""
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
        task = self._load_versioned(ctx, task_id).value
        if task is None:
            raise TaskNotFoundError(
                f"Task {task_id}, which this Idempotency-Key's request answered with, is no longer stored "
                "(evicted or expired); nothing was executed again",
                metadata={"taskId": task_id},
            )
        try:
            logged = self.task_store.read_events(ctx.scope, task_id, f"{first}-0", 0)
        except StoreError as exc:
            raise store_failure(exc) from exc
        logged = [e for e in logged if event_number(e.event_id) <= last]
        if [event_number(e.event_id) for e in logged] != list(range(first + 1, last + 1)):
            logged = []  # no longer all in the log: the task as it is now stands for them
        events = [e.payload for e in logged]
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
            before = _stamped(pending.before, generation)
            self._save(ctx, before, expect_version=expect_version, claiming=claiming)
            return before
        self._admit(ctx)
        finished: list[Execution] = []

        def attach(outcome: Outcome) -> TaskWrite:
            # Called again for each recomputed outcome: the last call is the write that was committed.
            execution = _stamped(pending.finish(outcome), generation)
            finished.append(execution)
            return TaskWrite(
                self.task_store,
                ctx.scope,
                execution.task,
                _logged(execution, expect_version, streaming=streaming, keyed=claiming is not None),
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
        self._committed(finished[-1])
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
        current = self._load_versioned(ctx, task_id)
        task = self._accepting(task_id, current.value, message)
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            # Checked on the task as loaded; the save is conditional on that load, so it holds at the commit.
            _check_generation(task_id, generation_of(task), expected)
            pending = self.executor.prepare_resume(task, message, modes)
            try:
                return self._dispatch_and_save(ctx, pending, current.version, generation_of(task), claiming)
            except TaskConflict:
                if claiming is not None and (held := self._load_claim(ctx, claiming.key)) is not None:
                    raise KeyClaimed(claiming.key, held) from None  # the change was an identical request's
                if attempt == CONFLICT_ATTEMPTS:
                    raise _concurrent_change(task_id, "kept changing") from None
            current = self._load_versioned(ctx, task_id)
            if current.value is None:
                raise _concurrent_change(task_id, "is no longer available")
            state = current.value["status"]["state"]
            if state in wire.TERMINAL:
                raise _concurrent_change(task_id, f"is now {state}", state)
            task = current.value
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _accepting(task_id: str, task: JSON | None, message: JSON) -> JSON:
        """``task`` if it accepts ``message`` as a follow-up; otherwise the protocol error (a terminal task
        accepts none: UnsupportedOperation)."""
        if task is None:
            raise _task_not_found(task_id)
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

    # -- tasks ----------------------------------------------------------------------------------------

    def get_task(self, params: JSON, ctx: CallContext) -> JSON:
        params = wire.require_object(params, "params")
        task_id = _task_id(params)
        history_length = wire.history_length(params)
        current = wire.integer(params, "currentGeneration")
        if current is not None and current < 0:
            raise InvalidParamsError("currentGeneration must be a non-negative integer")
        task = self._load(ctx, task_id)
        if current is not None and generation_of(task) <= current:
            task = self._wait_for_change(ctx, task, current)
        return present_task(task, history_length)

    def _wait_for_change(self, ctx: CallContext, task: JSON, current: int) -> JSON:
        """``task`` once its generation is above ``current``, or as it is after the long-poll wait (at once
        beyond this worker's waiter cap); see :mod:`quineling.a2a.long_poll`."""
        release = self.long_poll.enter()
        if release is None:
            return task
        task_id = task["id"]
        position = f"{generation_of(task)}-0"
        deadline = time.monotonic() + self.long_poll.seconds
        try:
            while (remaining := deadline - time.monotonic()) > 0 and not ctx.should_stop():
                wait = min(self.long_poll.slice_seconds, remaining)
                try:
                    if self.task_store.read_events(ctx.scope, task_id, position, wait):
                        break
                except StoreError as exc:
                    raise store_failure(exc) from exc
        finally:
            release()
        return self._load(ctx, task_id)

    def list_tasks(self, params: JSON, ctx: CallContext) -> JSON:
        params = wire.require_object(params, "params")
        page_size = wire.integer(params, "pageSize")
        if page_size is None:
            page_size = 50
        if not 1 <= page_size <= 100:
            raise InvalidParamsError("pageSize must be between 1 and 100")
        status = wire.field(params, "status")
        state = None if status in (None, "") else wire.enum(status, wire.TASK_STATES, "status")
        query = TaskQuery(
            context_id=wire.string(params, "contextId"),
            status=None if state in (None, "TASK_STATE_UNSPECIFIED") else state,
            status_after=wire.timestamp(params, "statusTimestampAfter"),
            page_size=page_size,
            page_token=wire.string(params, "pageToken") or "",
        )
        history_length = wire.history_length(params)
        include_artifacts = bool(wire.boolean(params, "includeArtifacts"))
        try:
            page = self.task_store.list(ctx.scope, query)
        except InvalidCursor:
            raise InvalidParamsError("pageToken is invalid for this listing") from None
        except StoreError as exc:
            raise store_failure(exc) from exc
        return {
            "tasks": [
                present_task(t, history_length, include_artifacts=include_artifacts) for t in page.tasks
            ],
            "nextPageToken": page.next_page_token,
            "pageSize": page_size,
            "totalSize": page.total_size,
        }

    def cancel_task(self, params: JSON, ctx: CallContext) -> JSON:
        """Cancel a non-terminal task. The decision is made on the task as loaded and committed only if the
        task is still at that version; otherwise it is made again on the fresh task (so a task completed or
        canceled meanwhile answers as such), at most ``CONFLICT_ATTEMPTS`` times, then a retryable
        InternalError. Nothing of the other request is ever overwritten. Canceling a canceled task answers
        it again (idempotent)."""
        params = wire.require_object(params, "params")
        task_id = _task_id(params)
        wire.metadata(params)  # validated for every binding alike; the request's metadata is not kept
        for _ in range(CONFLICT_ATTEMPTS):
            current = self._load_versioned(ctx, task_id)
            task = current.value
            if task is None:
                raise _task_not_found(task_id)
            state = task["status"]["state"]
            if state == "TASK_STATE_CANCELED":
                return present_task(task)
            if state in wire.TERMINAL:
                raise TaskNotCancelableError(
                    f"Task {task_id} is {state} and cannot be canceled", metadata={"taskId": task_id}
                )
            execution = _stamped(self.executor.cancel(task), generation_of(task))
            try:
                self._save(ctx, execution, expect_version=current.version)
            except TaskConflict:
                continue  # another request changed the task: decide again on what it is now
            return present_task(execution.task)
        raise InternalError(
            f"Task {task_id} kept changing concurrently and was not canceled; retry CancelTask",
            metadata={"taskId": task_id, "retryable": "true"},
        )

    def subscribe_to_task(
        self, params: JSON, ctx: CallContext, *, keepalive: bool = False
    ) -> Iterator[JSON | None]:
        """First event: the current task; then its later events until a terminal state.

        With ``ctx.last_event_id`` (the ``Last-Event-ID`` header of a client resuming a cut stream) there is no
        snapshot: the events after the one it names, exactly, also when the task has become terminal since
        (then up to its terminal status); an id of another task, or one older than the retained event log,
        is refused with :class:`~quineling.a2a.subscription.NotResumable` (docs/decisions-a2a.md,
        "Resumable streams").

        With ``keepalive`` the iterator yields ``None`` (:data:`~quineling.a2a.subscription.KEEPALIVE`)
        when nothing happened for ``keepalive_seconds``, so an SSE writer can send a comment line.
        """
        params = wire.require_object(params, "params")
        task_id = _task_id(params)
        scope = ctx.scope

        def frame(event: JSON, log_id: str) -> JSON:
            return StreamEvent(event, event_ids.encode(scope, task_id, event_number(log_id)))

        if ctx.last_event_id is not None:
            return self._resume(ctx, task_id, ctx.last_event_id, frame, keepalive)
        task = self._load(ctx, task_id)
        if task["status"]["state"] in wire.TERMINAL:
            raise UnsupportedOperationError(
                f"Task {task_id} is in terminal state {task['status']['state']}; nothing to subscribe to",
                metadata={"taskId": task_id},
            )
        generation = generation_of(task)
        if generation:  # the log's ids are generations: follow exactly from the snapshot's
            position: str | None = f"{generation}-0"
        else:  # a task stored before generations: position, then snapshot (an event between is sent twice)
            try:
                position = self.task_store.last_event_id(scope, task_id)
            except StoreError as exc:
                raise store_failure(exc) from exc
            task = self._load(ctx, task_id)
        opening = StreamEvent({"task": present_task(task)}, event_ids.encode(scope, task_id, generation))
        following = follow(
            self.task_store,
            scope,
            task_id,
            position,
            self.stream_settings,
            keepalive=keepalive,
            should_stop=ctx.should_stop,
            frame=frame,
            numbered=bool(generation),
        )
        return itertools.chain([opening], following)

    def _resume(
        self,
        ctx: CallContext,
        task_id: str,
        last_event_id: str,
        frame: Callable[[JSON, str], JSON],
        keepalive: bool,
    ) -> Iterator[JSON | None]:
        """The events after ``last_event_id``'s, read eagerly far enough to refuse a gap before streaming."""
        task = self._load(ctx, task_id)  # an unknown or another principal's task: TaskNotFound, as always
        generation = generation_of(task)
        cursor = event_ids.decode(last_event_id.strip(), ctx.scope, task_id)
        if cursor is None or cursor > generation:
            raise NotResumable(task_id, "it was not issued for this task")
        position = f"{cursor}-0"
        backlog = []
        if cursor < generation:
            try:
                backlog = self.task_store.read_events(ctx.scope, task_id, position, 0)
            except StoreError as exc:
                raise store_failure(exc) from exc
            if not backlog or event_number(backlog[0].event_id) != cursor + 1:
                raise NotResumable(task_id, "it is older than the events this server keeps")
        elif task["status"]["state"] in wire.TERMINAL:
            return iter(())  # nothing was missed, and nothing more will come
        return follow(
            self.task_store,
            ctx.scope,
            task_id,
            position,
            self.stream_settings,
            keepalive=keepalive,
            should_stop=ctx.should_stop,
            frame=frame,
            backlog=backlog,
            numbered=True,
        )

    # -- push notifications (capability off) ----------------------------------------------------------

    def _push_off(self, params: JSON | None, ctx: CallContext) -> JSON:
        raise PushNotificationNotSupportedError("Push notifications are not supported by this agent")

    create_push_config = _push_off
    get_push_config = _push_off
    list_push_configs = _push_off
    delete_push_config = _push_off

    # -- store access ---------------------------------------------------------------------------------

    def _load(self, ctx: CallContext, task_id: str) -> JSON:
        """The task for a caller that only reads it (shared: never change it, :meth:`TaskStore.load_shared`)."""
        task = self._load_versioned(ctx, task_id, shared=True).value
        if task is None:
            raise _task_not_found(task_id)
        return task

    def _load_versioned(self, ctx: CallContext, task_id: str, *, shared: bool = False) -> Versioned:
        """The task and its version for a read-modify-write (``shared``: for a read only); ``Versioned(None,
        0)`` when it is not there."""
        load = self.task_store.load_shared if shared else self.task_store.load_versioned
        try:
            return load(ctx.scope, task_id)
        except StoreError as exc:
            raise store_failure(exc) from exc

    def _admit(self, ctx: CallContext) -> None:
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

    def _load_claim(self, ctx: CallContext, key: str) -> object:
        try:
            return self.task_store.load_claim(ctx.scope, key)
        except StoreError as exc:
            raise store_failure(exc) from exc

    def _save(
        self, ctx: CallContext, execution: Execution, *, expect_version: int, claiming: Claiming | None = None
    ) -> None:
        """Save conditionally. :class:`TaskConflict` (and :class:`KeyClaimed`) propagate (the caller decides);
        other failures become protocol errors."""
        self._admit(ctx)
        try:
            self.task_store.save(
                ctx.scope,
                execution.task,
                _logged(execution, expect_version, streaming=True, keyed=claiming is not None),
                expect_version=expect_version,
                claim=None if claiming is None else claiming.claim(execution),
            )
        except (TaskConflict, KeyClaimed):
            raise
        except StoreError as exc:
            raise store_failure(exc) from exc
        self._committed(execution)

    def _committed(self, execution: Execution) -> None:
        if self.on_states is not None:
            self.on_states(_states_entered(execution))


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


def _task_id(params: JSON) -> str:
    task_id = wire.string(params, "id", required=True)
    assert task_id is not None  # required=True raises instead
    return task_id


def _task_not_found(task_id: str) -> TaskNotFoundError:
    # Unknown, evicted, expired or another scope's: all look the same (no existence leaks).
    return TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})


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


def _logged(execution: Execution, expect_version: int, *, streaming: bool, keyed: bool) -> tuple[JSON, ...]:
    """The events of a save that go into the task's event log. Every change is an event whose log number is its
    generation: a client whose streaming send was cut resumes from the log, a subscriber follows it, a
    long-poll waits on it, a keyed send's replay reads it (docs/decisions-a2a.md, "Resumable streams"). One
    save is not logged: a new task's first, from a non-streaming send without an Idempotency-Key, that leaves
    the task terminal. No stream of it exists or can start (no event id was issued; a terminal task takes no
    new subscription), nothing follows or waits on a task that no longer changes, and no replay reads it; the
    log would only be stored, shipped to the store and evicted (a third of a Redis commit's bytes)."""
    settled = execution.task["status"]["state"] in wire.TERMINAL
    if expect_version == 0 and settled and not streaming and not keyed:
        return ()
    return tuple(execution.events)


def _stamped(execution: Execution, generation: int) -> Execution:
    """``execution`` with generations: its events get ``generation + 1`` on, the task the last; a follow-up's
    opening snapshot shows the state of its first event. Copies; the executor's objects stay as they were."""
    events = [stamp_event(event, generation + i) for i, event in enumerate(execution.events, 1)]
    newest = generation + len(events)
    opening = execution.opening
    if opening is not None:
        opening = with_generation(opening, min(generation + 1, newest))
    return Execution(with_generation(execution.task, newest), events, opening)
