"""A2A protocol errors. Each class carries its own wire codes; every lookup table is derived from them.

Also the one place that turns any other failure into a protocol error (:func:`as_a2a_error`): a store
failure, a routing error of the HTTP layer, or an unexpected exception (logged, answered as internal).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from werkzeug.exceptions import HTTPException

from quineling.protocol import errors as table
from quineling.protocol.errors import ERROR_DOMAIN, ERROR_INFO_TYPE, ErrorSpec
from stores.errors import ClaimsFull, StoreError, StoreUnavailable, TaskStoreFull, TaskTooLarge

log = logging.getLogger(__name__)

__all__ = ["ERROR_DOMAIN", "ERROR_INFO_TYPE"]  # re-exported: the server's modules read them from here


class A2AError(Exception):
    """Root of the protocol errors. Each subclass names its row of the error table
    (:mod:`quineling.protocol.errors`), which sets the class attributes below. ``http_status`` given to one
    error overrides the class's for it alone (a REST routing or media-type failure), as ``status_code``."""

    code: ClassVar[int] = table.INTERNAL_ERROR.code
    http_status: ClassVar[int] = table.INTERNAL_ERROR.http_status
    status: ClassVar[str] = table.INTERNAL_ERROR.status
    reason: ClassVar[str] = table.INTERNAL_ERROR.reason
    default_message: ClassVar[str] = table.INTERNAL_ERROR.default_message
    # The nine A2A errors (``spec.a2a``) always carry an ErrorInfo in JSON-RPC ``error.data``; a JSON-RPC standard error
    # carries one only when it has metadata (e.g. ``retryable``), and REST bodies always carry one
    # (docs/decisions/, as above).
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

    def __init_subclass__(cls, spec: ErrorSpec | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if spec is not None:
            cls.code, cls.http_status, cls.status = spec.code, spec.http_status, spec.status
            cls.reason, cls.default_message, cls.a2a = spec.reason, spec.default_message, spec.a2a

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


class JSONParseError(A2AError, spec=table.PARSE_ERROR):
    """The body is not JSON."""


class InvalidRequestError(A2AError, spec=table.INVALID_REQUEST):
    """Not a JSON-RPC request, or a request the HTTP layer refuses."""


class MethodNotFoundError(A2AError, spec=table.METHOD_NOT_FOUND):
    """No such method (or route)."""


class InvalidParamsError(A2AError, spec=table.INVALID_PARAMS):
    """The parameters break the protocol's shapes."""


class InternalError(A2AError, spec=table.INTERNAL_ERROR):
    """A failure of the agent itself."""


RETRY_AFTER_SECONDS = 1  # what an outage answer suggests: Redis restarts, fails over or resumes in seconds


class UnavailableError(InternalError, spec=table.UNAVAILABLE):
    """A transient failure of what the agent depends on (its storage): JSON-RPC -32603 like any internal
    error, HTTP 503 with ``Retry-After``, and always ``metadata.retryable = "true"`` and
    ``metadata.retryAfterSeconds`` so JSON-RPC clients can tell it apart (docs/decisions/0009-storage-outages.md)."""

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


class TaskNotFoundError(A2AError, spec=table.TASK_NOT_FOUND):
    """No such task, or none the caller may see."""


class TaskNotCancelableError(A2AError, spec=table.TASK_NOT_CANCELABLE):
    """The task is in a state that cannot be canceled."""


class PushNotificationNotSupportedError(A2AError, spec=table.PUSH_NOTIFICATION_NOT_SUPPORTED):
    """The agent offers no push notifications."""


class UnsupportedOperationError(A2AError, spec=table.UNSUPPORTED_OPERATION):
    """The agent does not offer this operation."""


class ContentTypeNotSupportedError(A2AError, spec=table.CONTENT_TYPE_NOT_SUPPORTED):
    """The agent accepts none of the requested media types."""


class InvalidAgentResponseError(A2AError, spec=table.INVALID_AGENT_RESPONSE):
    """The agent produced a result the protocol cannot carry."""


class ExtendedAgentCardNotConfiguredError(A2AError, spec=table.EXTENDED_AGENT_CARD_NOT_CONFIGURED):
    """The agent has no extended card."""


class ExtensionSupportRequiredError(A2AError, spec=table.EXTENSION_SUPPORT_REQUIRED):
    """The agent requires an extension the client did not declare."""


class VersionNotSupportedError(A2AError, spec=table.VERSION_NOT_SUPPORTED):
    """The agent does not speak the requested protocol version."""


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
    what it did (docs/decisions/0009-storage-outages.md). Anything else is an :class:`InternalError`,
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
