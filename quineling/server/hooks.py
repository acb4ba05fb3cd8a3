"""gunicorn's hooks in each worker: note each request and the worker for the app's questions
(:mod:`quineling.worker_state`), give the other connections a turn after every answer, and keep what the app's
load made out of the collector's sight. The master resolves them (:mod:`.options`) before it forks, so this
module imports gevent only inside the hook that runs in a worker."""

from __future__ import annotations

import gc
from typing import Any

from quineling import worker_state


def remember_request(worker: Any, req: Any) -> None:
    """gunicorn's ``pre_request`` hook: note the request of this WSGI input stream
    (:func:`quineling.worker_state.close_connection`)."""
    worker_state.note_request(req)


# How long a served greenlet waits for its turn (take_turn): any timer, however short, makes the wait a full
# turn of gevent's loop — every connection that is ready by then is served first.
TURN_SECONDS = 1e-6


def take_turn(worker: Any, req: Any, environ: Any, resp: Any) -> None:
    """The gevent worker's ``post_request`` hook: once a request is answered, one turn of the event loop.

    A greenlet gives up the worker only where it waits. A request that waits for nothing (the memory store, a
    cache hit) on a connection whose next request is already there (keep-alive, pipelining: gunicorn parses
    it from its buffer) would be served again and again while requests on other connections wait: their
    latency is then the busy connection's whole run. The turn (about 4 µs) serves every ready connection's
    request first. Taken after the answer rather than before the next request, it usually ends with that
    next request already arrived, so the greenlet reads it without waiting on its socket: the turn costs
    about nothing more (docs/deployment.md, "Worker model")."""
    import gevent  # type: ignore[import-untyped]  # the worker's, after its monkey-patching (loaded in the master)

    gevent.sleep(TURN_SECONDS)


def _watch_worker(worker: Any) -> None:
    """gunicorn's ``post_worker_init`` hook, run once the worker has loaded the app."""
    worker_state.note_worker(worker)  # streams ask it whether to end early (worker_state.worker_stopping)
    # What the app's import and start made (~60,000 objects: modules, schemas, the runtime's tables) lives as
    # long as the worker: out of the collector's sight, a full collection scans what requests leave behind
    # only — 0.5 ms instead of 36 ms of a paused worker, measured (docs/performance.md, "Memory").
    gc.freeze()
