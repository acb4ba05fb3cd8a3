"""HTTP+JSON binding at ``/a2a/rest``, built with flask-smorest so the OpenAPI document is generated. Views parse the wire shape, call the service and render; errors are ``google.rpc.Status`` bodies.

Every route also exists under ``/<tenant>/…`` (the path tenant wins over one in the body or query).
"""

from __future__ import annotations

from typing import Any, NoReturn

from flask import Response, current_app, request
from flask.views import MethodView
from flask_smorest import Blueprint
from webargs.flaskparser import FlaskParser
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter

from quineling.a2a import json_text, outcomes
from quineling.a2a.context import CallContext
from quineling.a2a.endpoints import REST_PREFIX
from quineling.a2a.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InvalidParamsError,
    InvalidRequestError,
    as_a2a_error,
    from_http_exception,
)
from quineling.a2a.http import body, schemas
from quineling.a2a.http.binding import (
    call_context,
    check_version,
    is_json_media_type,
    requested_version,
    state,
)
from quineling.a2a.http.error_answers import (
    BAD_LISTING,
    FOLLOW_UP_FAILURES,
    NO_EXTENDED_CARD,
    PUSH_OFF,
    TASK_FINAL,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TASK_TOOLS,
    answers,
)
from quineling.a2a.http.sse import compact, sse_response
from quineling.a2a.http.streams import held_stream

_BODY_KEY = "quineling.a2a.http.body"
_RAW_KEY = "quineling.a2a.raw_body"


def request_body() -> dict[str, Any]:
    """The JSON body, read (at most the size limit) and parsed strictly once per request (cached in the WSGI
    environ, which is per request, unlike ``g``); an empty body is ``{}``."""
    cached: dict[str, Any] | None = request.environ.get(_BODY_KEY)
    if cached is not None:
        return cached
    raw = _raw_body()
    if not raw.strip():
        parsed: Any = {}
    else:
        parsed = json_text.parse(raw)
        if not isinstance(parsed, dict):
            raise InvalidRequestError("The request body must be a JSON object")
    request.environ[_BODY_KEY] = parsed
    result: dict[str, Any] = parsed
    return result


def _raw_body() -> bytes:
    raw: bytes | None = request.environ.get(_RAW_KEY)
    if raw is None:
        raw = body.read_limited(state().request_limit_bytes, state().body_timeout_seconds)
        request.environ[_RAW_KEY] = raw
    return raw


class _Parser(FlaskParser):
    """webargs parser that reads our strictly parsed body and reports A2A errors, never smorest's 422."""

    def _raw_load_json(self, req: Any) -> Any:
        return request_body()

    def handle_error(self, error: Any, req: Any, schema: Any, **_kwargs: Any) -> NoReturn:
        raise InvalidParamsError(f"Invalid request fields: {compact(error.normalized_messages())}")


class RestBlueprint(Blueprint):
    ARGUMENTS_PARSER = _Parser()


blp = RestBlueprint("a2a_rest", __name__, url_prefix=REST_PREFIX, description="A2A 1.0 HTTP+JSON binding")


class TaskIdConverter(BaseConverter):
    """A task id in a path: one segment without ``:``. Ids are UUIDs, and ``:`` starts a custom method, so
    ``/tasks/x:cancel`` is only ever CancelTask, never GetTask of id ``x:cancel`` (and a 405 or OPTIONS
    there answers ``Allow: POST``, not ``GET, POST``)."""

    regex = "[^/:]+"


# Before any route below is added: their rules need the converter when they are compiled.
blp.record_once(lambda setup: setup.app.url_map.converters.setdefault("task_id", TaskIdConverter))


def _routes(path: str) -> list[str]:
    return [path, "/<tenant>" + path]


def route(path: str) -> Any:
    def decorator(view: Any) -> Any:
        for rule in _routes(path):
            blp.route(rule)(view)
        return view

    return decorator


# --- request checks and rendering ----------------------------------------------------------------------


