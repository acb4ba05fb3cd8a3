"""The ten v0.3 JSON-RPC methods (docs/compat-v03.md) served by the 1.0 :class:`A2AService`.

Each method translates its v0.3 params to 1.0, calls the service and translates the result back, so one
request handler serves both generations and a response never mixes the two models. Errors stay
:class:`A2AError`; the binding renders them with :func:`error_to_v03`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from quineling.a2a.compat_v03.card import card_to_v03
from quineling.a2a.compat_v03.params import send_params_to_v1, task_push_config_to_v03, task_push_config_to_v1
from quineling.a2a.compat_v03.translate import stream_response_to_v03, task_to_v03
from quineling.a2a.errors import InvalidParamsError, MethodNotFoundError, TaskNotFoundError
from quineling.a2a.event_ids import StreamEvent
from quineling.protocol.v03 import METHODS, V03_METHODS, V03_STREAM_METHODS
from stores.jsontypes import JSON as Json

# The method table and the stream methods are the protocol's (re-exported for the bindings).
__all__ = ["V03_METHODS", "V03_STREAM_METHODS", "call_v03", "is_stream_method", "resubscribe_always_sse"]
_RESUBSCRIBE = METHODS["SubscribeToTask"]


def resubscribe_always_sse(method: str) -> bool:
    """True when even an immediate failure must be answered as ``200 text/event-stream``: strict
    v0.3 clients reject any other content type on ``tasks/resubscribe``."""
    return method == _RESUBSCRIBE


def is_stream_method(method: str) -> bool:
    return method in V03_STREAM_METHODS


# --- params --------------------------------------------------------------------------------------------


def _string_param(params: Json, name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidParamsError(f"params.{name} must be a non-empty string")
    return value


def _events(events: Iterator[Json | None]) -> Iterator[Json | None]:
    """Translate a 1.0 stream lazily; stop after the v0.3 ``final`` event and always release the source.
    ``None`` (the service's keep-alive marker) passes through for the SSE writer to turn into a comment."""
    try:
        for event in events:
            if event is None:
                yield None
                continue
            translated = stream_response_to_v03(event)
            if isinstance(event, StreamEvent):  # the SSE id survives the translation
                translated = StreamEvent(translated, event.event_id)
            yield translated
            if translated.get("final") is True:
                return
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()  # lets the service unsubscribe when the client goes away


# --- methods -------------------------------------------------------------------------------------------
# Each takes (service, params, ctx). The service call happens before any generator is created, so early
# errors are raised eagerly, exactly as the 1.0 service raises them.


def _message_send(service: Any, params: Json, ctx: Any) -> Json:
    return stream_response_to_v03(service.send_message(send_params_to_v1(params), ctx))


def _message_stream(service: Any, params: Json, ctx: Any) -> Iterator[Json | None]:
    return _events(service.send_message_stream(send_params_to_v1(params), ctx))


def _tasks_get(service: Any, params: Json, ctx: Any) -> Json:
    query: Json = {"id": _string_param(params, "id")}
    if params.get("historyLength") is not None:
        query["historyLength"] = params["historyLength"]
    return task_to_v03(service.get_task(query, ctx))


def _tasks_cancel(service: Any, params: Json, ctx: Any) -> Json:
    request: Json = {"id": _string_param(params, "id")}
    if params.get("metadata") is not None:
        request["metadata"] = params["metadata"]
    return task_to_v03(service.cancel_task(request, ctx))


def _tasks_resubscribe(service: Any, params: Json, ctx: Any) -> Iterator[Json | None]:
    # keepalive: a resubscription can idle for long stretches; the service then yields None markers.
    return _events(service.subscribe_to_task({"id": _string_param(params, "id")}, ctx, keepalive=True))


def _push_set(service: Any, params: Json, ctx: Any) -> Json:
    _string_param(params, "taskId")
    return task_push_config_to_v03(service.create_push_config(task_push_config_to_v1(params), ctx))


def _push_get(service: Any, params: Json, ctx: Any) -> Json:
    task_id = _string_param(params, "id")
    config_id = params.get("pushNotificationConfigId")
    if config_id is None:  # v0.3 allowed omitting it: answer with the task's first config
        configs = _push_list(service, params, ctx)
        if not configs:
            raise TaskNotFoundError(f"No push notification config for task {task_id}")
        return configs[0]
    config_id = _string_param(params, "pushNotificationConfigId")
    return task_push_config_to_v03(service.get_push_config({"taskId": task_id, "id": config_id}, ctx))


def _push_list(service: Any, params: Json, ctx: Any) -> list[Json]:
    response = service.list_push_configs({"taskId": _string_param(params, "id")}, ctx)
    return [task_push_config_to_v03(c) for c in response.get("configs") or []]  # v0.3: a bare array


def _push_delete(service: Any, params: Json, ctx: Any) -> None:
    request = {"taskId": _string_param(params, "id"), "id": _string_param(params, "pushNotificationConfigId")}
    service.delete_push_config(request, ctx)
    return None


def _extended_card(service: Any, params: Json, ctx: Any) -> Json:
    return card_to_v03(service.get_extended_agent_card({}, ctx), superset=False)


# The handler of each 1.0 operation v0.3 offers; _METHODS files them under their v0.3 method names.
_HANDLERS: dict[str, Callable[[Any, Json, Any], Any]] = {
    "SendMessage": _message_send,
    "SendStreamingMessage": _message_stream,
    "GetTask": _tasks_get,
    "CancelTask": _tasks_cancel,
    "SubscribeToTask": _tasks_resubscribe,
    "CreateTaskPushNotificationConfig": _push_set,
    "GetTaskPushNotificationConfig": _push_get,
    "ListTaskPushNotificationConfigs": _push_list,
    "DeleteTaskPushNotificationConfig": _push_delete,
    "GetExtendedAgentCard": _extended_card,
}
_METHODS = {METHODS[op]: handler for op, handler in _HANDLERS.items()}


def call_v03(service: Any, method: str, params: Any, ctx: Any) -> Any:
    """Run v0.3 ``method`` on the 1.0 ``service``.

    Returns the bare v0.3 result (``None`` for delete), or for the two stream methods an iterator of bare
    v0.3 events (the last one carries ``final: true`` when the task ends). Raises :class:`A2AError`
    eagerly, before any iterator is returned, for every failure the service reports up front.
    """
    handler = _METHODS.get(method)
    if handler is None:
        raise MethodNotFoundError(f"Method not found: {method}")
    if params is None:
        params = {}  # then the missing required fields are reported by name
    if not isinstance(params, dict):
        raise InvalidParamsError("params must be an object")
    return handler(service, params, ctx)
