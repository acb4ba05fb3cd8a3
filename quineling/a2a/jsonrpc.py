"""JSON-RPC 2.0 binding at ``/a2a/jsonrpc``. Parse the envelope, call the service, render.

Processing order: Content-Type → size → JSON → envelope → method family (unknown ⇒ -32601) → version →
params → call. Error envelopes answer HTTP 200, except a parse error or a bad Content-Type (400) and an
oversized body (413) (docs/decisions/0005-bindings.md). Routing errors under the endpoint (a GET, say)
get a JSON-RPC envelope too (:func:`routing_error`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, request
from werkzeug.exceptions import HTTPException

from quineling.a2a import body as request_body
from quineling.a2a import observation
from quineling.a2a.binding import call_context, check_version, is_json_media_type, requested_version, state
from quineling.a2a.compat_v03 import V03Compat
from quineling.a2a.context import CallContext
from quineling.a2a.endpoints import JSONRPC_PATH
from quineling.a2a.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    as_a2a_error,
)
from quineling.a2a.service import A2AService
from quineling.a2a.sse import compact, sse_response
from quineling.a2a.streams import held_stream
from quineling.observe import notes

log = logging.getLogger(__name__)
blueprint = Blueprint("a2a_jsonrpc", __name__)


@dataclass(frozen=True, slots=True)
class Method:
    call: Callable[[A2AService, Any, CallContext], Any]
    streaming: bool = False
    params_optional: bool = False  # GetExtendedAgentCard may omit params
    subscription: bool = False  # stays open waiting for events: holds a stream slot (quineling.a2a.streams)


METHODS: dict[str, Method] = {
    "SendMessage": Method(A2AService.send_message),
    "SendStreamingMessage": Method(A2AService.send_message_stream, streaming=True),
    "GetTask": Method(A2AService.get_task),
    "ListTasks": Method(A2AService.list_tasks),
    "CancelTask": Method(A2AService.cancel_task),
    "SubscribeToTask": Method(
        lambda service, params, ctx: service.subscribe_to_task(params, ctx, keepalive=True),
        streaming=True,
        subscription=True,
    ),
    "CreateTaskPushNotificationConfig": Method(A2AService.create_push_config),
    "GetTaskPushNotificationConfig": Method(A2AService.get_push_config),
    "ListTaskPushNotificationConfigs": Method(A2AService.list_push_configs),
    "DeleteTaskPushNotificationConfig": Method(A2AService.delete_push_config),
    "GetExtendedAgentCard": Method(A2AService.get_extended_agent_card, params_optional=True),
}


class _Reject(Exception):
    """An error answered before dispatch, with its HTTP status and the id to echo."""

    def __init__(self, error: A2AError, http_status: int = 200, rpc_id: Any = None) -> None:
        self.error, self.http_status, self.rpc_id = error, http_status, rpc_id


def _envelope(rpc_id: Any, *, result: Any = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    if error is not None:
        return {"jsonrpc": "2.0", "id": rpc_id, "error": error}
    return {"jsonrpc": "2.0", "id": rpc_id, "result": result}


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return Response(compact(body), status=status, mimetype="application/json")


def _read_request(limit: int, timeout: float) -> dict[str, Any]:
    if request.content_type and not is_json_media_type(request.content_type):
        raise _Reject(ContentTypeNotSupportedError(f"Content-Type {request.mimetype} is not supported"), 400)
    try:
        request_body.refuse_content_encoding(400)
        raw = request_body.read_limited(limit, timeout)  # never more than limit + 1 bytes, chunked or not
        body = request_body.parse(raw, envelope=True)
    except request_body.UnacceptableValue as exc:
        raise _unacceptable(exc) from None
    except A2AError as exc:  # too large (413), unreadable or not JSON (400)
        raise _Reject(exc, exc.status_code) from None
    if isinstance(body, list):
        raise _Reject(InvalidRequestError("Batch requests are not supported"))
    if not isinstance(body, dict):
        raise _Reject(InvalidRequestError("The request must be a JSON object"))
    rpc_id = body.get("id")
    if isinstance(rpc_id, bool) or not (rpc_id is None or isinstance(rpc_id, (str, int))):
        raise _Reject(InvalidRequestError("id must be a string, an integer or null"))
    if body.get("jsonrpc") != "2.0":
        raise _Reject(InvalidRequestError('jsonrpc must be exactly "2.0"'), rpc_id=rpc_id)
    if not isinstance(body.get("method"), str):
        raise _Reject(InvalidRequestError("method must be a string"), rpc_id=rpc_id)
    if "id" not in body:
        # A notification (JSON-RPC 2.0, section 4.1) would get no answer, yet every A2A method's point is its answer:
        # refused as invalid rather than run unseen (docs/decisions/0005-bindings.md).
        raise _Reject(
            InvalidRequestError(
                "A request without an id is a JSON-RPC notification, which A2A does not use; send an id"
            )
        )
    return body


def _unacceptable(exc: request_body.UnacceptableValue) -> _Reject:
    """Valid JSON the request may not carry: InvalidParams when it lies in ``params`` (or nobody knows where),
    else InvalidRequest; the request's id is echoed when it is itself fine."""
    document, path = exc.document, exc.path
    rpc_id = document.get("id") if isinstance(document, dict) and path and path[0] != "id" else None
    if isinstance(rpc_id, bool) or not isinstance(rpc_id, str | int):
        rpc_id = None
    if path is None or (path and path[0] == "params"):
        return _Reject(exc, rpc_id=rpc_id)
    return _Reject(InvalidRequestError(exc.message), rpc_id=rpc_id)


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
            return _call_v03(compat, method_name, params, rpc_id, version)
        compat = None
        method = METHODS.get(method_name)
        notes.note_call("jsonrpc", notes.UNKNOWN_METHOD if method is None else method_name)
        if method is None:
            raise MethodNotFoundError(f"Method not found: {method_name}")
        check_version("JSONRPC", version)
        if params is None and method.params_optional:
            params = {}
        if not isinstance(params, dict):
            raise InvalidParamsError("params must be an object")
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
    except _Reject as reject:
        return _error(reject.rpc_id, reject.error, reject.error.to_jsonrpc(), reject.http_status)
    except Exception as exc:  # noqa: BLE001 - every failure is answered as a JSON-RPC error
        error = as_a2a_error(exc)
        observation.note_error(error)
        rendered = compat.error(error) if compat is not None else error.to_jsonrpc()
        return _json(_envelope(rpc_id, error=rendered))
    return _stream(result, rpc_id, lambda e: e.to_jsonrpc())


