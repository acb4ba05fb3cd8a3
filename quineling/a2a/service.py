"""``A2AService``: the one binding-agnostic request handler behind JSON-RPC, HTTP+JSON and v0.3 compat.

Methods take 1.0 request JSON (``params``) and a :class:`CallContext`, return 1.0 response JSON (or an
iterator of StreamResponse dicts), and raise :class:`~quineling.a2a.errors.A2AError`. Streaming methods
validate eagerly: they raise before returning the iterator when the request fails before its first event.

One atomic commit per request: a SendMessage that dispatches saves its task inside the runtime's own commit
(``Runtime.dispatch(…, scope=tenant, attach=…)``), so the runtime's change set and the task are stored in one
atomic step — never one without the other (docs/decisions-a2a.md, "One atomic commit per request"). That
needs the runtime's state and the task store on one backend; any other runtime (a test double, or state on
another backend) is dispatched first and its task saved after (:class:`SeparateCommits`).

Concurrent updates: every change to a stored task is a conditional save (``expect_version`` = the version
it was loaded at; a new task expects 0), so two requests acting on one task can never silently overwrite each
other. What the loser of such a race gets is decided in :meth:`A2AService.cancel_task` and
:meth:`A2AService._follow_up` (and written down in docs/decisions-a2a.md, "Concurrent updates to one task").
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from quineling.a2a import wire
from quineling.a2a.errors import (
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from quineling.a2a.executor import (
    Dispatcher,
    DispatchOnce,
    Execution,
    Outcome,
    Pending,
    QuinelingExecutor,
)
from quineling.a2a.model import new_id, normalize_message, present_task
from quineling.runtime.errors import QuinelingError
from stores.base import TaskQuery, TaskStore, TaskWrite, Versioned, task_partition
from stores.errors import (
    InvalidCursor,
    StoreError,
    StoreUnavailable,
    TaskConflict,
    TaskStoreFull,
    TaskTooLarge,
)

log = logging.getLogger(__name__)
JSON = dict[str, Any]
KEEPALIVE = None  # what subscribe_to_task(..., keepalive=True) yields when the SSE layer should ping
CONFLICT_ATTEMPTS = 3  # conditional saves per request before a task that keeps changing is given up on


@dataclass(frozen=True, slots=True)
class CallContext:
    tenant: str = ""
    user: str = "anonymous"
    requested_version: str = "1.0"
    extensions: tuple[str, ...] = ()

    @property
    def scope(self) -> str:
        """The task scope ``tenant/user``: tasks are visible only to their tenant and user. The tenant is
        escaped, so a ``/`` in it cannot move the boundary to the user part."""
        return f"{quote(self.tenant or 'default', safe='')}/{self.user}"

    @property
    def partition(self) -> str:
        """The tenant as the stores know it: the task store's capacity partition and the runtime's scope,
        so the runtime's state and the tenant's tasks commit together (``stores.base.task_partition``)."""
        return task_partition(self.scope)


class AttachingDispatcher(Protocol):
    """What ``Runtime.dispatch`` offers: commit a write built from the outcome together with its effects."""

    def dispatch(
        self,
        request: Any,
        *,
        scope: str | None = None,
        attach: Callable[[Outcome], TaskWrite] | None = None,
    ) -> JSON: ...


class SeparateCommits:
    """:class:`AttachingDispatcher` over a plain dispatcher: dispatch, then save the task — two steps, so a
    crash in between leaves the runtime's effect without its task. Only for runtimes whose state is not in the
    task store's backend; the runtime scope is the plain dispatcher's own."""

    def __init__(self, runtime: Dispatcher) -> None:
        self._runtime = runtime

    def dispatch(
        self,
        request: Any,
        *,
        scope: str | None = None,
        attach: Callable[[Outcome], TaskWrite] | None = None,
    ) -> JSON:
        assert attach is not None
        try:
            outcome = self._runtime.dispatch(request)
        except QuinelingError as exc:
            attach(exc).save()
            raise
        attach(outcome).save()
        return outcome


def commits_tasks_atomically(runtime: Any, task_store: TaskStore) -> bool:
    """Whether ``runtime`` can commit this task store's saves in its own commits: it accepts ``attach`` and
    its state store is on the task store's backend."""
    dispatch = getattr(runtime, "dispatch", None)
    store = getattr(runtime, "store", None)
    if dispatch is None or store is None or "attach" not in inspect.signature(dispatch).parameters:
        return False
    return task_store.joins(store)


