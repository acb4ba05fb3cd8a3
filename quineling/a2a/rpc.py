"""The JSON-RPC 2.0 core, without a web framework: the envelope read from a request's bytes and judged, the
method table, the call answered, errors rendered. Its two adapters — the Flask view (quineling/a2a/http/jsonrpc.py)
and the lean WSGI path (quineling/a2a/http/lean_jsonrpc.py) — read the body their own way and call these, so they
accept the same envelopes and send the same answers by construction.

Envelope checks, in order (docs/decisions/0005-bindings.md): JSON, strictly (too deep, a long integer, a lone
surrogate, a member named twice); not a batch; an object; ``id`` a string, an integer or null; ``jsonrpc``
exactly ``"2.0"``; ``method`` a string. A notification (no ``id``) is refused once its method and params are
judged (:func:`is_notification`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from quineling.a2a import json_text, outcomes
from quineling.a2a.context import CallContext
from quineling.a2a.errors import A2AError, InvalidParamsError, InvalidRequestError, as_a2a_error
from quineling.a2a.service import A2AService


@dataclass(frozen=True, slots=True)
class Method:
    call: Callable[[A2AService, Any, CallContext], Any]
    streaming: bool = False
    params_optional: bool = False  # GetExtendedAgentCard may omit params
    subscription: bool = (
        False  # stays open waiting for events: holds a stream slot (quineling.a2a.http.streams)
    )


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


class Reject(Exception):
    """An error answered before dispatch, with its HTTP status and the id to echo."""

    def __init__(self, error: A2AError, http_status: int = 200, rpc_id: Any = None) -> None:
        self.error, self.http_status, self.rpc_id = error, http_status, rpc_id


def envelope(rpc_id: Any, *, result: Any = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    if error is not None:
        return {"jsonrpc": "2.0", "id": rpc_id, "error": error}
    return {"jsonrpc": "2.0", "id": rpc_id, "result": result}


def request_of(raw: bytes) -> dict[str, Any]:
    """The request object in a body's bytes, its envelope checked; :class:`Reject` names what is wrong."""
    try:
        body = json_text.parse(raw, envelope=True)
    except json_text.UnacceptableValue as exc:
        raise _unacceptable(exc) from None
    except A2AError as exc:  # not JSON (400), or a member named twice
        raise Reject(exc, exc.status_code) from None
    if isinstance(body, list):
        raise Reject(InvalidRequestError("Batch requests are not supported"))
    if not isinstance(body, dict):
        raise Reject(InvalidRequestError("The request must be a JSON object"))
    rpc_id = body.get("id")
    if isinstance(rpc_id, bool) or not (rpc_id is None or isinstance(rpc_id, (str, int))):
        raise Reject(InvalidRequestError("id must be a string, an integer or null"))
    if body.get("jsonrpc") != "2.0":
        raise Reject(InvalidRequestError('jsonrpc must be exactly "2.0"'), rpc_id=rpc_id)
    if not isinstance(body.get("method"), str):
        raise Reject(InvalidRequestError("method must be a string"), rpc_id=rpc_id)
    return body


def is_notification(request: dict[str, Any]) -> bool:
    """No ``id`` (JSON-RPC 2.0, section 4.1): a notification, which gets no answer — yet every A2A method's
    point is its answer. It is judged like any request (its envelope, method and params, so a wrong one gets the
    same error, with id null) and then refused as invalid instead of run (docs/decisions/0005-bindings.md)."""
    return "id" not in request


def notification_refused() -> InvalidRequestError:
    return InvalidRequestError(
        "A request without an id is a JSON-RPC notification, which A2A does not use; send an id"
    )


class NotificationService:
    """The service as a notification's call sees it: a v0.3 handler validates and translates its params as for
    any request, and the moment it would reach the service it is refused, so nothing runs."""

    def __getattr__(self, name: str) -> Callable[..., NoReturn]:
        def refuse(*_: Any, **__: Any) -> NoReturn:
            raise notification_refused()

        return refuse


def params_of(method: Method, params: Any) -> dict[str, Any]:
    """A call's params once its method is known: an object, or ``{}`` where the method may omit them."""
    if params is None and method.params_optional:
        return {}
    if not isinstance(params, dict):
        raise InvalidParamsError("params must be an object")
    return params


def _unacceptable(exc: json_text.UnacceptableValue) -> Reject:
    """Valid JSON the request may not carry: InvalidParams when it lies in ``params`` (or nobody knows where),
    else InvalidRequest; the request's id is echoed when it is itself fine."""
    document, path = exc.document, exc.path
    rpc_id = document.get("id") if isinstance(document, dict) and path and path[0] != "id" else None
    if isinstance(rpc_id, bool) or not isinstance(rpc_id, str | int):
        rpc_id = None
    if path is None or (path and path[0] == "params"):
        return Reject(exc, rpc_id=rpc_id)
    return Reject(InvalidRequestError(exc.message), rpc_id=rpc_id)


def failure(rpc_id: Any, exc: Exception, render: Callable[[A2AError], Any] | None = None) -> dict[str, Any]:
    """The error envelope answering a call that raised, noted as the request's outcome (``render``: the error
    in the caller's dialect, 1.0's by default)."""
    error = as_a2a_error(exc)
    outcomes.note_error(error)
    return envelope(rpc_id, error=error.to_jsonrpc() if render is None else render(error))


def answer(method: Method, service: A2AService, params: dict[str, Any], ctx: CallContext, rpc_id: Any) -> Any:
    """The envelope answering a non-streaming 1.0 call, its outcome noted: what both adapters send."""
    try:
        result = method.call(service, params, ctx)
    except Exception as exc:  # noqa: BLE001 - every failure is answered as a JSON-RPC error
        return failure(rpc_id, exc)
    outcomes.note_result(result)
    return envelope(rpc_id, result=result)
