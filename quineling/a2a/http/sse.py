"""Server-Sent Events: one compact ``data:`` line per event, comments for keep-alives, ``event: error``
for a failure after the stream has started."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from flask import Response, stream_with_context

from quineling.a2a.errors import A2AError, as_a2a_error
from quineling.a2a.event_ids import RETRY_MILLISECONDS
from stores import codec


def compact(value: Any) -> str:
    return codec.dumps(value)


def frames(
    events: Iterable[Any],
    render: Callable[[Any], Any],
    render_error: Callable[[A2AError], Any],
) -> Iterator[str]:
    """``None`` events become ``: keepalive`` comments; a mid-stream error ends the stream with one
    ``event: error`` frame. Closing the response (``GeneratorExit``) only unsubscribes.

    An event that knows its SSE id (:class:`~quineling.a2a.event_ids.StreamEvent`) carries it as ``id:``, so a
    cut client can resume with ``Last-Event-ID``; the first event also carries the ``retry:`` hint."""
    iterator = iter(events)
    retry = f"retry: {RETRY_MILLISECONDS}\n"
    while True:
        try:
            event = next(iterator)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - any failure after the headers must still reach the client
            yield f"event: error\ndata: {compact(render_error(as_a2a_error(exc)))}\n\n"
            return
        if event is None:
            yield ": keepalive\n\n"
            continue
        event_id = getattr(event, "event_id", None)
        head = retry + (f"id: {event_id}\n" if event_id else "")
        retry = ""
        yield f"{head}data: {compact(render(event))}\n\n"


def sse_response(
    events: Iterable[Any],
    render: Callable[[Any], Any],
    render_error: Callable[[A2AError], Any],
) -> Response:
    response = Response(
        stream_with_context(frames(events, render, render_error)), mimetype="text/event-stream"
    )
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    return response
