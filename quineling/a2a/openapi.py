"""The HTTP+JSON binding's OpenAPI document, made to say what the server does, and its interactive page.

flask-smorest generates the document from the views in :mod:`quineling.a2a.rest`; :class:`Documenter`, an
apispec plugin, completes every operation from :data:`OPERATIONS`: summary, description, an example request,
the ``A2A-Version`` header, both JSON media types, the tenant and paging constraints, and the error answers
the operation really gives. Each error answer is the binding's ``google.rpc.Status`` body
(:meth:`~quineling.a2a.errors.A2AError.to_rest`, component ``ErrorResponse``) narrowed to the reasons it can
carry; flask-smorest's own error schema and its 422, which this binding never sends, are dropped.

The page at ``/a2a/rest/docs`` is Swagger UI, its script and style served by this app from the files of the
``flask-swagger-ui`` package: it loads nothing from elsewhere (Swagger UI's validator badge, which would call
out, is off).
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from apispec import APISpec, BasePlugin
from flask import Blueprint, Flask, Response, redirect, request, send_from_directory
from flask_smorest import Api
from flask_smorest import Blueprint as SmorestBlueprint

from quineling.a2a.binding import EXTENSION_NAME, A2AState
from quineling.a2a.card import BEARER_SCHEME, supported_versions
from quineling.a2a.errors import (
    ALL_ERRORS,
    ERROR_DOMAIN,
    ERROR_INFO_TYPE,
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnavailableError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from quineling.a2a.long_poll import GenerationMismatchError
from quineling.a2a.rate_limit import RATE_LIMIT_DOMAIN, RateLimitedError, parse_limits
from quineling.a2a.wire import ROLES, TASK_STATES

JSON = dict[str, Any]

DOCS_PATH = "docs"  # the page, under the binding's prefix
ASSETS_PATH = "docs/assets"  # Swagger UI's files, under the binding's prefix
ERROR_SCHEMA = "ErrorResponse"
JSON_MEDIA_TYPES = ("application/json", "application/a2a+json")
TENANT_TAG = "Tenant routes"
TENANT_ROUTE_SUFFIX = "InTenantRoute"  # the body schemas of tenant routes, whose body `tenant` is ignored
IGNORED_TENANT = "Ignored on this route: the tenant in the path wins."

EXAMPLE_TASK_ID = "8c0f6a4e-5d7b-4f8e-9a51-2f3c4d5e6a7b"
EXAMPLE_PATH_VALUES = {"task_id": EXAMPLE_TASK_ID, "config_id": "cfg-1"}
EXAMPLE_THOUGHT = "[2,3,4] | square | sum | report total"


@dataclass(frozen=True, slots=True)
class Failure:
    """One way an operation fails: the HTTP status, the error it answers with, and when."""

    status: int
    error: type[A2AError]
    when: str
    message: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    # For an error whose constructor is not A2AError's: makes the example instance.
    build: Callable[[], A2AError] | None = None

    def example(self) -> JSON:
        if self.build is not None:
            return self.build().to_rest()
        return self.error(self.message, metadata=dict(self.metadata), http_status=self.status).to_rest()


@dataclass(frozen=True, slots=True)
class Operation:
    """What the document says about one operation besides what flask-smorest derives from the view."""

    operation_id: str
    tag: str
    summary: str
    description: str
    failures: tuple[Failure, ...] = ()
    reads_body: bool = False  # parses a JSON body (so a malformed one is an error)
    body: JSON | None = None  # the example request body
    body_required: bool = True
    query: Mapping[str, Any] = field(default_factory=dict)  # example query values
    stores: bool = True  # reads or writes task storage, so a storage failure is a 500 or an outage a 503
    capability: str | None = None  # the card capability without which it never succeeds
    stream: bool = False
    # Operations that take the answer's task id (`task.id`) as their `task_id`: OpenAPI links, which tell a
    # client (and schemathesis' stateful run) how one call leads to the next.
    links: tuple[str, ...] = ()


_TASK_TOOLS = ("GetTask", "CancelTask", "SubscribeToTask", "SubscribeToTaskByPost")

_TASK_NOT_FOUND = Failure(
    404,
    TaskNotFoundError,
    "no task with this id exists for this tenant (unknown, expired, evicted or another tenant's)",
    f"Task not found: {EXAMPLE_TASK_ID}",
    {"taskId": EXAMPLE_TASK_ID},
)
_FOLLOW_UP_FAILURES = (
    Failure(
        404,
        TaskNotFoundError,
        "`message.taskId` names no task of this tenant",
        f"Task not found: {EXAMPLE_TASK_ID}",
        {"taskId": EXAMPLE_TASK_ID},
    ),
    Failure(
        400,
        UnsupportedOperationError,
        "`message.taskId` names a task in a terminal state, which accepts no messages",
    ),
    Failure(
        400,
        ContentTypeNotSupportedError,
        "`configuration.acceptedOutputModes` names only media types this agent cannot answer with (it "
        "answers `application/json` and `text/plain`); nothing was run",
        "None of acceptedOutputModes ['image/png'] can be produced; this agent answers with application/json "
        "or text/plain",
        {"supportedOutputModes": "application/json,text/plain"},
    ),
    Failure(
        409,
        GenerationMismatchError,
        "`configuration.ifGenerationMatch` is not the generation of the task `message.taskId` names; "
        "nothing was run (call GetTask for the task as it is)",
        f"ifGenerationMatch is 1 but task {EXAMPLE_TASK_ID} is at generation 4; nothing was executed. "
        "Call GetTask for the task's current state.",
        {"taskId": EXAMPLE_TASK_ID, "expectedGeneration": "1", "currentGeneration": "4"},
    ),
)
_PUSH_OFF = Failure(
    400,
    PushNotificationNotSupportedError,
    "always: this agent does not support push notifications",
    "Push notifications are not supported by this agent",
)

_SEND_DESCRIPTION = (
    "Sends one user message and answers with the task it started or continued. The message has exactly one "
    "part: a text part holding a *thought* such as `[2,3,4] | square | sum | report total`, or a JSON data "
    'part (`"mediaType": "application/json"`) holding a runtime request such as `{"operation": "run", '
    '"artifactId": "sha256:…"}`; the answer is in the task\'s artifact `quineling-result`. The work is done '
    "within the request, so the task comes back completed, failed, rejected, or waiting for input "
    "(`TASK_STATE_INPUT_REQUIRED`); send a follow-up with `message.taskId` set to continue such a task. "
    "A message the agent cannot act on (role not `ROLE_USER`, not exactly one part, a file part) fails the "
    "task rather than the request."
)

# Keyed by (method, path under the prefix without a tenant), in OpenAPI path syntax.
OPERATIONS: dict[tuple[str, str], Operation] = {
    ("post", "/message:send"): Operation(
        "SendMessage",
        "Messages",
        "Send a message",
        _SEND_DESCRIPTION,
        _FOLLOW_UP_FAILURES,
        reads_body=True,
        body={
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
        links=_TASK_TOOLS,
    ),
    ("post", "/message:stream"): Operation(
        "SendStreamingMessage",
        "Messages",
        "Send a message and stream the task's events",
        _SEND_DESCRIPTION.replace("answers with the task", "streams the events of the task", 1)
        + " The stream opens with the task and ends when the task is final or waits for input.",
        _FOLLOW_UP_FAILURES,
        reads_body=True,
        body={
            "message": {
                "messageId": "msg-stream-1",
                "role": "ROLE_USER",
                "parts": [{"text": EXAMPLE_THOUGHT}],
            }
        },
        stream=True,
    ),
    ("get", "/tasks"): Operation(
        "ListTasks",
        "Tasks",
        "List tasks",
        "Lists this tenant's tasks, most recently updated first, one page at a time: pass the answer's "
        "`nextPageToken` as `pageToken` for the next page (it is empty on the last page). `totalSize` counts "
        "every task that matches the filters.",
        (
            Failure(
                400,
                InvalidParamsError,
                "`pageSize` is not within 1..100, `status` names no task state, `statusTimestampAfter` is "
                "not an RFC 3339 time, or `pageToken` does not belong to this listing",
                "pageSize must be between 1 and 100",
            ),
        ),
        query={"pageSize": 10, "status": "TASK_STATE_COMPLETED", "historyLength": 0},
    ),
    ("get", "/tasks/{task_id}"): Operation(
        "GetTask",
        "Tasks",
        "Get a task",
        "Answers the task with its status, artifacts and history (`historyLength` keeps only the most recent "
        "messages).",
        (_TASK_NOT_FOUND,),
        query={"historyLength": 2},
    ),
    ("post", "/tasks/{task_id}:cancel"): Operation(
        "CancelTask",
        "Tasks",
        "Cancel a task",
        "Cancels a task that is not yet final and answers it in `TASK_STATE_CANCELED`; canceling a canceled "
        "task answers it again. The body is optional.",
        (
            _TASK_NOT_FOUND,
            Failure(
                400,
                TaskNotCancelableError,
                "the task is already completed, failed or rejected",
                f"Task {EXAMPLE_TASK_ID} is TASK_STATE_COMPLETED and cannot be canceled",
                {"taskId": EXAMPLE_TASK_ID},
            ),
        ),
        reads_body=True,
        body={},
        body_required=False,
    ),
    ("get", "/tasks/{task_id}:subscribe"): Operation(
        "SubscribeToTask",
        "Tasks",
        "Subscribe to a task's events",
        "Streams the events of a task that is not yet final: first the task as it is now, then each later "
        "status or artifact update, until the task is final. Comment lines (`: keepalive`) keep a quiet "
        "stream open.",
        (
            _TASK_NOT_FOUND,
            Failure(400, UnsupportedOperationError, "the task is already final: there is nothing to follow"),
        ),
        stream=True,
    ),
    ("post", "/tasks/{task_id}:subscribe"): Operation(
        "SubscribeToTaskByPost",
        "Tasks",
        "Subscribe to a task's events (POST)",
        "The same as `GET …:subscribe`, by POST; a body, if sent, must be a JSON object and is not used.",
        (
            _TASK_NOT_FOUND,
            Failure(400, UnsupportedOperationError, "the task is already final: there is nothing to follow"),
        ),
        reads_body=True,
        stream=True,
    ),
    ("post", "/tasks/{task_id}/pushNotificationConfigs"): Operation(
        "CreateTaskPushNotificationConfig",
        "Push notifications",
        "Create a push notification config",
        "Registers a webhook for a task's updates.",
        (_PUSH_OFF,),
        reads_body=True,
        body={"url": "https://client.example.com/a2a/push", "token": "client-token-1"},
        stores=False,
        capability="pushNotifications",
    ),
    ("get", "/tasks/{task_id}/pushNotificationConfigs"): Operation(
        "ListTaskPushNotificationConfigs",
        "Push notifications",
        "List push notification configs",
        "Lists the webhooks registered for a task.",
        (_PUSH_OFF,),
        query={"pageSize": 10},
        stores=False,
        capability="pushNotifications",
    ),
    ("get", "/tasks/{task_id}/pushNotificationConfigs/{config_id}"): Operation(
        "GetTaskPushNotificationConfig",
        "Push notifications",
        "Get a push notification config",
        "Answers one webhook registered for a task.",
        (_PUSH_OFF,),
        stores=False,
        capability="pushNotifications",
    ),
    ("delete", "/tasks/{task_id}/pushNotificationConfigs/{config_id}"): Operation(
        "DeleteTaskPushNotificationConfig",
        "Push notifications",
        "Delete a push notification config",
        "Removes one webhook registered for a task.",
        (_PUSH_OFF,),
        stores=False,
        capability="pushNotifications",
    ),
    ("get", "/extendedAgentCard"): Operation(
        "GetExtendedAgentCard",
        "Agent card",
        "Get the extended agent card",
        "Answers the agent card for authenticated clients.",
        (
            Failure(
                400,
                UnsupportedOperationError,
                "always: this agent declares no extended agent card",
                "This agent does not declare an extended agent card",
            ),
        ),
        stores=False,
        capability="extendedAgentCard",
    ),
}

TAGS = {
    "Messages": "Send messages; the work runs within the request.",
    "Tasks": "Read, list, cancel and follow tasks.",
    "Push notifications": "Webhooks for task updates.",
    "Agent card": "The extended agent card.",
    TENANT_TAG: "Every operation again, for a tenant named in the path (it wins over a `tenant` in the body "
    "or query).",
}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the document needs to know about the running agent."""

    prefix: str
    base_url: str
    versions: tuple[str, ...]  # A2A versions HTTP+JSON serves, newest last
    tenants: frozenset[str] | None  # served besides the default one; None = any
    request_limit_bytes: int
    capabilities: Mapping[str, Any]
    bearer: Mapping[str, Any] | None  # the card's HTTP bearer scheme, when credentials are required
    rate_limit: str = ""  # QUINELING_RATE_LIMIT as configured; empty: no limit, so never a 429

    @classmethod
    def of(cls, prefix: str, state: A2AState) -> Facts:
        card = state.service.card("1.0")
        versions = sorted(supported_versions(card, "HTTP+JSON"), key=lambda v: [int(n) for n in v.split(".")])
        return cls(
            prefix=prefix,
            base_url=state.base_url.rstrip("/"),
            versions=tuple(versions),
            tenants=state.tenants,
            request_limit_bytes=state.request_limit_bytes,
            capabilities=card.get("capabilities", {}),
            bearer=card.get("securitySchemes", {}).get(BEARER_SCHEME, {}).get("httpAuthSecurityScheme"),
            rate_limit=getattr(state.extras.get("settings"), "rate_limit", ""),
        )

    @property
    def newest(self) -> str:
        return self.versions[-1] if self.versions else "1.0"

    @property
    def example_tenant(self) -> str:
        return sorted(self.tenants)[0] if self.tenants else "acme"