@dataclass(frozen=True, slots=True)
class StreamSettings:
    keepalive_seconds: float = 15.0
    subscribe_max_seconds: float = 3600.0  # a subscriber re-attaches after this (bounded total wait)


class A2AService:
    def __init__(
        self,
        runtime: Dispatcher,
        task_store: TaskStore,
        card_provider: Callable[[str], JSON],
        *,
        clock: Callable[[], str] = wire.now_rfc3339,
        stream: StreamSettings | None = None,
    ) -> None:
        self.task_store = task_store
        self.executor = QuinelingExecutor(runtime, clock)
        # Decided once: whether SendMessage commits the runtime's effects and the task in one step.
        self.atomic = commits_tasks_atomically(runtime, task_store)
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
        config = wire.require_object(wire.field(params, "configuration"), "configuration")
        history_length = wire.history_length(config)
        # returnImmediately/blocking and acceptedOutputModes are read for validation only: the work is
        # synchronous, and push configs are ignored because pushNotifications is off (reference §5).
        wire.boolean(config, "returnImmediately")
        task_id = message.get("taskId")
        if task_id:
            return self._follow_up(ctx, task_id, message), history_length
        pending = self.executor.prepare_start(new_id(), message.get("contextId") or new_id(), message)
        try:
            execution = self._dispatch_and_save(ctx, pending, 0, self._dispatcher()[0])
        except TaskConflict:  # a fresh random id already taken: not expected to happen
            raise InternalError("Task storage already holds a task with the generated id; retry") from None
        return execution, history_length

    def _dispatcher(self) -> tuple[AttachingDispatcher, DispatchOnce | None]:
        """What dispatches one message, and (when its effects commit apart from the task) the
        :class:`DispatchOnce` that remembers whether they did."""
        if self.atomic:
            return self.executor.runtime, None  # type: ignore[return-value]
        once = DispatchOnce(self.executor.runtime)
        return SeparateCommits(once), once

    def _dispatch_and_save(
        self, ctx: CallContext, pending: Pending, expect_version: int, dispatcher: AttachingDispatcher
    ) -> Execution:
        """Dispatch ``pending`` and save its task conditionally, in the runtime's commit when atomic.

        :class:`TaskConflict` propagates (the caller decides; with an atomic dispatcher nothing of the
        request was committed then); other store failures become protocol errors."""
        if not pending.needs_dispatch:
            self._save(ctx, pending.before, expect_version=expect_version)
            return pending.before
        finished: list[Execution] = []

        def attach(outcome: Outcome) -> TaskWrite:
            # Called again for each recomputed outcome: the last call is the write that was committed.
            execution = pending.finish(outcome)
            finished.append(execution)
            return TaskWrite(
                self.task_store, ctx.scope, execution.task, _logged(execution, expect_version), expect_version
            )

        try:
            dispatcher.dispatch(pending.request, scope=ctx.partition, attach=attach)
        except QuinelingError:
            pass  # recorded on the task as FAILED, in the same commit
        except TaskConflict:
            raise
        except StoreError as exc:
            raise self._store_failure(exc) from None
        if not finished:  # pragma: no cover - a dispatcher that answered without asking for the task
            raise InternalError("The runtime answered without recording the task; retry")
        return finished[-1]

    def _follow_up(self, ctx: CallContext, task_id: str, message: JSON) -> Execution:
        """Load the task and its version, check it still accepts messages, dispatch, save conditionally.

        If another request saved the task between our load and our save, the save conflicts. With an atomic
        dispatcher nothing of this message was committed then (the runtime's effects ride along the save), so
        the message is simply applied again to the fresh task — dispatched again — while the task is still
        non-terminal. Otherwise the runtime effect has already committed, and the message is applied again
        *without dispatching again* (the first outcome is replayed). If the task has meanwhile become terminal,
        or vanished, or keeps changing, the request fails with a retryable InternalError that says so, and the
        stored task is left as the other request made it.
        """
        current = self._load_versioned(ctx, task_id)
        task = self._accepting(task_id, current.value, message)
        dispatcher, once = self._dispatcher()
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            pending = self.executor.prepare_resume(task, message)
            try:
                return self._dispatch_and_save(ctx, pending, current.version, dispatcher)
            except TaskConflict:
                if attempt == CONFLICT_ATTEMPTS:
                    raise self._concurrent_change(task_id, once, "kept changing") from None
            current = self._load_versioned(ctx, task_id)
            if current.value is None:
                raise self._concurrent_change(task_id, once, "is no longer available")
            state = current.value["status"]["state"]
            if state in wire.TERMINAL:
                raise self._concurrent_change(task_id, once, f"is now {state}", state)
            task = current.value
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _accepting(task_id: str, task: JSON | None, message: JSON) -> JSON:
        """``task`` if it accepts ``message`` as a follow-up; otherwise the protocol error (D6 for terminal)."""
        if task is None:
            # Unknown, evicted, expired or another scope's: all look the same (no existence leaks).
            raise TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})
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

    @staticmethod
    def _concurrent_change(
        task_id: str, once: DispatchOnce | None, now: str, state: str | None = None
    ) -> InternalError:
        """The loser of a follow-up race: not recorded on the task. Its runtime request committed nothing
        when the dispatch is atomic (``once`` is ``None``); otherwise it may have run."""
        if once is not None and once.dispatched:
            effect = (
                "The runtime request was executed and its effects are committed, but its result was not "
                "recorded on the task; resend it only with the same application request keys (which replay it)."
            )
        elif once is None:
            effect = "The message was not recorded on the task, and its runtime request committed nothing."
        else:
            effect = "The message was not recorded on the task."
        metadata = {"taskId": task_id, "retryable": "true"}
        if state:
            metadata["taskState"] = state
        return InternalError(
            f"Task {task_id} was changed by a concurrent request while this message was processed and {now}. "
            f"{effect} Use GetTask to see the task's current state.",
            metadata=metadata,
        )

    # -- tasks ----------------------------------------------------------------------------------------

    def get_task(self, params: JSON, ctx: CallContext) -> JSON:
        params = wire.require_object(params, "params")
        task_id = wire.string(params, "id", required=True)
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
            raise self._store_failure(exc) from exc
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
        InternalError. Nothing of the other request is ever overwritten."""
        params = wire.require_object(params, "params")
        task_id = wire.string(params, "id", required=True)
        for _ in range(CONFLICT_ATTEMPTS):
            current = self._load_versioned(ctx, task_id)
            task = current.value
            if task is None:
                raise TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})
            state = task["status"]["state"]
            if state == "TASK_STATE_CANCELED":
                return present_task(task)  # idempotent (D5)
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

    def subscribe_to_task(self, params: JSON, ctx: CallContext, *, keepalive: bool = False) -> Iterator[JSON]:
        """First event: the current task; then its later events until a terminal state.

        With ``keepalive`` the iterator yields :data:`KEEPALIVE` (``None``) when nothing happened for
        ``keepalive_seconds``, so an SSE writer can send a comment line.
        """
        params = wire.require_object(params, "params")
        task_id = wire.string(params, "id", required=True)
        # Position first, then snapshot: an event landing in between is sent twice, never lost.
        try:
            position = self.task_store.last_event_id(ctx.scope, task_id)
        except StoreError as exc:
            raise self._store_failure(exc) from exc
        task = self._load(ctx, task_id)
        if task["status"]["state"] in wire.TERMINAL:
            raise UnsupportedOperationError(
                f"Task {task_id} is in terminal state {task['status']['state']}; nothing to subscribe to",
                metadata={"taskId": task_id},
            )
        return self._tail(ctx, task, position, keepalive)

    def _tail(self, ctx: CallContext, task: JSON, position: str | None, keepalive: bool) -> Iterator[JSON]:
        yield {"task": present_task(task)}
        settings = self.stream_settings
        deadline = time.monotonic() + settings.subscribe_max_seconds
        while (remaining := deadline - time.monotonic()) > 0:
            events = self.task_store.read_events(
                ctx.scope, task["id"], position, min(settings.keepalive_seconds, remaining)
            )
            if not events:
                if keepalive:
                    yield KEEPALIVE
                continue
            for event in events:
                position = event.event_id
                if "task" in event.payload:
                    continue  # a task snapshot is only ever the first event of a stream
                yield event.payload
                status = event.payload.get("statusUpdate", {}).get("status", {})
                if status.get("state") in wire.TERMINAL:
                    return

    # -- push notifications (capability off) ----------------------------------------------------------

    def _push_off(self, params: JSON | None, ctx: CallContext) -> JSON:
        raise PushNotificationNotSupportedError("Push notifications are not supported by this agent")

    create_push_config = _push_off
    get_push_config = _push_off
    list_push_configs = _push_off
    delete_push_config = _push_off

    # -- store access ---------------------------------------------------------------------------------

    def _load(self, ctx: CallContext, task_id: str) -> JSON:
        try:
            task = self.task_store.load(ctx.scope, task_id)
        except StoreError as exc:
            raise self._store_failure(exc) from exc
        if task is None:
            # Unknown, evicted, expired or another scope's: all look the same (no existence leaks).
            raise TaskNotFoundError(f"Task not found: {task_id}", metadata={"taskId": task_id})
        return task

    def _load_versioned(self, ctx: CallContext, task_id: str) -> Versioned:
        """The task and its version for a read-modify-write; ``Versioned(None, 0)`` when it is not there."""
        try:
            return self.task_store.load_versioned(ctx.scope, task_id)
        except StoreError as exc:
            raise self._store_failure(exc) from exc

    def _save(self, ctx: CallContext, execution: Execution, *, expect_version: int) -> None:
        """Save conditionally. :class:`TaskConflict` propagates (the caller decides); other failures become
        protocol errors."""
        try:
            self.task_store.save(
                ctx.scope, execution.task, _logged(execution, expect_version), expect_version=expect_version
            )
        except TaskConflict:
            raise
        except StoreError as exc:
            raise self._store_failure(exc) from exc

    @staticmethod
    def _store_failure(exc: StoreError) -> InternalError:
        # With an atomic dispatch nothing of the request was committed; otherwise runtime effects of the
        # dispatch (if any) already are, and the client keeps its application retry keys (seed "Lifecycle and
        # errors").
        if isinstance(exc, TaskTooLarge):
            return InternalError("Task storage refused the task: it exceeds the per-task size limit")
        if isinstance(exc, TaskStoreFull):
            return InternalError(
                "Task storage is full: no terminal or paused task can be evicted; retry later"
            )
        if isinstance(exc, StoreUnavailable):
            # An outage hits every request: one line each, not a traceback each.
            log.warning("store unavailable: %s", exc)
            return InternalError("Storage is unavailable; retry later")
        log.exception("store failure")
        return InternalError("Storage failed; retry later")


def _logged(execution: Execution, expect_version: int) -> tuple[JSON, ...]:
    """The events of a save that go into the task's event log.

    A subscriber takes its log position and then the task snapshot (:meth:`A2AService.subscribe_to_task`),
    and a snapshot only exists once the task's first save has committed. So the first save's events
    (``expect_version`` 0) can never be read by anyone — the snapshot already holds them — and logging them
    would only double the bytes of every new task. The log starts with the task's first later update."""
    return () if expect_version == 0 else tuple(execution.events)
