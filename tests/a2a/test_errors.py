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
    codes = sorted(cls.code for cls in errors.ALL_ERRORS)
    assert codes == [-32700, -32603, -32602, -32601, -32600, *range(-32009, -32000)]
    assert {cls.reason for cls in errors.ALL_ERRORS if cls.a2a} == A2A_REASONS
    assert set(errors.ERRORS_BY_REASON) == A2A_REASONS


@pytest.mark.parametrize("cls", errors.ALL_ERRORS, ids=lambda c: c.__name__)
def test_renders(cls: type[errors.A2AError]) -> None:
    exc = cls(metadata={"taskId": "t-1"})
    assert exc.message == cls.default_message
    rpc = exc.to_jsonrpc()
    assert set(rpc) <= {"code", "message", "data"} and rpc["code"] == cls.code
    if cls.a2a:
        assert -32099 <= cls.code <= -32001
        (info,) = rpc["data"]
        assert info == {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": cls.reason,
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": "t-1"},
        }
    else:
        assert "data" not in rpc
    rest = exc.to_rest()["error"]
    assert rest["code"] == cls.http_status and rest["status"] == cls.status
    assert rest["message"] == cls.default_message
    assert rest["details"][0]["reason"] == cls.reason
    assert errors.ERRORS_BY_CODE[cls.code] is cls


def test_v101_http_table() -> None:
    """The v1.0.1 statuses (400/400/500, not 409/415/502)."""
    assert errors.TaskNotCancelableError.http_status == 400
    assert errors.ContentTypeNotSupportedError.http_status == 400
    assert errors.InvalidAgentResponseError.http_status == 500
    assert errors.TaskNotFoundError.http_status == 404
    assert errors.MethodNotFoundError.http_status == 404


def test_custom_message_kept() -> None:
    assert errors.TaskNotFoundError("Task not found: x").to_jsonrpc()["message"] == "Task not found: x"
