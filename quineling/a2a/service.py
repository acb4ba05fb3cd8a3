"""``A2AService``: the one binding-agnostic request handler behind JSON-RPC, HTTP+JSON and v0.3 compat.

Methods take 1.0 request JSON (``params``) and a :class:`~quineling.a2a.context.CallContext`, return 1.0
response JSON (or an iterator of StreamResponse dicts), and raise :class:`~quineling.a2a.errors.A2AError`.
Streaming methods validate eagerly: they raise before returning the iterator when the request fails before
its first event.

This module is the facade: the card, GetTask, ListTasks and CancelTask. Sending (a new task, a follow-up and
its race, an idempotent replay) is :mod:`quineling.a2a.sending`; following a task (subscribe, resume,
long-poll) is :mod:`quineling.a2a.following`; how a request reads and conditionally writes its tasks is
:mod:`quineling.a2a.task_access` (docs/decisions/0008-concurrent-updates-to-one-task.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from quineling.a2a import wire
from quineling.a2a.context import CallContext
from quineling.a2a.errors import (
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    UnsupportedOperationError,
    store_failure,
)
from quineling.a2a.executor import Dispatcher, QuinelingExecutor
from quineling.a2a.following import Following
from quineling.a2a.generations import generation_of
from quineling.a2a.long_poll import LongPoll
from quineling.a2a.model import present_task
from quineling.a2a.sending import IDEMPOTENCY_TTL_SECONDS, Sending
from quineling.a2a.subscription import StreamSettings
from quineling.a2a.task_access import CONFLICT_ATTEMPTS, TaskAccess, stamped, task_not_found
from stores.base import TaskQuery, TaskStore
from stores.errors import InvalidCursor, StoreError, TaskConflict
from stores.jsontypes import JSON
from stores.scopes import ScopeRegistry

__all__ = ["CONFLICT_ATTEMPTS", "IDEMPOTENCY_TTL_SECONDS", "A2AService"]


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
        self.executor = QuinelingExecutor(clock)
        self.tasks = TaskAccess(task_store, scopes, on_states)
        self.sending = Sending(runtime, self.tasks, self.executor, idempotency_ttl)
        self.following = Following(self.tasks, stream or StreamSettings(), long_poll or LongPoll())
        self._card = card_provider

    # The collaborators the composition root and the tests reach: each lives with the part that uses it.

    @property
    def runtime(self) -> Dispatcher:
        return self.sending.runtime

    @runtime.setter
    def runtime(self, runtime: Dispatcher) -> None:
        self.sending.runtime = runtime

    @property
    def task_store(self) -> TaskStore:
        return self.tasks.task_store

    @property
    def long_poll(self) -> LongPoll:
        return self.following.long_poll

    @property
    def stream_settings(self) -> StreamSettings:
        return self.following.stream_settings

    # -- discovery ------------------------------------------------------------------------------------

    def card(self, version: str = "1.0") -> JSON:
        return self._card(version)

    def get_extended_agent_card(self, params: JSON | None, ctx: CallContext) -> JSON:
        raise UnsupportedOperationError("This agent does not declare an extended agent card")

    # -- messages -------------------------------------------------------------------------------------

    def send_message(self, params: JSON, ctx: CallContext) -> JSON:
        sent = self.sending.execute(params, ctx, streaming=False)
        return {"task": present_task(sent.execution.task, sent.history_length)}

    def send_message_stream(self, params: JSON, ctx: CallContext) -> Iterator[JSON]:
        # The work is synchronous, so it runs (and fails) here, before the caller commits to a stream.
        return iter(self.sending.framed(ctx, self.sending.execute(params, ctx, streaming=True)))

    # -- tasks ----------------------------------------------------------------------------------------

    def get_task(self, params: JSON, ctx: CallContext) -> JSON:
        params = wire.require_object(params, "params")
        task_id = _task_id(params)
        history_length = wire.history_length(params)
        current = wire.integer(params, "currentGeneration")
        if current is not None and current < 0:
            raise InvalidParamsError("currentGeneration must be a non-negative integer")
        task = self.tasks.load(ctx, task_id)
        if current is not None and generation_of(task) <= current:
            task = self.following.wait_for_change(ctx, task, current)
        return present_task(task, history_length)

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
            current = self.tasks.load_versioned(ctx, task_id)
            task = current.value
            if task is None:
                raise task_not_found(task_id)
            state = task["status"]["state"]
            if state == "TASK_STATE_CANCELED":
                return present_task(task)
            if state in wire.TERMINAL:
                raise TaskNotCancelableError(
                    f"Task {task_id} is {state} and cannot be canceled", metadata={"taskId": task_id}
                )
            execution = stamped(self.executor.cancel(task), generation_of(task))
            try:
                self.tasks.save(ctx, execution, expect_version=current.version)
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
        is refused with :class:`~quineling.a2a.subscription.NotResumable` (docs/decisions/0014-resumable-streams.md).

        With ``keepalive`` the iterator yields ``None`` (:data:`~quineling.a2a.subscription.KEEPALIVE`)
        when nothing happened for ``keepalive_seconds``, so an SSE writer can send a comment line.
        """
        params = wire.require_object(params, "params")
        return self.following.subscribe(ctx, _task_id(params), keepalive=keepalive)

    # -- push notifications (capability off) ----------------------------------------------------------

    def _push_off(self, params: JSON | None, ctx: CallContext) -> JSON:
        raise PushNotificationNotSupportedError("Push notifications are not supported by this agent")

    create_push_config = _push_off
    get_push_config = _push_off
    list_push_configs = _push_off
    delete_push_config = _push_off


def _task_id(params: JSON) -> str:
    task_id = wire.string(params, "id", required=True)
    assert task_id is not None  # required=True raises instead
    return task_id