def answer(method: Method, service: A2AService, params: dict[str, Any], ctx: CallContext, rpc_id: Any) -> Any:
    """The envelope answering a non-streaming 1.0 call, its outcome noted: what the Flask endpoint and the lean
    path (quineling/a2a/lean_jsonrpc.py) both send."""
    try:
        result = method.call(service, params, ctx)
    except Exception as exc:  # noqa: BLE001 - every failure is answered as a JSON-RPC error
        error = as_a2a_error(exc)
        observation.note_error(error)
        return _envelope(rpc_id, error=error.to_jsonrpc())
    observation.note_result(result)
    return _envelope(rpc_id, result=result)


def _error(rpc_id: Any, error: A2AError, rendered: Any, http_status: int = 200) -> Response:
    """An error envelope, noted as the request's outcome (``rendered``: ``error`` in the caller's dialect)."""
    observation.note_error(error)
    return _json(_envelope(rpc_id, error=rendered), http_status)


def _stream(events: Iterator[Any], rpc_id: Any, render_error: Callable[[A2AError], Any]) -> Response:
    return sse_response(
        events,
        lambda event: _envelope(rpc_id, result=event),
        lambda error: _envelope(rpc_id, error=render_error(error)),
    )


def _call_v03(compat: V03Compat, method: str, params: Any, rpc_id: Any, version: str) -> Response:
    service = state().service
    ctx = call_context(params.get("tenant") if isinstance(params, dict) else None, version, legacy=True)
    try:
        result = compat.call(service, method, params, ctx)
    except Exception as exc:  # noqa: BLE001
        failure = as_a2a_error(exc)
        observation.note_error(failure)
        error = compat.error(failure)
        if compat.errors_as_stream(method):
            return _error_stream(rpc_id, error)  # strict v0.3 clients accept only a stream here
        return _json(_envelope(rpc_id, error=error))
    if compat.is_subscription(method):  # the task was checked above, before a slot is taken
        return held_stream(
            state().streams,
            lambda: _stream(result, rpc_id, compat.error),
            lambda error: _error(rpc_id, error, compat.error(error)),
        )
    if compat.is_stream(method):
        return _stream(result, rpc_id, compat.error)
    observation.note_result(result)
    return _json(_envelope(rpc_id, result=result))


def _error_stream(rpc_id: Any, error: dict[str, Any]) -> Response:
    def events() -> Iterator[str]:
        yield f"data: {compact(_envelope(rpc_id, error=error))}\n\n"

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
    response = _json(_envelope(None, error=error), exc.code or 400)
    response.headers.extend(h for h in exc.get_headers() if h[0].lower() == "allow")  # 405 keeps Allow
    return response
