"""A2A protocol errors. Each class carries its own wire codes; every lookup table is derived from them.

Also the one place that turns any other failure into a protocol error (:func:`as_a2a_error`): a store
failure, a routing error of the HTTP layer, or an unexpected exception (logged, answered as internal).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from werkzeug.exceptions import HTTPException

from stores.errors import ClaimsFull, StoreError, StoreUnavailable, TaskStoreFull, TaskTooLarge

log = logging.getLogger(__name__)

ERROR_DOMAIN = "a2a-protocol.org"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"


class A2AError(Exception):
    """Root of the protocol errors. Subclasses set the class attributes below (the A2A 1.0.1 error table;
    docs/decisions-a2a.md, "Where the protocol's sources disagree"). ``http_status`` given to one error
    overrides the class's for it alone (a REST routing or media-type failure), as ``status_code``."""

    code: ClassVar[int] = -32603
    http_status: ClassVar[int] = 500
    status: ClassVar[str] = "INTERNAL"
    reason: ClassVar[str] = "INTERNAL_ERROR"
    default_message: ClassVar[str] = "Internal error"
    # The nine A2A errors always carry an ErrorInfo in JSON-RPC ``error.data``; a JSON-RPC standard error
    # carries one only when it has metadata (e.g. ``retryable``), and REST bodies always carry one
    # (docs/decisions-a2a.md, as above).
    a2a: ClassVar[bool] = False
    # Seconds a client should wait before sending the request again (HTTP ``Retry-After``); None: no hint. A
    # class's own value, which an instance may replace (UnavailableError's ``retry_after=``).
    retry_after: int | None = None

    def __init__(
        self,
        message: str | None = None,
        *,
        metadata: dict[str, str] | None = None,
        http_status: int | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.metadata = {k: str(v) for k, v in (metadata or {}).items()}
        self.status_code = http_status or type(self).http_status
        super().__init__(self.message)

    def error_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"@type": ERROR_INFO_TYPE, "reason": self.reason, "domain": ERROR_DOMAIN}
        if self.metadata:
            info["metadata"] = dict(self.metadata)
        return info

    def to_jsonrpc(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` member: only ``code``/``message``/``data``."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.a2a or self.metadata:
            error["data"] = [self.error_info()]
        return error

    def to_rest(self) -> dict[str, Any]:
        """The REST body, ``google.rpc.Status`` as JSON; ``error.code`` equals the HTTP status."""
        return {
            "error": {
                "code": self.status_code,
                "status": self.status,
                "message": self.message,
                "details": [self.error_info()],
            }
        }


# --- JSON-RPC standard errors ------------------------------------------------------------------------


class JSONParseError(A2AError):
    code, http_status, status, reason = -32700, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"
    default_message = "Invalid JSON payload"


class InvalidRequestError(A2AError):
    code, http_status, status, reason = -32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"
    default_message = "Request payload validation error"


class MethodNotFoundError(A2AError):
    code, http_status, status, reason = -32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND"
    default_message = "Method not found"


class InvalidParamsError(A2AError):
    code, http_status, status, reason = -32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"
    default_message = "Invalid parameters"


class InternalError(A2AError):
    code, http_status, status, reason = -32603, 500, "INTERNAL", "INTERNAL_ERROR"
    default_message = "Internal error"


RETRY_AFTER_SECONDS = 1  # what an outage answer suggests: Redis restarts, fails over or resumes in seconds


class UnavailableError(InternalError):
    """A transient failure of what the agent depends on (its storage): JSON-RPC -32603 like any internal
    error, HTTP 503 with ``Retry-After``, and always ``metadata.retryable = "true"`` and
    ``metadata.retryAfterSeconds`` so JSON-RPC clients can tell it apart (docs/decisions-a2a.md, "Storage
    outages")."""

    http_status, status = 503, "UNAVAILABLE"
    default_message = "Storage is unavailable; retry later"
    retry_after = RETRY_AFTER_SECONDS

    def __init__(
        self,
        message: str | None = None,
        *,
        metadata: dict[str, str] | None = None,
        retry_after: int | None = None,
        **kw: Any,
    ) -> None:
        if retry_after is not None:  # this failure knows when it passes (a full scope registry)
            self.retry_after = retry_after
        marker = {"retryable": "true", "retryAfterSeconds": str(self.retry_after)}
        super().__init__(message, metadata={**(metadata or {}), **marker}, **kw)


# --- A2A errors ----------------------------------------------------------------------------------------


class _A2ASpecific(A2AError):
    a2a = True


class TaskNotFoundError(_A2ASpecific):
    code, http_status, status, reason = -32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"
    default_message = "Task not found"


class TaskNotCancelableError(_A2ASpecific):
    code, http_status, status, reason = -32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"
    default_message = "Task cannot be canceled"


class PushNotificationNotSupportedError(_A2ASpecific):
    code, http_status, status = -32003, 400, "FAILED_PRECONDITION"
    reason = "PUSH_NOTIFICATION_NOT_SUPPORTED"
    default_message = "Push Notification is not supported"


class UnsupportedOperationError(_A2ASpecific):
    code, http_status, status, reason = -32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"
    default_message = "This operation is not supported"


class ContentTypeNotSupportedError(_A2ASpecific):
    code, http_status, status, reason = -32005, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"
    default_message = "Incompatible content types"


class InvalidAgentResponseError(_A2ASpecific):
    code, http_status, status, reason = -32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"
    default_message = "Invalid agent response type"


class ExtendedAgentCardNotConfiguredError(_A2ASpecific):
    code, http_status, status = -32007, 400, "FAILED_PRECONDITION"
    reason = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    default_message = "Extended Agent Card not configured"


class ExtensionSupportRequiredError(_A2ASpecific):
    code, http_status, status, reason = -32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED"
    default_message = "Extension support required"


class VersionNotSupportedError(_A2ASpecific):
    code, http_status, status, reason = -32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"
    default_message = "Version not supported"


def _concrete(cls: type[A2AError]) -> list[type[A2AError]]:
    found: list[type[A2AError]] = []
    for sub in cls.__subclasses__():
        if not sub.__name__.startswith("_"):
            found.append(sub)
        found.extend(_concrete(sub))
    return found


ALL_ERRORS: tuple[type[A2AError], ...] = tuple(_concrete(A2AError))
ERRORS_BY_CODE: dict[int, type[A2AError]] = {}
for _cls in ALL_ERRORS:  # a code's most general class (UnavailableError is an InternalError, -32603)
    ERRORS_BY_CODE.setdefault(_cls.code, _cls)
# Reasons are unique among the A2A errors only (the standard ones share INVALID_REQUEST etc.).
ERRORS_BY_REASON: dict[str, type[A2AError]] = {cls.reason: cls for cls in ALL_ERRORS if cls.a2a}


# --- everything else, as a protocol error ------------------------------------------------------------------


def store_failure(exc: StoreError) -> InternalError:
    """A store failure as the client sees it.

    Transient ones — the store is unreachable, stalled, restarting, or has no task it may evict — are an
    :class:`UnavailableError` (503, ``Retry-After``, ``metadata.retryable``): a request whose store call was
    refused committed nothing; one whose reply was lost (a timeout) may have committed, and a retry then finds
    what it did (docs/decisions-a2a.md, "Storage outages"). Anything else is an :class:`InternalError`,
    logged with its traceback."""
    if isinstance(exc, TaskTooLarge):
        return InternalError("Task storage refused the task: it exceeds the per-task size limit")
    if isinstance(exc, TaskStoreFull):
        return UnavailableError(
            "Task storage is full: no terminal or paused task can be evicted; retry later"
        )
    if isinstance(exc, ClaimsFull):
        return UnavailableError(
            "This tenant holds its limit of live Idempotency-Keys; retry later, when the oldest have expired, "
            "or send without a key"
        )
    if isinstance(exc, StoreUnavailable):
        # An outage hits every request: one line each, not a traceback each.
        log.warning("store unavailable: %s", exc)
        return UnavailableError()
    log.error("store failure", exc_info=exc)
    return InternalError("Storage failed; retry later")


def from_http_exception(exc: HTTPException) -> A2AError:
    """A werkzeug routing or request error (404, 405, 413, …) as the A2A error of the same HTTP status."""
    code = exc.code or 500
    error_cls: type[A2AError] = {404: MethodNotFoundError, 400: InvalidParamsError}.get(
        code, InternalError if code >= 500 else InvalidRequestError
    )
    return error_cls(exc.description if code != 400 else None, http_status=code)


def as_a2a_error(exc: BaseException) -> A2AError:
    """Any failure as the protocol error to answer; an unexpected one is logged with its traceback."""
    if isinstance(exc, A2AError):
        return exc
    if isinstance(exc, StoreError):
        return store_failure(exc)
    if isinstance(exc, HTTPException):
        return from_http_exception(exc)
    log.error("unexpected error", exc_info=exc)
    return InternalError()