@blp.before_request
def _check_request() -> Response | None:
    if request.method == "OPTIONS":
        # What a route allows is a fact of HTTP, not of an A2A version: answered before the A2A checks, so
        # no A2A-Version is needed (docs/decisions/0005-bindings.md).
        response = current_app.make_default_options_response()
        response.status_code = 204
        response.headers.pop("Content-Type", None)
        return response
    limit = state().request_limit_bytes
    if request.content_length is not None and request.content_length > limit:
        raise body.too_large(limit)
    has_body = bool(request.content_length) or bool(request.headers.get("Transfer-Encoding"))
    if has_body and not is_json_media_type(request.content_type):
        # A bad request header is an HTTP media-type problem: 415 (docs/decisions/0005-bindings.md).
        raise ContentTypeNotSupportedError(
            f"Content-Type {request.mimetype or '(none)'} is not supported", http_status=415
        )
    if has_body:
        body.refuse_content_encoding(415)
    _raw_body()  # every route: at most limit + 1 bytes are read, whatever the framing
    check_version("HTTP+JSON", requested_version())
    return None


A2A_JSON, PLAIN_JSON = "application/a2a+json", "application/json"


def _media_type() -> str:
    """A2A 1.0.1: HTTP+JSON SHOULD answer ``application/a2a+json``; by content negotiation, a client whose
    ``Accept`` prefers (or names only) ``application/json`` gets that (docs/decisions/0005-bindings.md)."""
    accept = request.accept_mimetypes
    return (accept.best_match([A2A_JSON, PLAIN_JSON]) if accept else None) or A2A_JSON


def render(value: Any, status: int = 200) -> Response:
    outcomes.note_result(value)
    return Response(compact(value), status=status, mimetype=_media_type())


def render_error(error: A2AError) -> Response:
    outcomes.note_error(error)
    # An error body is a google.rpc.Status, not an A2A object: application/json, as the reference SDK answers.
    response = Response(compact(error.to_rest()), status=error.status_code, mimetype=PLAIN_JSON)
    if error.retry_after is not None:  # a transient failure (503): when to try again
        response.headers["Retry-After"] = str(error.retry_after)
    return response


@blp.errorhandler(Exception)
def _handle(exc: Exception) -> Response:
    return render_error(as_a2a_error(exc))


def routing_error(exc: HTTPException) -> Response:
    """A routing error under ``/a2a/rest`` (unknown path, wrong method) in the binding's error shape; a 405
    keeps its ``Allow`` header."""
    response = render_error(from_http_exception(exc))
    response.headers.extend(h for h in exc.get_headers() if h[0].lower() == "allow")
    return response


def ctx(tenant: str | None, body: dict[str, Any] | None = None) -> CallContext:
    return call_context(tenant or (body or {}).get("tenant"), requested_version())


def _sse(events: Any) -> Response:
    response = sse_response(events, lambda event: event, lambda error: error.to_rest())
    return response


# --- views ---------------------------------------------------------------------------------------------
#
# Each view documents its operation (quineling/a2a/http/openapi_plugin.py completes it): the docstring gives the
# summary (first line) and description (the paragraphs after it), @blp.doc the operation id, tag and own
# failures (quineling/a2a/http/error_answers.py), @blp.arguments the example request.

EXAMPLE_THOUGHT = "[2,3,4] | square | sum | report total"


@route("/message:send")
class SendMessage(MethodView):
    @blp.doc(
        operationId="SendMessage",
        tags=["Messages"],
        **answers(*FOLLOW_UP_FAILURES, reads_body=True, links=TASK_TOOLS),
    )
    @blp.arguments(
        schemas.SendMessageRequestSchema,
        example={
            "message": {
                "messageId": "msg-create-1",
                "role": "ROLE_USER",
                "parts": [
                    {
                        "mediaType": "application/json",
                        "data": {"operation": "create", "thought": EXAMPLE_THOUGHT},
                    }
                ],
            },
            "configuration": {"historyLength": 1},
        },
    )
    @blp.response(200, schemas.SendMessageResponseSchema)
    def post(self, _args: dict[str, Any], tenant: str | None = None) -> Response:
        """Send a message

        Sends one user message and answers with the task it started or continued. The message has exactly
        one part: a text part holding a *thought* such as `[2,3,4] | square | sum | report total`, or a JSON
        data part (`"mediaType": "application/json"`) holding a runtime request such as `{"operation": "run",
        "artifactId": "sha256:…"}`; the answer is in the task's artifact `quineling-result`. The work is done
        within the request, so the task comes back completed, failed, rejected, or waiting for input
        (`TASK_STATE_INPUT_REQUIRED`); send a follow-up with `message.taskId` set to continue such a task. A
        message the agent cannot act on (role not `ROLE_USER`, not exactly one part, a file part) fails the
        task rather than the request.
        """
        body = request_body()
        return render(state().service.send_message(body, ctx(tenant, body)))


