"""Server-Sent Events: one compact ``data:`` line per event, comments for keep-alives, ``event: error``
for a failure after the stream has started."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from flask import Response, stream_with_context

from quineling.a2a.errors import A2AError, as_a2a_error
from stores import codec


def compact(value: Any) -> str:
    return codec.dumps(value)


def frames(
    events: Iterable[Any],
    render: Callable[[Any], Any],
    render_error: Callable[[A2AError], Any],
) -> Iterator[str]:
    """``None`` events become ``: keepalive`` comments; a mid-stream error ends the stream with one
    ``event: error`` frame. Closing the response (``GeneratorExit``) only unsubscribes."""
    iterator = iter(events)
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
        else:
            yield f"data: {compact(render(event))}\n\n"


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
