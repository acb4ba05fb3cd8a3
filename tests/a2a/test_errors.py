"""Every error class renders both wire formats from its own class attributes."""

from __future__ import annotations

import pytest

from quineling.a2a import errors

A2A_REASONS = {
    "TASK_NOT_FOUND", "TASK_NOT_CANCELABLE", "PUSH_NOTIFICATION_NOT_SUPPORTED", "UNSUPPORTED_OPERATION",
    "CONTENT_TYPE_NOT_SUPPORTED", "INVALID_AGENT_RESPONSE", "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    "EXTENSION_SUPPORT_REQUIRED", "VERSION_NOT_SUPPORTED",
}  # fmt: skip


def test_all_fourteen_errors_are_known() -> None:
    codes = sorted({cls.code for cls in errors.ALL_ERRORS})
    assert codes == [-32700, -32603, -32602, -32601, -32600, *range(-32009, -32000)]
    # The one code with two classes: an outage is an InternalError answered as HTTP 503.
    assert [cls for cls in errors.ALL_ERRORS if cls.code == -32603] == [
        errors.InternalError,
        errors.UnavailableError,
    ]
    assert {cls.reason for cls in errors.ALL_ERRORS if cls.a2a} == A2A_REASONS
    assert set(errors.ERRORS_BY_REASON) == A2A_REASONS


@pytest.mark.parametrize("cls", errors.ALL_ERRORS, ids=lambda c: c.__name__)
def test_renders(cls: type[errors.A2AError]) -> None:
    exc = cls(metadata={"taskId": "t-1"})
    assert exc.message == cls.default_message
    rpc = exc.to_jsonrpc()
    assert set(rpc) <= {"code", "message", "data"} and rpc["code"] == cls.code
    (info,) = rpc["data"]  # with metadata, standard errors carry an ErrorInfo too
    assert info == {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": cls.reason,
        "domain": "a2a-protocol.org",
        "metadata": {"taskId": "t-1", **exc.metadata},
    }
    if cls.a2a:
        assert -32099 <= cls.code <= -32001
        assert cls().to_jsonrpc()["data"] == [{k: v for k, v in info.items() if k != "metadata"}]
    else:  # a standard error without metadata keeps the plain JSON-RPC shape
        assert ("data" in cls().to_jsonrpc()) == bool(cls().metadata)
    rest = exc.to_rest()["error"]
    assert rest["code"] == cls.http_status and rest["status"] == cls.status
    assert rest["message"] == cls.default_message
    assert rest["details"][0]["reason"] == cls.reason
    assert issubclass(cls, errors.ERRORS_BY_CODE[cls.code])  # a code maps to its most general class


def test_an_outage_is_retryable_in_both_bindings() -> None:
    exc = errors.UnavailableError()
    marker = {"retryable": "true", "retryAfterSeconds": "1"}
    assert exc.to_jsonrpc() == {
        "code": -32603,
        "message": "Storage is unavailable; retry later",
        "data": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "INTERNAL_ERROR",
                "domain": "a2a-protocol.org",
                "metadata": marker,
            }
        ],
    }
    rest = exc.to_rest()["error"]
    assert (rest["code"], rest["status"], rest["details"][0]["metadata"]) == (503, "UNAVAILABLE", marker)
    assert exc.retry_after == 1 and errors.InternalError.retry_after is None


def test_v101_http_table() -> None:
    """The v1.0.1 statuses (400/400/500, not 409/415/502)."""
    assert errors.TaskNotCancelableError.http_status == 400
    assert errors.ContentTypeNotSupportedError.http_status == 400
    assert errors.InvalidAgentResponseError.http_status == 500
    assert errors.TaskNotFoundError.http_status == 404
    assert errors.MethodNotFoundError.http_status == 404


def test_custom_message_kept() -> None:
    assert errors.TaskNotFoundError("Task not found: x").to_jsonrpc()["message"] == "Task not found: x"