@route("/message:stream")
class SendStreamingMessage(MethodView):
    @blp.doc(
        operationId="SendStreamingMessage", tags=["Messages"], **answers(*FOLLOW_UP_FAILURES, reads_body=True)
    )
    @blp.arguments(
        schemas.SendMessageRequestSchema,
        example={
            "message": {
                "messageId": "msg-stream-1",
                "role": "ROLE_USER",
                "parts": [{"text": EXAMPLE_THOUGHT}],
            }
        },
    )
    @blp.response(200, schemas.StreamResponseSchema, content_type="text/event-stream")
    def post(self, _args: dict[str, Any], tenant: str | None = None) -> Response:
        """Send a message and stream the task's events

        Sends one user message and streams the events of the task it started or continued. The message has
        exactly one part: a text part holding a *thought* such as `[2,3,4] | square | sum | report total`,
        or a JSON data part (`"mediaType": "application/json"`) holding a runtime request such as
        `{"operation": "run", "artifactId": "sha256:…"}`; the answer is in the task's artifact
        `quineling-result`. The work is done within the request, so the task comes back completed, failed,
        rejected, or waiting for input (`TASK_STATE_INPUT_REQUIRED`); send a follow-up with `message.taskId`
        set to continue such a task. A message the agent cannot act on (role not `ROLE_USER`, not exactly
        one part, a file part) fails the task rather than the request. The stream opens with the task and
        ends when the task is final or waits for input.
        """
        body = request_body()
        return _sse(state().service.send_message_stream(body, ctx(tenant, body)))


@route("/tasks")
class ListTasks(MethodView):
    @blp.doc(
        operationId="ListTasks",
        tags=["Tasks"],
        **answers(BAD_LISTING, query={"pageSize": 10, "status": "TASK_STATE_COMPLETED", "historyLength": 0}),
    )
    @blp.arguments(schemas.ListTasksQuerySchema, location="query")
    @blp.response(200, schemas.ListTasksResponseSchema)
    def get(self, _args: dict[str, Any], tenant: str | None = None) -> Response:
        """List tasks

        Lists this tenant's tasks, most recently updated first, one page at a time: pass the answer's
        `nextPageToken` as `pageToken` for the next page (it is empty on the last page). `totalSize` counts
        every task that matches the filters.
        """
        params = request.args.to_dict()
        return render(state().service.list_tasks(params, ctx(tenant, params)))


@route("/tasks/<task_id:task_id>")
class GetTask(MethodView):
    @blp.doc(operationId="GetTask", tags=["Tasks"], **answers(TASK_NOT_FOUND, query={"historyLength": 2}))
    @blp.arguments(schemas.GetTaskQuerySchema, location="query")
    @blp.response(200, schemas.TaskSchema)
    def get(self, _args: dict[str, Any], task_id: str, tenant: str | None = None) -> Response:
        """Get a task

        Answers the task with its status, artifacts and history (`historyLength` keeps only the most recent
        messages).
        """
        params = {**request.args.to_dict(), "id": task_id}
        return render(state().service.get_task(params, ctx(tenant, params)))


@route("/tasks/<task_id:task_id>:cancel")
class CancelTask(MethodView):
    @blp.doc(
        operationId="CancelTask",
        tags=["Tasks"],
        **answers(TASK_NOT_FOUND, TASK_NOT_CANCELABLE, reads_body=True),
    )
    @blp.arguments(schemas.CancelTaskRequestSchema, example={}, required=False)  # required: the document only
    @blp.response(200, schemas.TaskSchema)
    def post(self, _args: dict[str, Any], task_id: str, tenant: str | None = None) -> Response:
        """Cancel a task

        Cancels a task that is not yet final and answers it in `TASK_STATE_CANCELED`; canceling a canceled
        task answers it again. The body is optional.
        """
        body = {**request_body(), "id": task_id}
        return render(state().service.cancel_task(body, ctx(tenant, body)))


