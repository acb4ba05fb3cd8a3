"""The service's Prometheus metrics, and what feeds them (docs/deployment.md, "Metrics").

Under gunicorn every worker process writes its values to files in ``PROMETHEUS_MULTIPROC_DIR``
(prometheus-client's multiprocess mode; the master prepares the directory, :mod:`quineling.observe.master`),
and a scrape answered by any worker sums them all, dead workers' counters included. Without that variable (one
process, e.g. the in-process test client) the values live in this process and a scrape reads them directly.

Every label comes from a closed set — the bindings, the A2A methods the server serves, the runtime's
operations and error codes, the A2A error reasons, the task states, the store driver's error classes — so no
caller can grow the number of series: an unknown method or operation is one label, ``unknown``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector

from quineling.observe import notes
from quineling.runtime.errors import QuinelingError
from quineling.runtime.product_operations import ALL_OPERATIONS
from stores.errors import StoreError, StoreUnavailable, TaskConflict

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Where the values are written is fixed when prometheus-client is imported, so the scrape reads the same way.
MULTIPROCESS = bool(os.environ.get(MULTIPROC_ENV))
REGISTRY = CollectorRegistry(auto_describe=True)  # this process's own metrics (single-process mode)

# Seconds: from a card or GetTask on the memory store (well under a millisecond) to a SendMessage on a slow
# Redis; a stream is timed to its first byte, not to its end.
DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter(
    "quineling_requests",
    "HTTP requests answered, by binding, A2A method and outcome (ok, or the A2A error reason; JSON-RPC errors "
    "answered with HTTP 200 included)",
    ("binding", "method", "outcome"),
    registry=REGISTRY,
)
REQUEST_DURATION = Histogram(
    "quineling_request_duration_seconds",
    "Time from the request's arrival in the app to its response (a stream: to its first byte)",
    ("binding", "method"),
    buckets=DURATION_BUCKETS,
    registry=REGISTRY,
)
RUNTIME_OPERATIONS = Counter(
    "quineling_runtime_operations",
    "Runtime operations dispatched, by operation and outcome (ok, clarify, unsupported, inconsistent, a "
    "runtime error code, conflict, store-unavailable, store-error)",
    ("operation", "outcome"),
    registry=REGISTRY,
)
TASK_TRANSITIONS = Counter(
    "quineling_task_transitions",
    "States tasks entered in committed writes (a new task enters SUBMITTED, WORKING and its outcome's state)",
    ("state",),
    registry=REGISTRY,
)
STORE_ROUND_TRIPS = Counter(
    "quineling_store_round_trips", "Calls sent to the store server (Redis)", registry=REGISTRY
)
STORE_ERRORS = Counter(
    "quineling_store_errors",
    "Store calls that failed, by the driver's error class",
    ("kind",),
    registry=REGISTRY,
)
STREAMS_OPEN = Gauge(
    "quineling_streams_open",
    "Subscription streams open now (each holds a QUINELING_MAX_STREAMS slot), summed over live workers",
    registry=REGISTRY,
    multiprocess_mode="livesum",
)
RATE_LIMITED = Counter(
    "quineling_rate_limited",
    "Requests to the A2A endpoints refused by the rate limit (HTTP 429), by binding",
    ("binding",),
    registry=REGISTRY,
)

_OPERATIONS = frozenset(ALL_OPERATIONS)
_RESULT_OUTCOMES = frozenset({"clarify", "unsupported", "inconsistent"})


def _children(metric: Any) -> Callable[..., Any]:
    """``metric.labels(*values)``, memoised: the library's lookup takes a lock and builds a key every call."""
    cache: dict[tuple[str, ...], Any] = {}

    def child(*values: str) -> Any:
        found = cache.get(values)
        if found is None:
            found = cache[values] = metric.labels(*values)
        return found

    return child


_request = _children(REQUESTS)
_duration = _children(REQUEST_DURATION)
_operation = _children(RUNTIME_OPERATIONS)
_transition = _children(TASK_TRANSITIONS)
_store_error = _children(STORE_ERRORS)
_rate_limited = _children(RATE_LIMITED)


def record_request(binding: str, method: str, outcome: str, seconds: float) -> None:
    _request(binding, method, outcome).inc()
    _duration(binding, method).observe(seconds)


def record_rate_limited(binding: str) -> None:
    _rate_limited(binding).inc()


def record_transitions(states: Iterable[str]) -> None:
    for state in states:
        _transition(state).inc()


def streams_open(count: int) -> None:
    """This worker's open subscriptions (the gauge sums the live workers')."""
    STREAMS_OPEN.set(count)


class StoreMetrics:
    """The backend's :class:`~stores.observer.StoreObserver`, counting into the metrics above."""

    def __init__(self) -> None:
        self._round_trip = STORE_ROUND_TRIPS.inc

    def round_trip(self) -> None:
        self._round_trip()

    def error(self, kind: str) -> None:
        _store_error(kind).inc()


class _Dispatch(Protocol):
    def dispatch(self, request: Any, *, scope: str, attach: Any) -> Any: ...


def operation_label(request: object) -> str:
    name = request.get("operation") if isinstance(request, dict) else None
    return name if isinstance(name, str) and name in _OPERATIONS else notes.UNKNOWN_METHOD


class ObservedDispatcher:
    """A runtime whose every dispatch is counted by operation and outcome, and noted on the request."""

    def __init__(self, runtime: _Dispatch) -> None:
        self.runtime = runtime
        self.store = getattr(runtime, "store", None)

    def dispatch(self, request: Any, *, scope: str, attach: Any) -> Any:
        operation = operation_label(request)
        notes.note_operation(operation)
        try:
            outcome = self.runtime.dispatch(request, scope=scope, attach=attach)
        except QuinelingError as exc:
            _operation(operation, exc.code).inc()
            raise
        except TaskConflict:
            _operation(operation, "conflict").inc()
            raise
        except StoreError as exc:
            _operation(
                operation, "store-unavailable" if isinstance(exc, StoreUnavailable) else "store-error"
            ).inc()
            raise
        result = outcome.get("result") if isinstance(outcome, dict) else None
        status = result.get("status") if isinstance(result, dict) else None
        _operation(operation, status if status in _RESULT_OUTCOMES else "ok").inc()
        return outcome


def exposition() -> tuple[bytes, str]:
    """The scrape's body and content type: every worker's values in multiprocess mode, else this process's."""
    if MULTIPROCESS:
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # the library leaves it unannotated
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
