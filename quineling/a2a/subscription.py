"""Following a task's event log for a stream: keep-alives, a bounded total wait, the end at a terminal state,
and an early end when the stream's client is gone or its worker stops."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from quineling.a2a import wire
from quineling.a2a.model import present_task
from stores.base import TaskStore
from stores.jsontypes import JSON

KEEPALIVE = None  # what a subscription yields when the SSE layer should ping


@dataclass(frozen=True, slots=True)
class StreamSettings:
    keepalive_seconds: float = 15.0
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
    task: JSON,
    position: str | None,
    settings: StreamSettings,
    *,
    keepalive: bool,
    should_stop: Callable[[], bool] = _never,
) -> Iterator[JSON | None]:
    """The task snapshot, then every logged event after ``position`` until a terminal status update, or
    until ``should_stop()`` (asked between waits of at most ``poll_seconds``) says the stream is not wanted.

    With ``keepalive`` it yields :data:`KEEPALIVE` when nothing happened for ``keepalive_seconds``."""
    yield {"task": present_task(task)}
    deadline = time.monotonic() + settings.subscribe_max_seconds
    quiet_since = time.monotonic()
    while (remaining := deadline - (now := time.monotonic())) > 0:
        if should_stop():
            return
        wait = min(settings.poll_seconds, remaining)
        if keepalive:
            if (until_ping := quiet_since + settings.keepalive_seconds - now) <= 0:
                yield KEEPALIVE
                quiet_since = now
                continue
            wait = min(wait, until_ping)
        events = store.read_events(scope, task["id"], position, wait)
        if not events:
            continue
        quiet_since = time.monotonic()
        for event in events:
            position = event.event_id
            if "task" in event.payload:
                continue  # a task snapshot is only ever the first event of a stream
            yield event.payload
            status = event.payload.get("statusUpdate", {}).get("status", {})
            if status.get("state") in wire.TERMINAL:
                return
