"""Every request seen from outside: its id, its metrics and its log line (docs/deployment.md, "Metrics" and
"Logs").

:func:`install` adds the first ``before_request`` hook of the app (so refusals of the Host and Origin guard and
of authentication are seen too) and its last ``after_request`` hook. It takes the caller's ``X-Request-ID``
when it is sane — at most 128 characters of letters, digits and ``-_.:`` — or makes one, and echoes it in the
response. The bindings note the A2A method, the error a request is answered with and the task it concerns
(:mod:`quineling.observe.notes`); when the response is made, the request is counted and timed
(``quineling_requests_total``, ``quineling_request_duration_seconds``) and logged as one ``request`` event.

The outcome label is ``ok`` or the A2A error reason the answer carries — a JSON-RPC error counts under its
reason although it travels as HTTP 200. A retryable unavailability (HTTP 503 whose reason is the generic
``INTERNAL_ERROR``, e.g. Redis down) is ``UNAVAILABLE``, so outages and bugs are told apart; an error answered
by no binding (a 404 or 405 outside them, JSON without an A2A reason; a refusal of the Host guard) is
``HTTP_<status>``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from flask import Flask, Response, request

from quineling.a2a.endpoints import (
    CARD_PATH,
    HEALTH_PATH,
    JSONRPC_PATH,
    METRICS_PATH,
    READY_PATH,
    REST_PREFIX,
    under,
)
from quineling.a2a.http.authentication import authenticated_principal
from quineling.a2a.request_log import record, request_id
from quineling.observe import notes

__all__ = ["REQUEST_ID_HEADER", "REST_METHODS", "install", "record", "request_id"]


REQUEST_ID_HEADER = "X-Request-ID"
_STARTED = "quineling.started"

# The HTTP+JSON views (flask endpoint names without smorest's numeric suffix) and HTTP methods, as A2A methods.
REST_METHODS: Mapping[tuple[str, str], str] = {
    ("SendMessage", "POST"): "SendMessage",
    ("SendStreamingMessage", "POST"): "SendStreamingMessage",
    ("ListTasks", "GET"): "ListTasks",
    ("GetTask", "GET"): "GetTask",
    ("CancelTask", "POST"): "CancelTask",
    ("SubscribeToTask", "GET"): "SubscribeToTask",
    ("SubscribeToTask", "POST"): "SubscribeToTask",
    ("PushConfigs", "POST"): "CreateTaskPushNotificationConfig",
    ("PushConfigs", "GET"): "ListTaskPushNotificationConfigs",
    ("PushConfig", "GET"): "GetTaskPushNotificationConfig",
    ("PushConfig", "DELETE"): "DeleteTaskPushNotificationConfig",
    ("ExtendedAgentCard", "GET"): "GetExtendedAgentCard",
}
_SUFFIX = re.compile(r"_[0-9]+$")


def _where(path: str, http_method: str, endpoint: str | None) -> tuple[str, str]:
    """The binding and, where the route alone says it, the A2A method (JSON-RPC's comes from its body)."""
    if under(path, JSONRPC_PATH):
        return "jsonrpc", notes.NO_METHOD
    if under(path, REST_PREFIX):
        view = _SUFFIX.sub("", (endpoint or "").rpartition(".")[2])
        return "rest", REST_METHODS.get((view, http_method), notes.NO_METHOD)
    if path == CARD_PATH:
        return "discovery", "GetAgentCard"
    if path in (HEALTH_PATH, READY_PATH):
        return "health", path.lstrip("/")
    if path == METRICS_PATH:
        return "metrics", "scrape"
    return "other", notes.NO_METHOD


def install(app: Flask) -> None:
    """Register the hooks; call before any other hook is registered (see the module docstring)."""

    @app.before_request
    def begin() -> None:
        request.environ[_STARTED] = time.perf_counter()
        binding, method = _where(request.path, request.method, request.endpoint)
        notes.begin(request_id(request.headers.get(REQUEST_ID_HEADER)), binding, method)

    @app.after_request
    def finish(response: Response) -> Response:
        current = notes.current()
        if current is None:  # a response made before the first hook ran (none is expected)
            return response
        started = request.environ.get(_STARTED, time.perf_counter())
        response.headers[REQUEST_ID_HEADER] = current.request_id
        if current.task_id is None and request.view_args:
            notes.note_task(request.view_args.get("task_id"))
        record(
            current,
            status=response.status_code,
            seconds=time.perf_counter() - started,
            client=request.remote_addr,
            principal=authenticated_principal(),
            http_method=request.method,
            path=request.path,
        )
        return response

    @app.teardown_request
    def end(_exc: BaseException | None) -> None:
        notes.end()
