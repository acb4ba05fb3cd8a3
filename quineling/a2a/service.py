"""``A2AService``: the one binding-agnostic request handler behind JSON-RPC, HTTP+JSON and v0.3 compat.

Methods take 1.0 request JSON (``params``) and a :class:`CallContext`, return 1.0 response JSON (or an
iterator of StreamResponse dicts), and raise :class:`~quineling.a2a.errors.A2AError`. Streaming methods
validate eagerly: they raise before returning the iterator when the request fails before its first event.

Concurrent updates: every change to a stored task is a conditional save (``expect_version`` = the version
it was loaded at; a new task expects 0), so two requests acting on one task can never silently overwrite each
other. What the loser of such a race gets is decided in :meth:`A2AService.cancel_task` and
:meth:`A2AService._follow_up` (and written down in docs/decisions-a2a.md, "Concurrent updates to one task").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from quineling.a2a import wire
from quineling.a2a.errors import (
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from quineling.a2a.executor import Dispatcher, DispatchOnce, Execution, QuinelingExecutor
from quineling.a2a.model import new_id, normalize_message, present_task
from stores.base import TaskQuery, TaskStore, Versioned
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
        return f"{self.tenant or 'default'}/{self.user}"


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
        try:
            if task_id:
                return self._follow_up(ctx, task_id, message), history_length
            execution = self.executor.start(new_id(), message.get("contextId") or new_id(), message)
        except (
            StoreError
        ) as exc:  # the runtime's state store (task-store failures are mapped where they occur)
            raise self._store_failure(exc) from None
        try:
            self._save(ctx, execution, expect_version=0)
        except TaskConflict:  # a fresh random id already taken: not expected to happen
            raise InternalError("Task storage already holds a task with the generated id; retry") from None
        return execution, history_length

    def _follow_up(self, ctx: CallContext, task_id: str, message: JSON) -> Execution:
        """Load the task and its version, check it still accepts messages, dispatch, save conditionally.

        If another request saved the task between our load and our save, the runtime effect of this message
        has already committed. The message is then applied again to the fresh task *without dispatching
        again* (the first outcome is replayed) while the task is still non-terminal; if it has meanwhile
        become terminal, or vanished, or keeps changing, the request fails with a retryable InternalError
        that says so, and the stored task is left as the other request made it.
        """
        current = self._load_versioned(ctx, task_id)
        task = self._accepting(task_id, current.value, message)
        once = DispatchOnce(self.executor.runtime)
        execution = self.executor.resume(task, message, once)
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            try:
                self._save(ctx, execution, expect_version=current.version)
                return execution
            except TaskConflict:
                if attempt == CONFLICT_ATTEMPTS:
                    raise self._concurrent_change(task_id, once, "kept changing") from None
            current = self._load_versioned(ctx, task_id)
            if current.value is None:
                raise self._concurrent_change(task_id, once, "is no longer available")
            state = current.value["status"]["state"]
            if state in wire.TERMINAL:
                raise self._concurrent_change(task_id, once, f"is now {state}", state)
            execution = self.executor.resume(current.value, message, once)  # replays, never re-dispatches
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
        task_id: str, once: DispatchOnce, now: str, state: str | None = None
    ) -> InternalError:
        """The loser of a follow-up race: not recorded on the task, though its runtime request may have run."""
        effect = (
            "The runtime request was executed and its effects are committed, but its result was not recorded "
            "on the task; resend it only with the same application request keys (which replay it)."
            if once.dispatched
            else "The message was not recorded on the task."
        )
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
            self.task_store.save(ctx.scope, execution.task, execution.events, expect_version=expect_version)
        except TaskConflict:
            raise
        except StoreError as exc:
            raise self._store_failure(exc) from exc

    @staticmethod
    def _store_failure(exc: StoreError) -> InternalError:
        # Runtime effects of the dispatch (if any) are already committed; the client keeps its application
        # retry keys (seed "Lifecycle and errors").
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