# --- failures ------------------------------------------------------------------------------------------


def failures_of(op: Operation, facts: Facts, path: str = "") -> list[Failure]:
    """Every failure ``op`` at ``path`` can answer with: the binding's checks, the body's, storage's, then
    its own."""
    found = [
        Failure(
            400,
            VersionNotSupportedError,
            "the `A2A-Version` header is missing (which means v0.3) or names a version this binding does not "
            "serve",
            f"A2A-Version 0.3 is not supported by the HTTP+JSON binding (supported: {', '.join(facts.versions)}); "
            f"send the header 'A2A-Version: {facts.newest}'",
            {"requestedVersion": "0.3"},
        ),
        Failure(
            400,
            InvalidParamsError,
            "a field or parameter is missing, has the wrong type or is out of range, or the tenant is not "
            "served by this agent",
        ),
        Failure(
            413,
            InvalidRequestError,
            f"the request body is larger than {facts.request_limit_bytes} bytes",
            f"Request body exceeds {facts.request_limit_bytes} bytes",
        ),
        Failure(
            415,
            ContentTypeNotSupportedError,
            "the request has a body whose Content-Type is not `application/json` or `application/a2a+json`, "
            "or a POST or DELETE carries neither a JSON Content-Type nor the `A2A-Version` header (the query "
            "parameter does not count: a cross-site form can send it)",
            "Content-Type text/plain is not supported",
        ),
        # The cross-site defences in front of every route (quineling/a2a/origin_guard.py).
        Failure(
            403,
            InvalidRequestError,
            "a browser sent an `Origin` that is neither this agent's own nor listed in `QUINELING_CORS_ORIGINS`",
            "Origin 'https://elsewhere.example' may not call this agent: a web page of another origin needs "
            "to be listed in QUINELING_CORS_ORIGINS",
        ),
        Failure(
            421,
            InvalidRequestError,
            "the `Host` header names a host this agent does not serve: not the advertised one, the "
            "listener's, a loopback name or one in `QUINELING_ALLOWED_HOSTS` (a DNS-rebinding defence)",
            "Host 'elsewhere.example' is not served here: this agent answers to its advertised host "
            "(QUINELING_BASE_URL), its listener address and loopback names; add other names to "
            "QUINELING_ALLOWED_HOSTS",
        ),
    ]
    if "{task_id}" in path:
        found.append(
            Failure(
                404,
                MethodNotFoundError,
                "the task id contains `:` or `/`, so the path names no operation (no task id does)",
                "The requested URL was not found on the server.",
            )
        )
    if op.reads_body:
        found += [
            Failure(400, JSONParseError, "the body is not valid JSON"),
            Failure(
                400,
                InvalidRequestError,
                "the body is not a JSON object",
                "The request body must be a JSON object",
            ),
        ]
    if op.stores:
        found += [
            Failure(
                500,
                InternalError,
                "task storage failed, or the task kept changing under concurrent requests; the message says "
                "what happened and `metadata.retryable` whether to retry",
                "Storage failed; retry later",
            ),
            Failure(
                503,
                UnavailableError,
                "task storage is unreachable, stalled or restarting, or full of tasks that cannot be evicted: "
                "always `metadata.retryable`; send the request again after `Retry-After` seconds",
            ),
        ]
    limits = parse_limits(facts.rate_limit)
    if limits:  # every A2A operation is counted (quineling/a2a/rate_limit.py)
        found.append(
            Failure(
                429,
                RateLimitedError,
                f"the caller (its principal, or its address when anonymous) sent more requests than the rate "
                f"limit allows ({facts.rate_limit}); send the request again after `Retry-After` seconds",
                build=lambda: RateLimitedError(limits[0].text, 1),
            )
        )
    for own in op.failures:
        # An operation's own case of a common failure extends it (and gives the better example message).
        same = next((f for f in found if (f.status, f.error) == (own.status, own.error)), None)
        if same is None:
            found.append(own)
        else:
            found.remove(same)
            found.append(replace(own, when=f"{same.when}; here also: {own.when}"))
    return found


