"""Open subscription streams: the per-worker cap (``QUINELING_MAX_STREAMS``) and telling a stream that it should
end early — its client hung up, or the worker is stopping (docs/deployment.md, "Worker model").

A subscription waits for its task's next event in slices of at most ``StreamSettings.poll_seconds`` and asks
:func:`stop_probe` between slices, so a client that went away frees its slot (a greenlet or thread, and on Redis
the connection of the blocking read) within about a slice, not at the next keep-alive write.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from flask import Response

from quineling.a2a.stream_slots import RETRY_AFTER_SECONDS, StreamLimitError, StreamSlots
from quineling.worker_state import worker_stopping

__all__ = ["RETRY_AFTER_SECONDS", "StreamLimitError", "StreamSlots", "held_stream", "stop_probe"]


def held_stream(
    slots: StreamSlots, start: Callable[[], Response], refuse: Callable[[StreamLimitError], Response]
) -> Response:
    """``start()``'s response holding one of ``slots`` until the response is closed (the stream ended or the
    client left), or ``refuse``'s rendering of :class:`StreamLimitError` as 503 with ``Retry-After``.

    The slot is tied to the response's close, not to the generator's ``finally``: a generator the server never
    started (the client left before the first byte) is closed without running its ``finally``."""
    release = slots.acquire()
    if release is None:
        response = refuse(StreamLimitError(slots.limit))
        response.status_code = 503
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    try:
        response = start()
    except BaseException:
        release()
        raise
    response.call_on_close(release)
    return response


def _never() -> bool:
    return False


def stop_probe(environ: Mapping[str, Any]) -> Callable[[], bool]:
    """A cheap check for this request's stream: has its client closed the connection, or is the worker
    stopping (then the client subscribes again, to a worker that is not)?

    It peeks at the client socket gunicorn (``gunicorn.socket``) or werkzeug's server (``werkzeug.socket``)
    puts in the WSGI environ, without blocking and without consuming a byte: end of file or a reset means
    gone. Where there is no plain socket (TLS terminated by gunicorn itself, an in-process test client) only
    the worker's stop is seen, and a gone client is noticed at the next keep-alive write."""
    sock = environ.get("gunicorn.socket") or environ.get("werkzeug.socket")
    if not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket):
        return worker_stopping

    def should_stop() -> bool:
        return worker_stopping() or _peer_closed(sock)

    return should_stop


def _peer_closed(sock: socket.socket) -> bool:
    try:
        timeout = sock.gettimeout()
        sock.settimeout(0.0)  # this call only; the server's reads and writes keep their own mode
        try:
            return sock.recv(1, socket.MSG_PEEK) == b""  # b"": an orderly close; data: a pipelined request
        except BlockingIOError:
            return False  # nothing to read: still connected
        finally:
            sock.settimeout(timeout)
    except OSError:
        return True  # reset by the peer, or already closed by the server
