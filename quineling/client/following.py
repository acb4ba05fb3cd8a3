"""Following a task's event stream to its end: state validation, de-duplication and resumption.

A stream that breaks (connection lost, stream timeout, the server closing it before the task reached a terminal
state) is resumed with SubscribeToTask, after the retry policy's backoff: with ``Last-Event-ID`` set to the last
SSE ``id:`` seen when the server sends ids (events it replays are skipped by id), otherwise by subscribing
afresh, whose first event — the task's current snapshot — is skipped when it equals the last one yielded. A
task that became terminal while the stream was down cannot be subscribed to afresh; its final state is then read
with GetTask — unless the agent declares resumable streams (``resumable``) and an id was seen: such an agent
replays the missed events up to the terminal one, so the subscription is made with ``Last-Event-ID`` at once,
and only if the agent refuses the id (it left its event log) does the client fall back to GetTask. Every state seen goes through the task's :class:`TaskStateMachine`, so an illegal transition raises
:class:`ProtocolError` naming both states.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from quineling.client.errors import AgentError, AgentUnreachable, ClientTimeout
from quineling.client.http import SSEItem, StreamCut
from quineling.client.models import (
    ArtifactUpdate,
    Message,
    StatusUpdate,
    StreamEvent,
    Task,
    TaskState,
    parse_stream_response,
)
from quineling.client.retry import RetryPolicy
from quineling.client.states import TaskStateMachine

SEEN_IDS = 4096  # event ids remembered for de-duplication

Opener = Callable[[str, dict[str, Any], str | None, float | None], Iterator[SSEItem]]


def follow(
    open_stream: Opener,
    op: str,
    params: dict[str, Any],
    *,
    retry: RetryPolicy,
    resume: bool = True,
    task_id: str = "",
    get_task: Callable[[str], Task] | None = None,
    deadline: float | None = None,
    observe: Callable[[str, TaskState], None] | None = None,
    initial: TaskState | None = None,
    resumable: bool = False,
) -> Iterator[StreamEvent]:
    """``initial``: the task's state as known before the stream opened (the stream must follow from it);
    ``observe`` is told every state seen; ``resumable``: the agent honours ``Last-Event-ID`` on a terminal
    task too (Quineling's resumable-streams extension)."""
    machine = TaskStateMachine(task_id, initial)
    seen: deque[str] = deque(maxlen=SEEN_IDS)
    seen_set: set[str] = set()
    last_id: str | None = None
    last_task_raw: Any = None
    attempt = 0
    resumed = False
    while True:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise ClientTimeout("the deadline passed while following the task's stream")
        replaying = resumed and resumable and last_id is not None
        try:
            for item in open_stream(op, params, last_id, remaining):
                if item.id:
                    if item.id in seen_set:
                        continue
                    if len(seen) == seen.maxlen:
                        seen_set.discard(seen[0])
                    seen.append(item.id)
                    seen_set.add(item.id)
                    last_id = item.id
                event = parse_stream_response(item.data)
                if isinstance(event, Message) and not machine.task_id:
                    yield event
                    return  # a message-only answer: the stream is done
                state = _state(event)
                if not machine.task_id:
                    machine.task_id = _task_id(event)
                if state is not None:
                    machine.advance(state)
                    if observe is not None:
                        observe(machine.task_id, state)
                if isinstance(event, Task):
                    if resumed and not item.id and event.raw == last_task_raw:
                        continue  # the re-subscription's snapshot of what was already seen
                    last_task_raw = event.raw
                attempt = 0
                yield event
                if _done(machine.state, op):
                    return
            if _done(machine.state, op) or not machine.task_id:
                return
            cut = "the agent closed the stream before the task finished"
        except StreamCut as exc:
            cut = f"the stream broke ({exc})"
        except ClientTimeout:
            if deadline is not None and time.monotonic() >= deadline:
                raise
            cut = "the stream went silent"
        except AgentError:
            if not replaying:
                raise
            # The agent refused the id (older than its log, say): start over from the task as it is.
            resumable, last_id, cut = False, None, "the agent could not resume from the last event id"
        if not resume or not machine.task_id:
            raise AgentUnreachable(
                f"{cut}; it was not resumed", hint="subscribe to the task to follow it again"
            )
        wait = retry.delay(attempt, None)
        if wait is None:
            raise AgentUnreachable(f"{cut}, and {attempt} attempts to resume it failed",
                                   hint=f"task {machine.task_id} may still be running: get or subscribe to it")  # fmt: skip
        retry.sleep(wait)
        attempt += 1
        op, params, resumed = "SubscribeToTask", {"id": machine.task_id}, True
        if resumable and last_id is not None:
            continue  # the agent replays what was missed, through the terminal event if there is one
        try:
            yield from _finish_if_terminal(machine, get_task, last_task_raw)
        except _Finished:
            return


class _Finished(Exception):  # control flow: the task ended while the stream was down
    pass


def _finish_if_terminal(
    machine: TaskStateMachine, get_task: Callable[[str], Task] | None, last_raw: Any
) -> Iterator[Task]:
    """Before re-subscribing: a task that ended meanwhile cannot be subscribed to (UnsupportedOperation), so
    read it; if it is terminal, yield its final snapshot and stop."""
    if get_task is None:
        return
    try:
        task = get_task(machine.task_id)
    except AgentError:
        return
    if task.state.terminal:
        machine.advance(task.state)
        if task.raw != last_raw:
            yield task
        raise _Finished


def _state(event: StreamEvent) -> TaskState | None:
    if isinstance(event, Task | StatusUpdate):
        return event.state
    return None


def _task_id(event: StreamEvent) -> str:
    if isinstance(event, Task):
        return event.id
    if isinstance(event, StatusUpdate | ArtifactUpdate):
        return event.task_id
    return event.task_id


def _done(state: TaskState | None, op: str) -> bool:
    if state is None:
        return False
    # A send's stream ends at an interrupted state too; a subscription stays through INPUT_REQUIRED.
    return state.terminal or (op == "SendStreamingMessage" and state is TaskState.INPUT_REQUIRED)