def error_components() -> dict[str, JSON]:
    """The REST error body as OpenAPI schemas: ``ErrorResponse`` holds a ``Status`` with ``ErrorInfo``."""
    # The draft 1.1 precondition's error is defined beside long-poll, outside the 1.0 table.
    documented: tuple[type[A2AError], ...] = (*ALL_ERRORS, GenerationMismatchError, RateLimitedError)
    reasons = sorted({cls.reason for cls in documented})
    statuses = sorted({cls.status for cls in documented})
    return {
        "ErrorInfo": {
            "type": "object",
            "description": "google.rpc.ErrorInfo: why the request failed, as a machine-readable reason.",
            "required": ["@type", "reason", "domain"],
            "additionalProperties": False,
            "properties": {
                "@type": {"type": "string", "enum": [ERROR_INFO_TYPE]},
                "reason": {"type": "string", "enum": reasons},
                "domain": {"type": "string", "enum": [ERROR_DOMAIN, RATE_LIMIT_DOMAIN]},
                "metadata": {
                    "type": "object",
                    "description": "Details such as taskId or requestedVersion; every value is a string.",
                    "additionalProperties": {"type": "string"},
                },
            },
        },
        "Status": {
            "type": "object",
            "description": "google.rpc.Status as JSON.",
            "required": ["code", "status", "message", "details"],
            "additionalProperties": False,
            "properties": {
                "code": {"type": "integer", "description": "The HTTP status of the response."},
                "status": {"type": "string", "enum": statuses, "description": "The google.rpc.Code name."},
                "message": {"type": "string", "description": "What went wrong, for people."},
                "details": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 1,
                    "items": {"$ref": "#/components/schemas/ErrorInfo"},
                },
            },
        },
        ERROR_SCHEMA: {
            "type": "object",
            "description": "The body of every error answer of the HTTP+JSON binding.",
            "required": ["error"],
            "additionalProperties": False,
            "properties": {"error": {"$ref": "#/components/schemas/Status"}},
        },
    }


