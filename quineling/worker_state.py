"""What the app may ask of the gunicorn worker serving it, while it serves a request: whether the worker has been
told to stop, to close the connection of a request, and a deadline for reads on its socket in the worker's
concurrency model (gevent or threads). The process layer (:mod:`quineling.server.hooks`) records the worker and
each request here through gunicorn's hooks; the app only reads, and never imports the process layer. In process
(tests, ``flask run``) nothing is recorded: the worker never stops and closing is a no-op. Standard library
only, and gevent only where a gevent worker has already patched it in."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# gunicorn's request of each WSGI input stream being served (environ["wsgi.input"] is the request's body), so
# the app can have a connection closed (close_connection). The value is a weak reference: the request holds
# its body (req.body), so a strong one would keep every entry's key alive — every request, its body, buffers
# and socket objects, about 2.4 KiB per request, for the worker's life. Weak both ways, an entry goes when
# gunicorn drops the request.
_requests_by_input: weakref.WeakKeyDictionary[Any, weakref.ref[Any]] = weakref.WeakKeyDictionary()

# The gunicorn worker serving this process (none in-process): streams ask it whether to end early.
_serving_worker: Any = None


def note_request(req: Any) -> None:
    """Remember gunicorn's request ``req`` by its WSGI input stream (its body), for :func:`close_connection`."""
    body = getattr(req, "body", None)
    if body is not None:
        _requests_by_input[body] = weakref.ref(req)


def note_worker(worker: Any) -> None:
    """Record the gunicorn worker serving this process, for :func:`worker_stopping`."""
    global _serving_worker
    _serving_worker = worker


def close_connection(wsgi_input: object) -> None:
    """Have gunicorn answer the request of ``wsgi_input`` with ``Connection: close`` and close the connection
    after it, rather than read the rest of a body the app did not read to serve another request — a read
    that has no bound under gevent, so an endless upload would keep the worker busy. A no-op in-process."""
    ref = _requests_by_input.get(wsgi_input)
    req = ref() if ref is not None else None
    if req is not None:
        req.must_close = True  # what gunicorn's own Request.force_close sets, on HTTP/1 and HTTP/2 requests


def worker_stopping() -> bool:
    """True once the gunicorn worker of this process has been told to stop (``SIGTERM``, a restart): open
    streams then end, instead of holding the shutdown for ``graceful_timeout``."""
    return _serving_worker is not None and not _serving_worker.alive


@contextmanager
def within(sock: Any, timeout: float | None) -> Iterator[None]:
    """Reads of the body inside end with ``TimeoutError`` once ``timeout`` seconds have passed. Under gevent
    a deadline for the whole body; otherwise (gthread) each wait of the server's socket ``sock`` is bounded
    by it (a client that sends a byte within every ``timeout`` still gets through, as with gunicorn's own
    timeout). ``None`` or no socket: no deadline (in-process)."""
    if not timeout or sock is None:
        yield
        return
    if _gevent_patched():
        import gevent  # type: ignore[import-untyped]  # the worker's, patched

        with gevent.Timeout(timeout, TimeoutError):
            yield
        return
    previous = sock.gettimeout()
    sock.settimeout(timeout)
    try:
        yield
    finally:
        sock.settimeout(previous)


def _gevent_patched() -> bool:
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and bool(monkey.is_module_patched("socket"))
