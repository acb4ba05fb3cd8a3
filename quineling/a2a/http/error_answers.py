"""The catalogue of the HTTP+JSON binding's failure answers, for its OpenAPI document.

Each :class:`Failure` is one way an operation fails: the HTTP status, the :class:`A2AError` it answers with
(the binding's ``google.rpc.Status`` body, component ``ErrorResponse``) and when. The failures every
operation shares (the version check, the body's limits, the cross-site defences, storage, the rate limit)
are listed once in :func:`failures_of`; an operation names only its own, on its view in
:mod:`quineling.a2a.http.rest`, with :func:`answers` (``@blp.doc(**answers(...))``). The document then gives, per
status, one response narrowed to the reasons it can carry (:func:`error_response`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

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
from quineling.a2a.http.rate_limit import RATE_LIMIT_DOMAIN, RateLimitedError, parse_limits
from quineling.a2a.long_poll import GenerationMismatchError

JSON = dict[str, Any]

ERROR_SCHEMA = "ErrorResponse"
ANSWERS_KEY = "x-a2a-answers"  # where @blp.doc leaves an operation's Answers; the document never shows it
EXAMPLE_TASK_ID = "8c0f6a4e-5d7b-4f8e-9a51-2f3c4d5e6a7b"


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
class Answers:
    """What a view tells the document about its operation beyond what flask-smorest derives from it."""

    failures: tuple[Failure, ...] = ()  # its own failures, besides the ones every operation shares
    reads_body: bool = False  # parses a JSON body (so a malformed one is an error)
    stores: bool = True  # reads or writes task storage, so a storage failure is a 500 or an outage a 503
    capability: str | None = None  # the card capability without which it never succeeds
    query: Mapping[str, Any] = field(default_factory=dict)  # example query values, for the curl example
    # Operations that take the answer's task id (`task.id`) as their `task_id`: OpenAPI links, which tell a
    # client (and schemathesis' stateful run) how one call leads to the next.
    links: tuple[str, ...] = ()


def answers(*failures: Failure, **facts: Any) -> JSON:
    """The keyword arguments of ``@blp.doc`` that give an operation its :class:`Answers`."""
    return {ANSWERS_KEY: Answers(failures, **facts)}


# --- the failures operations name ----------------------------------------------------------------------

TASK_TOOLS = ("GetTask", "CancelTask", "SubscribeToTask", "SubscribeToTaskByPost")

TASK_NOT_FOUND = Failure(
    404,
    TaskNotFoundError,
    "no task with this id exists for this tenant (unknown, expired, evicted or another tenant's)",
    f"Task not found: {EXAMPLE_TASK_ID}",
    {"taskId": EXAMPLE_TASK_ID},
)
FOLLOW_UP_FAILURES = (
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
PUSH_OFF = Failure(
    400,
    PushNotificationNotSupportedError,
    "always: this agent does not support push notifications",
    "Push notifications are not supported by this agent",
)
TASK_NOT_CANCELABLE = Failure(
    400,
    TaskNotCancelableError,
    "the task is already completed, failed or rejected",
    f"Task {EXAMPLE_TASK_ID} is TASK_STATE_COMPLETED and cannot be canceled",
    {"taskId": EXAMPLE_TASK_ID},
)
TASK_FINAL = Failure(400, UnsupportedOperationError, "the task is already final: there is nothing to follow")
BAD_LISTING = Failure(
    400,
    InvalidParamsError,
    "`pageSize` is not within 1..100, `status` names no task state, `statusTimestampAfter` is "
    "not an RFC 3339 time, or `pageToken` does not belong to this listing",
    "pageSize must be between 1 and 100",
)
NO_EXTENDED_CARD = Failure(
    400,
    UnsupportedOperationError,
    "always: this agent declares no extended agent card",
    "This agent does not declare an extended agent card",
)


# --- the failures every operation shares ---------------------------------------------------------------


def failures_of(
    op: Answers, path: str, versions: tuple[str, ...], request_limit_bytes: int, rate_limit: str
) -> list[Failure]:
    """Every failure ``op`` at ``path`` can answer with: the binding's checks, the body's, storage's, then
    its own. ``versions`` are the A2A versions the binding serves, newest last; ``rate_limit`` is
    QUINELING_RATE_LIMIT as configured (empty: no limit, so never a 429)."""
    newest = versions[-1] if versions else "1.0"
    found = [
        Failure(
            400,
            VersionNotSupportedError,
            "the `A2A-Version` header is missing (which means v0.3) or names a version this binding does not "
            "serve",
            f"A2A-Version 0.3 is not supported by the HTTP+JSON binding (supported: {', '.join(versions)}); "
            f"send the header 'A2A-Version: {newest}'",
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
            f"the request body is larger than {request_limit_bytes} bytes",
            f"Request body exceeds {request_limit_bytes} bytes",
        ),
        Failure(
            415,
            ContentTypeNotSupportedError,
            "the request has a body whose Content-Type is not `application/json` or `application/a2a+json`, "
            "or a POST or DELETE carries neither a JSON Content-Type nor the `A2A-Version` header (the query "
            "parameter does not count: a cross-site form can send it)",
            "Content-Type text/plain is not supported",
        ),
        # The cross-site defences in front of every route (quineling/a2a/http/origin_guard.py).
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
    limits = parse_limits(rate_limit)
    if limits:  # every A2A operation is counted (quineling/a2a/http/rate_limit.py)
        found.append(
            Failure(
                429,
                RateLimitedError,
                f"the caller (its principal, or its address when anonymous) sent more requests than the rate "
                f"limit allows ({rate_limit}); send the request again after `Retry-After` seconds",
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