# --- what the service reads: exact request schemas ------------------------------------------------------
#
# flask-smorest sees the message and configuration as free-form objects (the service validates them, see
# quineling/a2a/wire.py and model.py). These schemas say what the service accepts, so a generated request
# that matches them is accepted and one that breaks them is refused (tests/a2a/test_schemathesis.py checks
# both). Field names are the camelCase ones; that the service also takes their snake_case spellings, and
# `null` for an absent optional field, the document's introduction says.

INT32_MAX = 2**31 - 1
# An int32 may also be sent as a decimal string, as ProtoJSON allows (query values always are strings).
_DECIMAL_STRING = {"type": "string", "pattern": r"^\s*[+]?\d{1,9}\s*$"}
_BOOLEAN_STRING = {"type": "string", "pattern": "^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"}
# Standard or URL-safe base64, padded or not (model._raw): groups of four, then a tail of two or three.
_B64 = "[A-Za-z0-9+/_-]"
_BASE64_PATTERN = rf"^\s*(?:{_B64}{{4}})*(?:{_B64}{{2}}(?:==?)?|{_B64}{{3}}=?)?\s*$"
_NOT_NULL = {  # any JSON value but null
    "anyOf": [
        {"type": "object"},
        {"type": "array"},
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
    ]
}


def enum_schema(names: tuple[str, ...], *, nullable: bool) -> JSON:
    """A protobuf enum as the service reads it (wire.enum): its name, or its number as a JSON number or a
    decimal string."""
    schema: JSON = {
        "anyOf": [
            {"type": "string", "enum": [*names, *(str(i) for i in range(len(names)))]},
            {"type": "integer", "minimum": 0, "maximum": len(names) - 1},
        ]
    }
    if nullable:
        schema["nullable"] = True
    return schema


def _int32(minimum: int, description: str) -> JSON:
    return {
        "description": description,
        "nullable": True,
        "anyOf": [
            {"type": "integer", "format": "int32", "minimum": minimum, "maximum": INT32_MAX},
            _DECIMAL_STRING,
        ],
    }


def request_components() -> dict[str, JSON]:
    """The schemas of the message, its parts and the send configuration."""
    text = {"type": "string", "nullable": True}
    strings = {"type": "array", "items": {"type": "string"}, "nullable": True}
    obj = {"type": "object", "additionalProperties": {}, "nullable": True, "example": {}}
    return {
        "Part": {
            "type": "object",
            "description": "One piece of content: exactly one of `text`, `raw` (base64), `url` or `data`. This "
            "agent acts on a text part (a thought) or a JSON data part (a runtime request); a `raw` or `url` "
            "part is accepted on the wire and fails the task.",
            "properties": {
                "text": text,
                "raw": {
                    **text,
                    "format": "byte",
                    "pattern": _BASE64_PATTERN,
                    "description": "Base64, standard or URL-safe, padded or not",
                },
                "url": text,
                "data": {"nullable": True, "description": "Any JSON value"},
                "metadata": obj,
                "filename": text,
                "mediaType": {**text, "example": "application/json"},
            },
            "oneOf": [
                {"required": ["text"], "properties": {"text": {"type": "string"}}},
                {"required": ["raw"], "properties": {"raw": {"type": "string"}}},
                {"required": ["url"], "properties": {"url": {"type": "string"}}},
                {"required": ["data"], "properties": {"data": _NOT_NULL}},
            ],
        },
        "Message": {
            "type": "object",
            "description": "The user message. The agent acts on a message with role `ROLE_USER` and exactly "
            "one part; any other message is accepted on the wire and fails the task, not the request. "
            "`taskId` continues a task (404 if this tenant has no such task, 400 if it is final), "
            "`contextId` must then be the task's.",
            "required": ["messageId"],
            "properties": {
                "messageId": {"type": "string", "minLength": 1},
                "contextId": text,
                "taskId": text,
                "role": enum_schema(ROLES, nullable=True),
                "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}, "nullable": True},
                "metadata": obj,
                "extensions": strings,
                "referenceTaskIds": strings,
            },
        },
        "SendMessageConfiguration": {
            "type": "object",
            "nullable": True,
            "description": "How to answer. The work runs within the request, so `returnImmediately` changes "
            "nothing.",
            "properties": {
                "historyLength": _int32(
                    0,
                    "How many of the most recent history messages the answer keeps: 0 none, above 1000 "
                    "is cut to 1000; absent keeps all",
                ),
                "returnImmediately": {"nullable": True, "anyOf": [{"type": "boolean"}, _BOOLEAN_STRING]},
                "acceptedOutputModes": {
                    "type": "array",
                    "nullable": True,
                    "items": {"type": "string"},
                    "description": "Media types the result may come as: `application/json` (the result, the "
                    "default) and `text/plain` (a one-line summary) are produced, each named one as a part of "
                    "the `quineling-result` artifact; naming only others is 400 CONTENT_TYPE_NOT_SUPPORTED",
                },
                "ifGenerationMatch": _int32(
                    0,
                    "Draft A2A 1.1 precondition: a follow-up (`message.taskId`) runs only if the task is at this "
                    "generation (its `metadata.generation`), else 409 TASK_GENERATION_MISMATCH; ignored for a "
                    "message that creates a task",
                ),
            },
        },
    }


