"""``A2AService``: the one binding-agnostic request handler behind JSON-RPC, HTTP+JSON and v0.3 compat.

Methods take 1.0 request JSON (``params``) and a :class:`CallContext`, return 1.0 response JSON (or an
iterator of StreamResponse dicts), and raise :class:`~quineling.a2a.errors.A2AError`. Streaming methods
validate eagerly: they raise before returning the iterator when the request fails before its first event.
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
from quineling.a2a.executor import Dispatcher, Execution, QuinelingExecutor
from quineling.a2a.model import new_id, normalize_message, present_task
from stores.base import TaskQuery, TaskStore
from stores.errors import InvalidCursor, StoreError, TaskStoreFull, TaskTooLarge

log = logging.getLogger(__name__)
JSON = dict[str, Any]
KEEPALIVE = None  # what subscribe_to_task(..., keepalive=True) yields when the SSE layer should ping


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
        if task_id:
            task = self._load(ctx, task_id)
            if message.get("contextId") and message["contextId"] != task["contextId"]:
                raise InvalidParamsError(
                    f"contextId {message['contextId']!r} does not match task {task_id!r}",
                )
            if task["status"]["state"] in wire.TERMINAL:
                raise UnsupportedOperationError(
                    f"Task {task_id} is in terminal state {task['status']['state']} and accepts no messages",
                    metadata={"taskId": task_id},
                )
            execution = self.executor.resume(task, message)
        else:
            execution = self.executor.start(new_id(), message.get("contextId") or new_id(), message)
        self._save(ctx, execution)
        return execution, history_length

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
        params = wire.require_object(params, "params")
        task_id = wire.string(params, "id", required=True)
        task = self._load(ctx, task_id)
        state = task["status"]["state"]
        if state == "TASK_STATE_CANCELED":
            return present_task(task)  # idempotent (D5)
        if state in wire.TERMINAL:
            raise TaskNotCancelableError(
                f"Task {task_id} is {state} and cannot be canceled", metadata={"taskId": task_id}
            )
        execution = self.executor.cancel(task)
        self._save(ctx, execution)
        return present_task(execution.task)

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

    def _save(self, ctx: CallContext, execution: Execution) -> None:
        try:
            self.task_store.save(ctx.scope, execution.task, execution.events)
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
        log.exception("task store failure")
        return InternalError("Task storage is unavailable")
