"""Following a task's event log for a stream: keep-alives, a bounded total wait, and the end at a terminal
state."""

from __future__ import annotations

import time
from collections.abc import Iterator
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


def follow(
    store: TaskStore,
    scope: str,
    task: JSON,
    position: str | None,
    settings: StreamSettings,
    *,
    keepalive: bool,
) -> Iterator[JSON | None]:
    """The task snapshot, then every logged event after ``position`` until a terminal status update.

    With ``keepalive`` it yields :data:`KEEPALIVE` when nothing happened for ``keepalive_seconds``."""
    yield {"task": present_task(task)}
    deadline = time.monotonic() + settings.subscribe_max_seconds
    while (remaining := deadline - time.monotonic()) > 0:
        events = store.read_events(scope, task["id"], position, min(settings.keepalive_seconds, remaining))
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
