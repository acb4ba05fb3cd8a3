"""JSON-RPC 2.0 binding at ``/a2a/jsonrpc``: the Flask adapter over the core (quineling/a2a/rpc.py), which
judges the envelope, holds the method table and answers; this view reads the body, routes v0.3 and streams.

Processing order: Content-Type → size → JSON → envelope → method family (unknown ⇒ -32601) → version →
params → call. Error envelopes answer HTTP 200, except a parse error or a bad Content-Type (400) and an
oversized body (413) (docs/decisions/0005-bindings.md). Routing errors under the endpoint (a GET, say)
get a JSON-RPC envelope too (:func:`routing_error`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from flask import Blueprint, Response, request
from werkzeug.exceptions import HTTPException

from quineling.a2a import outcomes
from quineling.a2a.compat_v03 import V03Compat
from quineling.a2a.endpoints import JSONRPC_PATH
from quineling.a2a.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidRequestError,
    MethodNotFoundError,
)
from quineling.a2a.http import body as request_body
from quineling.a2a.http.binding import (
    call_context,
    check_version,
    is_json_media_type,
    requested_version,
    state,
)
from quineling.a2a.http.sse import compact, sse_response
from quineling.a2a.http.streams import held_stream
from quineling.a2a.rpc import (
    METHODS,
    NotificationService,
    Reject,
    answer,
    envelope,
    failure,
    is_notification,
    notification_refused,
    params_of,
    request_of,
)
from quineling.observe import notes

log = logging.getLogger(__name__)
blueprint = Blueprint("a2a_jsonrpc", __name__)


def _read_request(limit: int, timeout: float) -> dict[str, Any]:
    """The request object: Content-Type and encoding checked, the body read within its limits, then the
    envelope judged by the core (:func:`quineling.a2a.rpc.request_of`)."""
    if request.content_type and not is_json_media_type(request.content_type):
        raise Reject(ContentTypeNotSupportedError(f"Content-Type {request.mimetype} is not supported"), 400)
    try:
        request_body.refuse_content_encoding(400)
        raw = request_body.read_limited(limit, timeout)  # never more than limit + 1 bytes, chunked or not
    except A2AError as exc:  # too large (413), unreadable (400)
        raise Reject(exc, exc.status_code) from None
    return request_of(raw)


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return Response(compact(body), status=status, mimetype="application/json")


@blueprint.route(JSONRPC_PATH, methods=["POST"], strict_slashes=False)
@blueprint.route(
    JSONRPC_PATH + "/", methods=["POST"], strict_slashes=False
)  # the TCK's httpx base_url adds "/"
def endpoint() -> Response:
    app_state = state()
    rpc_id: Any = None
    compat = None
    try:
        body = _read_request(app_state.request_limit_bytes, app_state.body_timeout_seconds)
        rpc_id = body.get("id")
        method_name: str = body["method"]
        params = body.get("params")
        version = requested_version()
        # The family is chosen by method name first (the grammars are disjoint), then the version is checked.
        compat = app_state.compat()
        if compat is not None and method_name not in METHODS and compat.serves(method_name):
            notes.note_call("v03", method_name)
            check_version("JSONRPC", version)
            return _call_v03(compat, method_name, params, rpc_id, version, is_notification(body))
        compat = None
        method = METHODS.get(method_name)
        notes.note_call("jsonrpc", notes.UNKNOWN_METHOD if method is None else method_name)
        if method is None:
            raise MethodNotFoundError(f"Method not found: {method_name}")
        check_version("JSONRPC", version)
        params = params_of(method, params)
        if is_notification(body):
            raise Reject(notification_refused())
        ctx = call_context(params.get("tenant"), version)
        if method.subscription:
            notes.note_task(params.get("id"))
            # The call checks the task (a failure propagates to the handler below) before a slot is taken:
            # an unknown task is task-not-found, also when every slot is held. Its events start only when
            # the held response is streamed.
            events = method.call(app_state.service, params, ctx)
            return held_stream(
                app_state.streams,
                lambda: _stream(events, rpc_id, lambda e: e.to_jsonrpc()),
                lambda error: _error(rpc_id, error, error.to_jsonrpc()),
            )
        if not method.streaming:
            return _json(answer(method, app_state.service, params, ctx, rpc_id))
        result = method.call(app_state.service, params, ctx)
    except Reject as reject:
        return _error(reject.rpc_id, reject.error, reject.error.to_jsonrpc(), reject.http_status)
    except Exception as exc:  # noqa: BLE001 - every failure is answered as a JSON-RPC error
        return _json(failure(rpc_id, exc, compat.error if compat is not None else None))
    return _stream(result, rpc_id, lambda e: e.to_jsonrpc())


def _error(rpc_id: Any, error: A2AError, rendered: Any, http_status: int = 200) -> Response:
    """An error envelope, noted as the request's outcome (``rendered``: ``error`` in the caller's dialect)."""
    outcomes.note_error(error)
    return _json(envelope(rpc_id, error=rendered), http_status)


def _stream(events: Iterator[Any], rpc_id: Any, render_error: Callable[[A2AError], Any]) -> Response:
    return sse_response(
        events,
        lambda event: envelope(rpc_id, result=event),
        lambda error: envelope(rpc_id, error=render_error(error)),
    )


def _call_v03(
    compat: V03Compat, method: str, params: Any, rpc_id: Any, version: str, notification: bool
) -> Response:
    # A notification's handler meets a stand-in that refuses at the service's door (v0.3 handlers take any).
    service: Any = NotificationService() if notification else state().service
    ctx = call_context(params.get("tenant") if isinstance(params, dict) else None, version, legacy=True)
    try:
        result = compat.call(service, method, params, ctx)
    except Exception as exc:  # noqa: BLE001 - every failure is answered as a JSON-RPC error
        answered = failure(rpc_id, exc, compat.error)
        if compat.errors_as_stream(method):
            return _error_stream(answered)  # strict v0.3 clients accept only a stream here
        return _json(answered)
    if compat.is_subscription(method):  # the task was checked above, before a slot is taken
        return held_stream(
            state().streams,
            lambda: _stream(result, rpc_id, compat.error),
            lambda error: _error(rpc_id, error, compat.error(error)),
        )
    if compat.is_stream(method):
        return _stream(result, rpc_id, compat.error)
    outcomes.note_result(result)
    return _json(envelope(rpc_id, result=result))


def _error_stream(answered: dict[str, Any]) -> Response:
    def events() -> Iterator[str]:
        yield f"data: {compact(answered)}\n\n"

    response = Response(events(), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    return response


def routing_error(exc: HTTPException) -> Response:
    """A routing error under the JSON-RPC endpoint (wrong method, unknown sub-path) as an envelope."""
    notes.note_outcome(InvalidRequestError.reason)
    error = {
        "code": InvalidRequestError.code,
        "message": exc.description or InvalidRequestError.default_message,
    }
    response = _json(envelope(None, error=error), exc.code or 400)
    response.headers.extend(h for h in exc.get_headers() if h[0].lower() == "allow")  # 405 keeps Allow
    return response
