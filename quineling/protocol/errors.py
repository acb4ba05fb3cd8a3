"""The A2A 1.0.1 error table: each JSON-RPC code with its name, its ErrorInfo reason, its HTTP status and
``google.rpc`` status name on HTTP+JSON, and its default message (docs/decisions/0001-where-the-protocols-sources-disagree.md).
The server's error classes and the client's readers both derive from it.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR_DOMAIN = "a2a-protocol.org"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"


@dataclass(frozen=True)
class ErrorSpec:
    """One row. ``name`` is what a code is called when an answer carries no ErrorInfo; ``reason`` what the
    ErrorInfo says. They differ for -32700 only: a parse failure is reported with reason INVALID_REQUEST.
    ``a2a``: one of the nine A2A-specific errors, which always carry an ErrorInfo in JSON-RPC ``error.data``."""

    code: int
    name: str
    type_name: str  # the specification's name for the error (``TaskNotFoundError``, ``JSONParseError``, …)
    reason: str
    http_status: int
    status: str
    default_message: str
    a2a: bool = False


# --- JSON-RPC standard errors ------------------------------------------------------------------------


def _standard(code: int, name: str, type_name: str, http_status: int, status: str, message: str) -> ErrorSpec:
    return ErrorSpec(code, name, type_name, name, http_status, status, message)


# A parse failure's ErrorInfo says INVALID_REQUEST, as for any request that is not one.
PARSE_ERROR = ErrorSpec(
    -32700,
    "PARSE_ERROR",
    "JSONParseError",
    "INVALID_REQUEST",
    400,
    "INVALID_ARGUMENT",
    "Invalid JSON payload",
)
INVALID_REQUEST = _standard(
    -32600,
    "INVALID_REQUEST",
    "InvalidRequestError",
    400,
    "INVALID_ARGUMENT",
    "Request payload validation error",
)
METHOD_NOT_FOUND = _standard(
    -32601, "METHOD_NOT_FOUND", "MethodNotFoundError", 404, "NOT_FOUND", "Method not found"
)
INVALID_PARAMS = _standard(
    -32602, "INVALID_PARAMS", "InvalidParamsError", 400, "INVALID_ARGUMENT", "Invalid parameters"
)
INTERNAL_ERROR = _standard(-32603, "INTERNAL_ERROR", "InternalError", 500, "INTERNAL", "Internal error")
# Not a row of its own: the outage form of INTERNAL_ERROR (same code and reason) answered 503 on HTTP+JSON,
# so a client may retry (docs/decisions/0009-storage-outages.md).
UNAVAILABLE = _standard(
    -32603, "INTERNAL_ERROR", "InternalError", 503, "UNAVAILABLE", "Storage is unavailable; retry later"
)

# --- A2A errors ----------------------------------------------------------------------------------------


def _a2a(code: int, reason: str, http_status: int, status: str, message: str) -> ErrorSpec:
    type_name = "".join(word.capitalize() for word in reason.split("_")) + "Error"  # TaskNotFoundError
    return ErrorSpec(code, reason, type_name, reason, http_status, status, message, a2a=True)


TASK_NOT_FOUND = _a2a(-32001, "TASK_NOT_FOUND", 404, "NOT_FOUND", "Task not found")
TASK_NOT_CANCELABLE = _a2a(
    -32002, "TASK_NOT_CANCELABLE", 400, "FAILED_PRECONDITION", "Task cannot be canceled"
)
PUSH_NOTIFICATION_NOT_SUPPORTED = _a2a(
    -32003,
    "PUSH_NOTIFICATION_NOT_SUPPORTED",
    400,
    "FAILED_PRECONDITION",
    "Push Notification is not supported",
)
UNSUPPORTED_OPERATION = _a2a(
    -32004, "UNSUPPORTED_OPERATION", 400, "FAILED_PRECONDITION", "This operation is not supported"
)
CONTENT_TYPE_NOT_SUPPORTED = _a2a(
    -32005, "CONTENT_TYPE_NOT_SUPPORTED", 400, "INVALID_ARGUMENT", "Incompatible content types"
)
INVALID_AGENT_RESPONSE = _a2a(
    -32006, "INVALID_AGENT_RESPONSE", 500, "INTERNAL", "Invalid agent response type"
)
EXTENDED_AGENT_CARD_NOT_CONFIGURED = _a2a(
    -32007,
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    400,
    "FAILED_PRECONDITION",
    "Extended Agent Card not configured",
)
EXTENSION_SUPPORT_REQUIRED = _a2a(
    -32008, "EXTENSION_SUPPORT_REQUIRED", 400, "FAILED_PRECONDITION", "Extension support required"
)
VERSION_NOT_SUPPORTED = _a2a(
    -32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION", "Version not supported"
)

# One row per code: the nine A2A errors, then the JSON-RPC standard ones.
ERRORS: tuple[ErrorSpec, ...] = (
    TASK_NOT_FOUND,
    TASK_NOT_CANCELABLE,
    PUSH_NOTIFICATION_NOT_SUPPORTED,
    UNSUPPORTED_OPERATION,
    CONTENT_TYPE_NOT_SUPPORTED,
    INVALID_AGENT_RESPONSE,
    EXTENDED_AGENT_CARD_NOT_CONFIGURED,
    EXTENSION_SUPPORT_REQUIRED,
    VERSION_NOT_SUPPORTED,
    PARSE_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    INVALID_PARAMS,
    INTERNAL_ERROR,
)
BY_CODE: dict[int, ErrorSpec] = {spec.code: spec for spec in ERRORS}
BY_NAME: dict[str, ErrorSpec] = {spec.name: spec for spec in ERRORS}
