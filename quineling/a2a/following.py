"""``Following``: watching a task change — SubscribeToTask, its resumption, and GetTask's long-poll.

A subscriber gets the task, then its later events until a terminal state; a client resuming a cut stream
(``Last-Event-ID``) gets exactly the events after the one it names (docs/decisions/0014-resumable-streams.md).
A GetTask with ``currentGeneration`` waits, within bounds, for the task to move past it
(:mod:`quineling.a2a.long_poll`). All three read the task's event log, whose numbers are its generations.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

from quineling.a2a import event_ids, wire
from quineling.a2a.context import CallContext
from quineling.a2a.errors import UnsupportedOperationError, store_failure
from quineling.a2a.event_ids import StreamEvent
from quineling.a2a.generations import generation_of
from quineling.a2a.long_poll import LongPoll
from quineling.a2a.model import present_task
from quineling.a2a.subscription import NotResumable, StreamSettings, event_number, follow
from quineling.a2a.task_access import TaskAccess
from stores.errors import StoreError
from stores.jsontypes import JSON


class Following:
    def __init__(self, tasks: TaskAccess, stream: StreamSettings, long_poll: LongPoll) -> None:
        self.tasks = tasks
        self.stream_settings = stream
        self.long_poll = long_poll

    def subscribe(self, ctx: CallContext, task_id: str, *, keepalive: bool) -> Iterator[JSON | None]:
        """See :meth:`quineling.a2a.service.A2AService.subscribe_to_task`."""
        scope = ctx.scope
        task_store = self.tasks.task_store

        def frame(event: JSON, log_id: str) -> JSON:
            return StreamEvent(event, event_ids.encode(scope, task_id, event_number(log_id)))

        if ctx.last_event_id is not None:
            return self._resume(ctx, task_id, ctx.last_event_id, frame, keepalive)
        task = self.tasks.load(ctx, task_id)
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
                position = task_store.last_event_id(scope, task_id)
            except StoreError as exc:
                raise store_failure(exc) from exc
            task = self.tasks.load(ctx, task_id)
        opening = StreamEvent({"task": present_task(task)}, event_ids.encode(scope, task_id, generation))
        following = follow(
            task_store,
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
        # An unknown or another principal's task: TaskNotFound, as always.
        task = self.tasks.load(ctx, task_id)
        generation = generation_of(task)
        cursor = event_ids.decode(last_event_id.strip(), ctx.scope, task_id)
        if cursor is None or cursor > generation:
            raise NotResumable(task_id, "it was not issued for this task")
        position = f"{cursor}-0"
        backlog = []
        if cursor < generation:
            try:
                backlog = self.tasks.task_store.read_events(ctx.scope, task_id, position, 0)
            except StoreError as exc:
                raise store_failure(exc) from exc
            if not backlog or event_number(backlog[0].event_id) != cursor + 1:
                raise NotResumable(task_id, "it is older than the events this server keeps")
        elif task["status"]["state"] in wire.TERMINAL:
            return iter(())  # nothing was missed, and nothing more will come
        return follow(
            self.tasks.task_store,
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

    def wait_for_change(self, ctx: CallContext, task: JSON, current: int) -> JSON:
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
                    if self.tasks.task_store.read_events(ctx.scope, task_id, position, wait):
                        break
                except StoreError as exc:
                    raise store_failure(exc) from exc
        finally:
            release()
        return self.tasks.load(ctx, task_id)