def response_components() -> dict[str, JSON]:
    """The schemas nested in answers that the response schemas (quineling/a2a/schemas.py) leave free-form."""
    text = {"type": "string"}
    obj = {"type": "object", "additionalProperties": {}, "example": {}}
    status = {"$ref": "#/components/schemas/TaskStatus"}
    return {
        "Artifact": {
            "type": "object",
            "description": "An output of the task; this agent's result is the `quineling-result` artifact, one "
            "data part holding `{operation, result}` (docs/runtime-operations.md).",
            "required": ["artifactId", "parts"],
            "properties": {
                "artifactId": {**text, "example": "quineling-result"},
                "name": text,
                "description": text,
                "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
                "metadata": obj,
                "extensions": {"type": "array", "items": text},
            },
        },
        "TaskStatusUpdateEvent": {
            "type": "object",
            "description": "The task's status changed.",
            "required": ["taskId", "contextId", "status"],
            "properties": {"taskId": text, "contextId": text, "status": status, "metadata": obj},
        },
        "TaskArtifactUpdateEvent": {
            "type": "object",
            "description": "An artifact of the task was added or extended.",
            "required": ["taskId", "contextId", "artifact"],
            "properties": {
                "taskId": text,
                "contextId": text,
                "artifact": {"$ref": "#/components/schemas/Artifact"},
                "append": {"type": "boolean"},
                "lastChunk": {"type": "boolean"},
                "metadata": obj,
            },
        },
    }


def _ref(name: str) -> JSON:
    return {"$ref": f"#/components/schemas/{name}"}


# Body fields that flask-smorest documents as free-form objects, and the exact schema of each.
_BODY_FIELDS = {
    ("SendMessageRequest", "message"): "Message",
    ("SendMessageRequest", "configuration"): "SendMessageConfiguration",
}
# Answer fields the same: documented by their real schema, so the page shows their fields (a free-form
# object would show Swagger UI's placeholder `additionalProp1`).
_RESPONSE_FIELDS: dict[tuple[str, str], JSON] = {
    ("TaskStatus", "message"): _ref("Message"),
    ("Task", "artifacts"): {"type": "array", "items": _ref("Artifact")},
    ("Task", "history"): {"type": "array", "items": _ref("Message")},
    ("Task", "metadata"): {
        "type": "object",
        "additionalProperties": {},
        "description": "`generation`: how many times the task has changed (the long-poll's "
        "`currentGeneration` waits for a higher one)",
        "example": {"generation": 3},
    },
    ("SendMessageResponse", "message"): _ref("Message"),
    ("StreamResponse", "message"): _ref("Message"),
    ("StreamResponse", "statusUpdate"): _ref("TaskStatusUpdateEvent"),
    ("StreamResponse", "artifactUpdate"): _ref("TaskArtifactUpdateEvent"),
}


def version_pattern(versions: tuple[str, ...]) -> str:
    """Every ``A2A-Version`` value the binding takes for ``versions`` (versions.normalize_version: blanks
    around the parts, ``1`` for ``1.0``, anything after ``Major.Minor.``)."""
    forms = []
    for version in versions:
        major, minor = version.split(".")
        bare = "?" if minor == "0" else ""
        forms.append(rf"{major}\s*(?:\.\s*{minor}\s*(?:\..*)?){bare}")
    return r"^\s*(?:" + "|".join(forms) + r")\s*$"


def stream_event_schema() -> JSON:
    """One Server-Sent Event as OpenAPI 3.0 tools read a ``text/event-stream`` schema: the event's fields.
    ``x-data-schema`` says what the JSON in ``data`` is (OpenAPI 3.0 has no keyword for it)."""
    return {
        "type": "object",
        "required": ["data"],
        "properties": {
            "event": {
                "type": "string",
                "enum": ["message", "error"],
                "description": "`message` (the default): `data` is a StreamResponse; `error`: the stream "
                "failed after it started, `data` is an ErrorResponse and the stream ends",
            },
            "data": {"type": "string", "description": "One JSON object on one line"},
        },
        "x-data-schema": {
            "message": {"$ref": "#/components/schemas/StreamResponse"},
            "error": {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"},
        },
    }


def error_response(status: int, failures: list[Failure]) -> JSON:
    """The response object for ``status``: the error body narrowed to the codes and reasons it can carry."""
    narrowed = {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "code": {"type": "integer", "enum": [status]},
                    "status": {"type": "string", "enum": sorted({f.error.status for f in failures})},
                    "details": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "reason": {
                                    "type": "string",
                                    "enum": sorted({f.error.reason for f in failures}),
                                }
                            },
                        },
                    },
                },
            }
        },
    }
    # The operation's own failure makes the most telling example; the common ones come first in the list.
    example = failures[-1].example()
    response: JSON = {
        "description": "\n".join(f"- `{f.error.reason}`: {f.when}" for f in failures),
        "content": {
            "application/json": {
                "schema": {"allOf": [{"$ref": f"#/components/schemas/{ERROR_SCHEMA}"}, narrowed]},
                "example": example,
            }
        },
    }
    retry_after = {f.error.retry_after for f in failures if f.error.retry_after is not None}
    if status == 429:
        retry_after.add(1)
    if retry_after:
        response["headers"] = {
            "Retry-After": {
                "description": "Seconds to wait before sending the request again.",
                "required": True,
                "schema": {"type": "integer", "minimum": 0, "example": min(retry_after)},
            }
        }
    if status == 429:
        response["headers"].update(_RATE_LIMIT_HEADERS)
    return response


