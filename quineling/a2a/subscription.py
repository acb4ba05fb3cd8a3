"""Following a task's event log for a stream: keep-alives, a bounded total wait, the end at a terminal state,
and an early end when the stream's client is gone or its worker stops."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from quineling.a2a import wire
from quineling.a2a.errors import InvalidParamsError
from stores.base import TaskEvents, TaskStore
from stores.jsontypes import JSON

KEEPALIVE = None  # what a subscription yields when the SSE layer should ping


@dataclass(frozen=True, slots=True)
class StreamSettings:
    keepalive_seconds: float = 3.0  # below the official clients' read timeouts (a2a-sdk: 5 s)
    subscribe_max_seconds: float = 3600.0  # a subscriber re-attaches after this (bounded total wait)
    # The longest single wait for events. Between waits the stream asks whether to stop, so a client that
    # went away frees its greenlet or thread (and on Redis the blocking read's connection) within about this
    # long; each wait is one blocking read (one Redis round trip per open stream and slice).
    poll_seconds: float = 1.0


def _never() -> bool:
    return False


def follow(
    store: TaskStore,
    scope: str,
    task_id: str,
    position: str | None,
    settings: StreamSettings,
    *,
    keepalive: bool,
    should_stop: Callable[[], bool] = _never,
    frame: Callable[[JSON, str], JSON] = lambda event, _event_id: event,
    backlog: TaskEvents | None = None,
    numbered: bool = False,
) -> Iterator[JSON | None]:
    """Every logged event after ``position`` (``backlog`` first: events already read after it), each as
    ``frame(event, its log id)``, until a terminal status update, or until ``should_stop()`` (asked between
    waits of at most ``poll_seconds``) says the stream is not wanted.

    ``numbered``: the log's ids are the events' generations (``stores.base.TaskStore``, "Event log"), so an
    event that does not follow its predecessor by exactly one is a gap (events trimmed from the log while
    this stream waited): the stream then ends with :class:`NotResumable` rather than skip silently.

    With ``keepalive`` it yields :data:`KEEPALIVE` when nothing happened for ``keepalive_seconds``."""
    deadline = time.monotonic() + settings.subscribe_max_seconds
    quiet_since = time.monotonic()
    pending = list(backlog or ())
    while True:
        for event in pending:
            if (
                numbered
                and position is not None
                and event_number(event.event_id) != event_number(position) + 1
            ):
                raise NotResumable(task_id, "the server's event log no longer holds every event after it")
            position = event.event_id
            if "task" in event.payload:
                continue  # a task snapshot is only ever the first event of a stream
            yield frame(event.payload, event.event_id)
            status = event.payload.get("statusUpdate", {}).get("status", {})
            if status.get("state") in wire.TERMINAL:
                return
        pending = []
        if (remaining := deadline - (now := time.monotonic())) <= 0:
            return
        if should_stop():
            return
        wait = min(settings.poll_seconds, remaining)
        if keepalive:
            if (until_ping := quiet_since + settings.keepalive_seconds - now) <= 0:
                yield KEEPALIVE
                quiet_since = now
                continue
            wait = min(wait, until_ping)
        pending = store.read_events(scope, task_id, position, wait)
        if pending:
            quiet_since = time.monotonic()


def event_number(event_id: str) -> int:
    """The number of a log id ``"<number>-<n>"``."""
    return int(event_id.split("-", 1)[0])


class NotResumable(InvalidParamsError):
    """A ``Last-Event-ID`` this server cannot resume after without a gap or a wrong event: the client must
    read the task afresh (docs/decisions/0014-resumable-streams.md)."""

    def __init__(self, task_id: str, why: str) -> None:
        super().__init__(
            f"Last-Event-ID cannot resume the stream of task {task_id}: {why}. Call GetTask for the task's "
            "current state, then subscribe again without Last-Event-ID.",
            metadata={"taskId": task_id, "resumable": "false"},
        )
