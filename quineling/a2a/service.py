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

import math
from collections.abc import Callable, Iterator

from quineling.a2a import wire
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
from quineling.a2a.executor import Dispatcher, Execution, Outcome, Pending, QuinelingExecutor
from quineling.a2a.model import new_id, normalize_message, present_task
from quineling.a2a.subscription import StreamSettings, follow
from quineling.runtime.errors import QuinelingError
from stores.base import TaskQuery, TaskStore, TaskWrite, Versioned
from stores.errors import InvalidCursor, ScopeLimitReached, StoreError, TaskConflict
from stores.jsontypes import JSON
from stores.scopes import ScopeRegistry

CONFLICT_ATTEMPTS = 3  # conditional saves per request before a task that keeps changing is given up on


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

    # -- discovery ------------------------------------------------------------------------------------

    def card(self, version: str = "1.0") -> JSON:
        return self._card(version)

    def get_extended_agent_card(self, params: JSON | None, ctx: CallContext) -> JSON:
        raise UnsupportedOperationError("This agent does not declare an extended agent card")

    # -- messages -------------------------------------------------------------------------------------

    def send_message(self, params: JSON, ctx: CallContext) -> JSON:
        execution, history_length = self._execute(params, ctx)
        return {"task": present_task(execution.task, history_length)}

    def send_message_stream(self, params: JSON, ctx: CallContext) -> Iterator[JSON]:
        # The work is synchronous, so it runs (and fails) here, before the caller commits to a stream.
        execution, history_length = self._execute(params, ctx)
        events = execution.stream()
        events[0] = {"task": present_task(events[0]["task"], history_length)}
        return iter(events)

    def _execute(self, params: JSON, ctx: CallContext) -> tuple[Execution, int | None]:
        params = wire.require_object(params, "params")
        message = normalize_message(wire.field(params, "message"))
        wire.metadata(params)  # validated for every binding alike; the request's metadata is not kept
        config = wire.require_object(wire.field(params, "configuration"), "configuration")
        history_length = wire.history_length(config)
        # returnImmediately/blocking and acceptedOutputModes are read for validation only: the work is
        # synchronous, and push configs are ignored because the pushNotifications capability is off.
        wire.boolean(config, "returnImmediately")
        task_id = message.get("taskId")
        if task_id:
            return self._follow_up(ctx, task_id, message), history_length
        pending = self.executor.prepare_start(new_id(), message.get("contextId") or new_id(), message)
        try:
            execution = self._dispatch_and_save(ctx, pending, 0)
        except TaskConflict:  # a fresh random id already taken: not expected to happen
            raise InternalError("Task storage already holds a task with the generated id; retry") from None
        return execution, history_length

    def _dispatch_and_save(self, ctx: CallContext, pending: Pending, expect_version: int) -> Execution:
        """Dispatch ``pending`` and save its task conditionally in the runtime's commit.

        :class:`TaskConflict` propagates (the caller decides; nothing of the request was committed then);
        other store failures become protocol errors."""
        if not pending.needs_dispatch:
            self._save(ctx, pending.before, expect_version=expect_version)
            return pending.before
        self._admit(ctx)
        finished: list[Execution] = []

        def attach(outcome: Outcome) -> TaskWrite:
            # Called again for each recomputed outcome: the last call is the write that was committed.
            execution = pending.finish(outcome)
            finished.append(execution)
            return TaskWrite(
                self.task_store, ctx.scope, execution.task, _logged(execution, expect_version), expect_version
            )

        try:
            self.runtime.dispatch(pending.request, scope=ctx.partition, attach=attach)
        except QuinelingError:
            pass  # recorded on the task as FAILED, in the same commit
        except TaskConflict:
            raise
        except StoreError as exc:
            raise store_failure(exc) from None
        if not finished:
            raise InternalError("The runtime answered without recording the task; retry")
        self._committed(finished[-1])
        return finished[-1]

    def _follow_up(self, ctx: CallContext, task_id: str, message: JSON) -> Execution:
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
            pending = self.executor.prepare_resume(task, message)
            try:
                return self._dispatch_and_save(ctx, pending, current.version)
            except TaskConflict:
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
        return present_task(self._load(ctx, task_id), history_length)

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
            execution = self.executor.cancel(task)
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

        With ``keepalive`` the iterator yields ``None`` (:data:`~quineling.a2a.subscription.KEEPALIVE`)
        when nothing happened for ``keepalive_seconds``, so an SSE writer can send a comment line.
        """
        params = wire.require_object(params, "params")
        task_id = _task_id(params)
        # Position first, then snapshot: an event landing in between is sent twice, never lost.
        try:
            position = self.task_store.last_event_id(ctx.scope, task_id)
        except StoreError as exc:
            raise store_failure(exc) from exc
        task = self._load(ctx, task_id)
        if task["status"]["state"] in wire.TERMINAL:
            raise UnsupportedOperationError(
                f"Task {task_id} is in terminal state {task['status']['state']}; nothing to subscribe to",
                metadata={"taskId": task_id},
            )
        return follow(
            self.task_store,
            ctx.scope,
            task,
            position,
            self.stream_settings,
            keepalive=keepalive,
            should_stop=ctx.should_stop,
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
        task = self._load_versioned(ctx, task_id).value
        if task is None:
            raise _task_not_found(task_id)
        return task

    def _load_versioned(self, ctx: CallContext, task_id: str) -> Versioned:
        """The task and its version for a read-modify-write; ``Versioned(None, 0)`` when it is not there."""
        try:
            return self.task_store.load_versioned(ctx.scope, task_id)
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

    def _save(self, ctx: CallContext, execution: Execution, *, expect_version: int) -> None:
        """Save conditionally. :class:`TaskConflict` propagates (the caller decides); other failures become
        protocol errors."""
        self._admit(ctx)
        try:
            self.task_store.save(
                ctx.scope, execution.task, _logged(execution, expect_version), expect_version=expect_version
            )
        except TaskConflict:
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


def _logged(execution: Execution, expect_version: int) -> tuple[JSON, ...]:
    """The events of a save that go into the task's event log.

    A subscriber takes its log position and then the task snapshot (:meth:`A2AService.subscribe_to_task`),
    and a snapshot only exists once the task's first save has committed. So the first save's events
    (``expect_version`` 0) can never be read by anyone — the snapshot already holds them — and logging them
    would only double the bytes of every new task. The log starts with the task's first later update."""
    return () if expect_version == 0 else tuple(execution.events)