# The draft IETF RateLimit fields, sent with every counted answer and so with the refusal too.
_RATE_LIMIT_HEADERS: JSON = {
    "RateLimit-Limit": {
        "description": "The request quota of the limit closest to exhaustion (the exceeded one, here).",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
    "RateLimit-Remaining": {
        "description": "Requests left in its window: 0 on a refusal.",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
    "RateLimit-Reset": {
        "description": "Seconds until its window resets.",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    },
    "RateLimit-Policy": {
        "description": "Every configured limit, as `amount;w=seconds`, comma-separated.",
        "required": True,
        "schema": {"type": "string"},
    },
}


# --- the apispec plugin --------------------------------------------------------------------------------


class Documenter(BasePlugin):
    """Completes each REST operation of the generated document (runs after flask-smorest's plugins)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.tenant_route_bodies: set[str] = set()  # body schemas a tenant route refers to

    def init_spec(self, spec: APISpec) -> None:
        self.spec = spec

    def path_helper(
        self, path: str | None = None, operations: Any = None, parameters: Any = None, **_kwargs: Any
    ) -> None:
        for parameter in parameters or []:
            if isinstance(parameter, dict) and parameter.get("in") == "path":
                parameter.update(self._path_parameter(parameter["name"]))

    def operation_helper(self, path: str | None = None, operations: Any = None, **_kwargs: Any) -> None:
        if not path or not path.startswith(self.facts.prefix + "/"):
            return
        route = path[len(self.facts.prefix) :]
        tenant_route = route.startswith("/{tenant}/")
        if tenant_route:
            route = route[len("/{tenant}") :]
        for method, operation in operations.items():
            doc = OPERATIONS.get((method, route))
            if doc is None:
                raise LookupError(
                    f"{method.upper()} {path} has no entry in quineling.a2a.openapi.OPERATIONS: document it there"
                )
            self._complete(operation, doc, method, path, tenant_route)

    # -- one operation --------------------------------------------------------------------------------

    def _complete(self, operation: JSON, doc: Operation, method: str, path: str, tenant_route: bool) -> None:
        facts = self.facts
        operation["operationId"] = doc.operation_id + ("ForTenant" if tenant_route else "")
        operation["summary"] = doc.summary
        operation["tags"] = [TENANT_TAG if tenant_route else doc.tag]
        operation["description"] = self._description(doc, method, path, tenant_route)

        parameters = [self._version_header()]
        for parameter in operation.get("parameters", []):
            if isinstance(parameter, dict) and parameter.get("in") == "query":
                self._query_parameter(parameter, doc, tenant_route)
            parameters.append(parameter)
        operation["parameters"] = parameters

        if "requestBody" in operation:
            body = operation["requestBody"]
            media = next(iter(body["content"].values()))
            body["required"] = doc.body_required
            if tenant_route:
                media = self._tenant_route_body(media)
            body["content"] = {
                media_type: {**copy.deepcopy(media), "example": doc.body} for media_type in JSON_MEDIA_TYPES
            }

        succeeds = doc.capability is None or bool(facts.capabilities.get(doc.capability))
        responses: JSON = {}
        for status, response in operation.get("responses", {}).items():
            if not str(status).startswith("2") or not succeeds:
                continue  # flask-smorest's 422 and default error: this binding sends neither
            responses[str(status)] = self._success(response, doc)
            if doc.links:
                responses[str(status)]["links"] = self._links(doc, tenant_route)
        by_status: dict[int, list[Failure]] = {}
        for failure in failures_of(doc, facts, path):
            by_status.setdefault(failure.status, []).append(failure)
        for status in sorted(by_status):
            responses[str(status)] = error_response(status, by_status[status])
        operation["responses"] = responses

    def _description(self, doc: Operation, method: str, path: str, tenant_route: bool) -> str:
        parts = [doc.description]
        if tenant_route:
            parts.append(
                f"This route acts in the tenant named in the path, which wins over a `tenant` in the body or "
                f"query; `{path.replace('/{tenant}', '', 1)}` is the same operation for the default tenant."
            )
        if doc.capability and not self.facts.capabilities.get(doc.capability):
            parts.append(
                f"This agent's card declares `capabilities.{doc.capability}: false`, so this operation "
                f"always fails as documented below."
            )
        if doc.stream:
            parts.append(
                "An error found before the stream starts is an ordinary error answer (below); one after it "
                "started is a final `event: error` frame whose data is an `ErrorResponse`."
            )
        parts.append("**Example**\n\n```sh\n" + self._curl(doc, method, path) + "\n```")
        return "\n\n".join(parts)

    def _curl(self, doc: Operation, method: str, path: str) -> str:
        url = self.facts.base_url + path.replace("{tenant}", self.facts.example_tenant)
        for name, value in EXAMPLE_PATH_VALUES.items():
            url = url.replace("{" + name + "}", value)
        if doc.query:
            url += "?" + urlencode(doc.query)
        words = ["curl", "-s"] + (["-N"] if doc.stream else [])
        if method != "get" and not doc.body:
            words += ["-X", method.upper()]
        words += [url, "-H", f"A2A-Version: {self.facts.newest}"]
        if doc.body:
            words += ["-H", "Content-Type: application/json", "-d", json.dumps(doc.body, ensure_ascii=False)]
        return " ".join(shlex.quote(word) for word in words)

    def _success(self, response: Any, doc: Operation) -> Any:
        if not isinstance(response, dict) or "content" not in response:
            return response
        content = response["content"]
        if "application/json" in content:
            # The media type follows Accept: application/a2a+json unless the client prefers application/json.
            response["content"] = {
                media_type: copy.deepcopy(content["application/json"]) for media_type in JSON_MEDIA_TYPES
            }
        if doc.stream:
            response["description"] = (
                "A stream of Server-Sent Events: each `data:` line holds one StreamResponse as JSON, the "
                "first one the task. Comment lines (`: keepalive`) may come between events."
            )
            response["content"] = {"text/event-stream": {"schema": stream_event_schema()}}
        return response

    @staticmethod
    def _links(doc: Operation, tenant_route: bool) -> JSON:
        suffix = "ForTenant" if tenant_route else ""
        parameters = {"task_id": "$response.body#/task/id"}
        if tenant_route:
            parameters["tenant"] = "$request.path.tenant"
        return {
            target: {
                "operationId": target + suffix,
                "parameters": dict(parameters),
                "description": f"{target} on the task this answer carries",
            }
            for target in doc.links
        }

    def _tenant_route_body(self, media: JSON) -> JSON:
        """On a tenant route the body's ``tenant`` is ignored (the path's wins), so such a route refers to
        a copy of the body schema whose ``tenant`` takes any string (made in :meth:`finish`)."""
        ref = media.get("schema", {}).get("$ref", "")
        name = ref.rsplit("/", 1)[-1]
        if not name:
            return media
        self.tenant_route_bodies.add(name)
        return {**media, "schema": {"$ref": f"#/components/schemas/{name}{TENANT_ROUTE_SUFFIX}"}}

    # -- parameters -----------------------------------------------------------------------------------

    def _version_header(self) -> JSON:
        return {
            "in": "header",
            "name": "A2A-Version",
            "required": True,
            "description": f"The A2A protocol version of the request: {', '.join(self.facts.versions)} (a "
            "patch part is ignored, and `1` means `1.0`). Without it a request is taken as v0.3, which this "
            "binding does not serve. The query parameter `A2A-Version` is accepted instead.",
            # A pattern, not an enum: `1` and `1.0.2` are taken as 1.0 too.
            "schema": {
                "type": "string",
                "pattern": version_pattern(self.facts.versions),
                "default": self.facts.newest,
            },
            "example": self.facts.newest,
        }

    def _path_parameter(self, name: str) -> JSON:
        if name == "tenant":
            schema: JSON = {"type": "string", "minLength": 1, "pattern": "^[^/]+$"}
            if self.facts.tenants is None:
                description = "Any tenant: this agent serves every tenant (`QUINELING_TENANTS=*`)."
            else:
                schema["enum"] = sorted(self.facts.tenants)
                description = (
                    "One of the tenants this agent serves (`QUINELING_TENANTS`); any other is 400 "
                    "`INVALID_PARAMS`."
                )
            return {"schema": schema, "description": description, "example": self.facts.example_tenant}
        if name == "task_id":
            # One path segment without ':' (rest.TaskIdConverter): ':' starts the custom method.
            return {
                "schema": {"type": "string", "minLength": 1, "pattern": "^[^/:]+$"},
                "description": "The task's id.",
                "example": EXAMPLE_TASK_ID,
            }
        if name == "config_id":
            return {"description": "The push notification config's id.", "example": "cfg-1"}
        return {}

    def _query_parameter(self, parameter: JSON, doc: Operation, tenant_route: bool) -> None:
        schema = parameter.setdefault("schema", {})
        schema.pop("nullable", None)  # a query value is a string or absent, never null
        name = parameter["name"]
        if name == "tenant":
            if tenant_route:
                parameter["description"] = IGNORED_TENANT
            else:
                schema.update(self.body_tenant_schema(nullable=False))
                parameter["description"] = self.tenant_description()
        elif name == "status":
            # A TaskState name or number; empty is no filter (wire.enum).
            schema["enum"] = ["", *enum_schema(TASK_STATES, nullable=False)["anyOf"][0]["enum"]]
        elif schema.get("type") == "integer":
            schema.setdefault("format", "int32")
            schema.setdefault("maximum", INT32_MAX)
        # No `example` on a query parameter: Swagger UI pre-fills it on "Try it out", which would filter
        # ListTasks down to one state and page size. The operation's curl example shows the values instead.

    def tenant_description(self) -> str:
        if self.facts.tenants is None:
            return "The tenant to act in (any; empty is the default tenant). A tenant in the path wins."
        return (
            "The tenant to act in: empty for the default tenant, or one this agent serves "
            "(`QUINELING_TENANTS`); any other is 400 `INVALID_PARAMS`. A tenant in the path wins."
        )

    def body_tenant_schema(self, *, nullable: bool) -> JSON:
        if self.facts.tenants is None:
            return {}
        values: list[Any] = ["", *sorted(self.facts.tenants)]
        return {"enum": values + [None] if nullable else values}

    # -- the whole document ---------------------------------------------------------------------------

    def finish(self) -> None:
        """What only the whole document can say: tenant fields of body schemas, which tenant routes exist,
        and the tags in use. Paths and tags live in apispec's ``_paths`` and ``_tags`` (no public setter)."""
        schemas = self.spec.components.schemas
        for (name, field_name), component in _BODY_FIELDS.items():
            if name in schemas:
                schemas[name]["properties"][field_name] = {"$ref": f"#/components/schemas/{component}"}
        for (name, field_name), schema in _RESPONSE_FIELDS.items():
            if name in schemas:
                schemas[name]["properties"][field_name] = copy.deepcopy(schema)
        for schema in schemas.values():
            tenant = schema.get("properties", {}).get("tenant")
            if isinstance(tenant, dict):
                tenant.update(self.body_tenant_schema(nullable=bool(tenant.get("nullable"))))
                tenant["description"] = self.tenant_description()
        for name in sorted(self.tenant_route_bodies):
            variant = copy.deepcopy(schemas[name])
            tenant = variant.get("properties", {}).get("tenant")
            if isinstance(tenant, dict):
                tenant.pop("enum", None)
                tenant["description"] = IGNORED_TENANT
            schemas[name + TENANT_ROUTE_SUFFIX] = variant
        paths: dict[str, Any] = self.spec._paths
        if self.facts.tenants is not None and not self.facts.tenants:
            # This agent serves no tenant besides the default: every tenant route would only answer 400.
            for path in [p for p in paths if p.startswith(self.facts.prefix + "/{tenant}/")]:
                del paths[path]
        self._prune_schemas(paths)
        used = {
            tag
            for item in paths.values()
            for op in item.values()
            if isinstance(op, dict)
            for tag in op.get("tags", [])
        }
        self.spec._tags[:] = [
            {"name": name, "description": text} for name, text in TAGS.items() if name in used
        ]

    def _prune_schemas(self, paths: Mapping[str, Any]) -> None:
        """Drop component schemas nothing refers to: flask-smorest registers its own error and pagination
        schemas up front, and this binding sends neither."""
        schemas = self.spec.components.schemas
        prefix = "#/components/schemas/"
        reached: set[str] = set()
        pending = list(_refs(paths))
        while pending:
            ref = pending.pop()
            name = ref[len(prefix) :] if ref.startswith(prefix) else None
            if name is None or name in reached or name not in schemas:
                continue
            reached.add(name)
            pending.extend(_refs(schemas[name]))
        for name in [n for n in schemas if n not in reached]:
            del schemas[name]


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [ref for item in value.values() for ref in _refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    return []


# --- registration --------------------------------------------------------------------------------------


def _assets_dir() -> str:
    return str(resources.files("flask_swagger_ui") / "dist")


def _info_description(facts: Facts) -> str:
    routes = facts.prefix + "/{tenant}/…"
    if facts.tenants is None:
        tenants = f"every tenant is served (`QUINELING_TENANTS=*`), at `{routes}`."
    elif facts.tenants:
        names = ", ".join(f"`{t}`" for t in sorted(facts.tenants))
        tenants = f"besides the default one, this agent serves {names} at `{routes}`."
    else:
        tenants = f"this agent serves only the default tenant, so the `{routes}` routes are left out."
    return "\n".join(
        [
            "The A2A 1.0 HTTP+JSON binding of the Quineling agent. Its agent card is "
            "`/.well-known/agent-card.json`; the same operations are served over JSON-RPC at `/a2a/jsonrpc`.",
            "",
            f"- Every request carries the header `A2A-Version: {facts.newest}`: without it a request is taken "
            "as v0.3, which this binding does not serve.",
            f"- Request bodies are JSON (`application/json` or `application/a2a+json`), at most "
            f"{facts.request_limit_bytes} bytes; field names may be camelCase or snake_case, and `null` counts "
            "as absent.",
            "- Answers are `application/a2a+json`, or `application/json` when `Accept` prefers it (or names "
            "only it); error answers are `application/json`.",
            "- Every error answer is an `ErrorResponse`: a google.rpc.Status whose `code` is the HTTP status "
            "and whose one `ErrorInfo` detail names the A2A reason. An unknown route is 404 "
            "`METHOD_NOT_FOUND`; a method a route does not serve is 405 with an `Allow` header.",
            f"- Tenants: {tenants}",
        ]
    )


def register(app: Flask, blueprint: SmorestBlueprint) -> Api:
    """Register the HTTP+JSON ``blueprint`` with its OpenAPI document at ``<prefix>/openapi.json`` and the
    Swagger UI page at ``<prefix>/docs``. Needs the app's :class:`A2AState` already in place."""
    prefix = blueprint.url_prefix or ""
    facts = Facts.of(prefix, app.extensions[EXTENSION_NAME])
    documenter = Documenter(facts)
    app.config.setdefault("OPENAPI_SWAGGER_UI_PATH", DOCS_PATH)
    # Relative to the page (<prefix>/docs), so it holds under any mount point.
    app.config.setdefault("OPENAPI_SWAGGER_UI_URL", ASSETS_PATH + "/")
    app.config.setdefault(
        "OPENAPI_SWAGGER_UI_CONFIG",
        # validatorUrl: Swagger UI would otherwise send the document to an online validator.
        {"validatorUrl": None, "deepLinking": True, "displayOperationId": True, "tryItOutEnabled": True},
    )
    docs_url = f"{facts.base_url}{prefix}/{DOCS_PATH}"
    spec_kwargs: dict[str, Any] = {
        "extra_plugins": [documenter],
        "info": {"description": _info_description(facts)},
        "externalDocs": {"description": "Interactive API page (Swagger UI)", "url": docs_url},
    }
    if facts.bearer is not None:
        spec_kwargs["security"] = [{BEARER_SCHEME: []}]  # every operation; the scheme is declared below
    api = Api(app, spec_kwargs=spec_kwargs)
    for name, schema in {**error_components(), **request_components(), **response_components()}.items():
        api.spec.components.schema(name, component=schema)
    if facts.bearer is not None:
        # The card's scheme in OpenAPI's words, so the docs page's "Authorize" sends the token on "Try it out".
        scheme = {"type": "http", "scheme": "bearer", "description": facts.bearer.get("description", "")}
        if "bearerFormat" in facts.bearer:
            scheme["bearerFormat"] = facts.bearer["bearerFormat"]
        api.spec.components.security_scheme(BEARER_SCHEME, scheme)
    api.register_blueprint(blueprint)
    documenter.finish()
    app.register_blueprint(_assets_blueprint(prefix))
    # The page with a trailing slash, as people type it: a permanent redirect to the page (under the mount
    # point the request came through, if any).
    app.add_url_rule(
        f"{prefix}/{DOCS_PATH}/",
        "a2a_rest_docs_slash",
        lambda: redirect(f"{request.script_root}{prefix}/{DOCS_PATH}", code=308),
        methods=["GET"],
    )
    return api


def _assets_blueprint(prefix: str) -> Blueprint:
    assets = Blueprint("a2a_rest_docs_assets", __name__, url_prefix=f"{prefix}/{ASSETS_PATH}")
    directory = _assets_dir()

    @assets.get("/<path:filename>")
    def asset(filename: str) -> Response:
        return send_from_directory(directory, filename, max_age=24 * 3600)

    return assets