@route("/tasks/<task_id:task_id>:subscribe")
class SubscribeToTask(MethodView):
    """GET per the protocol's proto definition, POST per its prose: both are served
    (docs/decisions/0005-bindings.md)."""

    @blp.doc(operationId="SubscribeToTask", tags=["Tasks"], **answers(TASK_NOT_FOUND, TASK_FINAL))
    @blp.response(200, schemas.StreamResponseSchema, content_type="text/event-stream")
    def get(self, task_id: str, tenant: str | None = None) -> Response:
        """Subscribe to a task's events

        Streams the events of a task that is not yet final: first the task as it is now, then each later
        status or artifact update, until the task is final. Comment lines (`: keepalive`) keep a quiet
        stream open.
        """
        return _subscribe(task_id, tenant)

    @blp.doc(
        operationId="SubscribeToTaskByPost",
        tags=["Tasks"],
        **answers(TASK_NOT_FOUND, TASK_FINAL, reads_body=True),
    )
    @blp.response(200, schemas.StreamResponseSchema, content_type="text/event-stream")
    def post(self, task_id: str, tenant: str | None = None) -> Response:
        """Subscribe to a task's events (POST)

        The same as `GET …:subscribe`, by POST; a body, if sent, must be a JSON object and is not used.
        """
        request_body()  # a body, if any, must still be valid JSON
        return _subscribe(task_id, tenant)


def _subscribe(task_id: str, tenant: str | None) -> Response:
    """A subscription holds one of the worker's stream slots while open; beyond the cap it is refused with 503
    (docs/deployment.md, "Worker model"). The task is checked first: an unknown one is task-not-found even
    when every slot is held."""
    events = state().service.subscribe_to_task({"id": task_id}, ctx(tenant), keepalive=True)
    return held_stream(state().streams, lambda: _sse(events), render_error)


_PUSH = {"tags": ["Push notifications"], **answers(PUSH_OFF, stores=False, capability="pushNotifications")}


@route("/tasks/<task_id:task_id>/pushNotificationConfigs")
class PushConfigs(MethodView):
    @blp.doc(
        operationId="CreateTaskPushNotificationConfig",
        tags=["Push notifications"],
        **answers(PUSH_OFF, reads_body=True, stores=False, capability="pushNotifications"),
    )
    @blp.arguments(
        schemas.PushConfigRequestSchema,
        example={"url": "https://client.example.com/a2a/push", "token": "client-token-1"},
    )
    @blp.response(200, schemas.PushConfigSchema)
    def post(self, _args: dict[str, Any], task_id: str, tenant: str | None = None) -> Response:
        """Create a push notification config

        Registers a webhook for a task's updates.
        """
        body = {**request_body(), "taskId": task_id}
        return render(state().service.create_push_config(body, ctx(tenant, body)))

    @blp.doc(
        operationId="ListTaskPushNotificationConfigs",
        tags=["Push notifications"],
        **answers(PUSH_OFF, stores=False, capability="pushNotifications", query={"pageSize": 10}),
    )
    @blp.arguments(schemas.PushConfigListQuerySchema, location="query")
    @blp.response(200, schemas.PushConfigSchema(many=True))
    def get(self, _args: dict[str, Any], task_id: str, tenant: str | None = None) -> Response:
        """List push notification configs

        Lists the webhooks registered for a task.
        """
        params = {**request.args.to_dict(), "taskId": task_id}
        return render(state().service.list_push_configs(params, ctx(tenant, params)))


@route("/tasks/<task_id:task_id>/pushNotificationConfigs/<config_id>")
class PushConfig(MethodView):
    @blp.doc(operationId="GetTaskPushNotificationConfig", **_PUSH)
    @blp.response(200, schemas.PushConfigSchema)
    def get(self, task_id: str, config_id: str, tenant: str | None = None) -> Response:
        """Get a push notification config

        Answers one webhook registered for a task.
        """
        params = {"taskId": task_id, "id": config_id}
        return render(state().service.get_push_config(params, ctx(tenant)))

    @blp.doc(operationId="DeleteTaskPushNotificationConfig", **_PUSH)
    @blp.response(200)
    def delete(self, task_id: str, config_id: str, tenant: str | None = None) -> Response:
        """Delete a push notification config

        Removes one webhook registered for a task.
        """
        params = {"taskId": task_id, "id": config_id}
        state().service.delete_push_config(params, ctx(tenant))
        return render({})


@route("/extendedAgentCard")
class ExtendedAgentCard(MethodView):
    @blp.doc(
        operationId="GetExtendedAgentCard",
        tags=["Agent card"],
        **answers(NO_EXTENDED_CARD, stores=False, capability="extendedAgentCard"),
    )
    @blp.response(200)
    def get(self, tenant: str | None = None) -> Response:
        """Get the extended agent card

        Answers the agent card for authenticated clients.
        """
        return render(state().service.get_extended_agent_card({}, ctx(tenant)))
