"""JSON-RPC on raw bodies: the order of the checks (media type, size, JSON, envelope, method, params) and
A2A-Version negotiation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1

URL = "/a2a/jsonrpc"


def post(
    client: Any, body: Any, *, headers: dict[str, str] | None = None, content_type: str = "application/json"
) -> Any:
    raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(URL, data=raw, content_type=content_type, headers=V1 if headers is None else headers)


def envelope(method: str = "GetTask", params: Any = None, rpc_id: Any = 1) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def error_of(response: Any) -> dict[str, Any]:
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"jsonrpc", "id", "error"} and body["jsonrpc"] == "2.0"
    return body


def test_non_json_content_type_is_checked_first(client: Any) -> None:
    response = post(client, "not json at all", content_type="text/plain")
    assert response.status_code == 400
    body = error_of(response)
    assert body["id"] is None and body["error"]["code"] == -32005


def test_oversized_body_is_413() -> None:
    client = make_app(request_limit_bytes=1024).test_client()
    response = post(client, envelope("SendMessage", {"message": user_message(text("x" * 2000))}))
    assert response.status_code == 413
    assert error_of(response)["error"]["code"] == -32600


@pytest.mark.parametrize(
    "raw", ['{"jsonrpc": "2.0", "id": 1,', "", '{"x": NaN}', '{"x": Infinity}', b"\xff\xfe"]
)
def test_malformed_json_is_parse_error(client: Any, raw: Any) -> None:
    response = post(client, raw)
    assert response.status_code == 400
    body = error_of(response)
    assert body["id"] is None and body["error"]["code"] == -32700


def test_batch_is_invalid_request(client: Any) -> None:
    response = post(client, [envelope()])
    assert response.status_code == 200
    assert error_of(response)["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("body", "echo"),
    [
        ({"jsonrpc": "1.0", "id": 5, "method": "GetTask"}, 5),
        ({"id": "a", "method": "GetTask"}, "a"),
        ({"jsonrpc": "2.0", "id": 7, "method": 3}, 7),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "GetTask"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "GetTask"}, None),
        ("42", None),
    ],
)
def test_bad_envelope_is_invalid_request(client: Any, body: Any, echo: Any) -> None:
    body = error_of(post(client, body))
    assert body["error"]["code"] == -32600 and body["id"] == echo


@pytest.mark.parametrize("method", ["SendMessage", "GetTask", "SubscribeToTask"])
def test_a_notification_is_refused_and_nothing_runs(client: Any, method: str) -> None:
    """A request object without ``id`` (JSON-RPC 2.0 §4.1) never gets a result or a task error under id null."""
    params = (
        {"message": user_message(text("[1] | sum | report total"))}
        if method == "SendMessage"
        else {"id": "x"}
    )
    response = post(client, {"jsonrpc": "2.0", "method": method, "params": params})
    assert response.status_code == 200
    body = error_of(response)
    assert body["id"] is None and body["error"]["code"] == -32600
    assert "notification" in body["error"]["message"]
    listed = post(client, envelope("ListTasks", {}))
    assert listed.get_json()["result"]["tasks"] == []  # the send was not run


def test_unknown_method(client: Any) -> None:
    body = error_of(post(client, envelope("NoSuchMethod", {})))
    assert body["error"]["code"] == -32601 and body["id"] == 1


@pytest.mark.parametrize("params", [[1, 2], "x", 3])
def test_params_not_object(client: Any, params: Any) -> None:
    assert error_of(post(client, envelope("GetTask", params)))["error"]["code"] == -32602


def test_missing_message(client: Any) -> None:
    assert error_of(post(client, envelope("SendMessage", {})))["error"]["code"] == -32602
    assert error_of(post(client, envelope("SendMessage")))["error"]["code"] == -32602


def test_extended_card_params_may_be_omitted(client: Any) -> None:
    assert error_of(post(client, envelope("GetExtendedAgentCard")))["error"]["code"] == -32004


def test_unsupported_version(client: Any) -> None:
    body = error_of(post(client, envelope("GetTask", {"id": "x"}), headers={"A2A-Version": "99.0"}))
    assert body["error"]["code"] == -32009
    assert body["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"


def test_patch_version_ignored_and_query_parameter(client: Any) -> None:
    body = error_of(post(client, envelope("GetTask", {"id": "x"}), headers={"A2A-Version": "1.0.7"}))
    assert body["error"]["code"] == -32001
    response = client.post(URL + "?A2A-Version=1.0", json=envelope("GetTask", {"id": "x"}))
    assert error_of(response)["error"]["code"] == -32001


def test_header_less_allowed_only_with_compat() -> None:
    """Absent A2A-Version means 0.3: accepted while the card declares a JSONRPC 0.3 interface."""
    body = envelope("GetTask", {"id": "x"})
    with_compat = make_app(legacy_compat=True).test_client()
    assert error_of(post(with_compat, body, headers={}))["error"]["code"] == -32001
    without = make_app(legacy_compat=False).test_client()
    assert error_of(post(without, body, headers={}))["error"]["code"] == -32009
    assert error_of(post(without, body, headers={"A2A-Version": ""}))["error"]["code"] == -32009


def test_v03_method_without_compat_is_unknown() -> None:
    client = make_app(legacy_compat=False).test_client()
    params = {
        "message": {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "x"}],
        }
    }
    assert error_of(post(client, envelope("message/send", params)))["error"]["code"] == -32601


def test_v03_method_with_compat_answers_v03(client: Any) -> None:
    params = {
        "message": {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": "x"}],
        }
    }
    response = post(client, envelope("message/send", params), headers={})
    result = response.get_json()["result"]
    assert result["kind"] == "task" and result["status"]["state"] == "completed"
    missing = post(client, envelope("tasks/get", {"id": "nope"}), headers={}).get_json()["error"]
    assert missing == {"code": -32001, "message": "Task not found: nope"}


def test_trailing_slash_is_served_without_redirect(client: Any) -> None:
    response = client.post(URL + "/", json=envelope("GetTask", {"id": "x"}), headers=V1)
    assert response.status_code == 200 and error_of(response)["error"]["code"] == -32001


def test_id_is_echoed_on_success(client: Any) -> None:
    body = envelope("SendMessage", {"message": user_message(text("x"))}, rpc_id="abc")
    response = post(client, body).get_json()
    assert response["id"] == "abc" and "task" in response["result"]


def test_a2a_json_content_type_accepted(client: Any) -> None:
    response = post(
        client, envelope("GetTask", {"id": "x"}), content_type="application/a2a+json; charset=utf-8"
    )
    assert error_of(response)["error"]["code"] == -32001


def test_get_is_not_allowed_but_json_shaped(client: Any) -> None:
    response = client.get(URL)
    assert response.status_code == 405 and response.get_json()["error"]["code"] == -32600


def test_tenant_param_scopes_tasks(client: Any) -> None:
    body = envelope("SendMessage", {"tenant": "acme", "message": user_message(text("x"))})
    task_id = post(client, body).get_json()["result"]["task"]["id"]
    assert error_of(post(client, envelope("GetTask", {"id": task_id})))["error"]["code"] == -32001
    assert (
        post(client, envelope("GetTask", {"id": task_id, "tenant": "acme"})).get_json()["result"]["id"]
        == task_id
    )
    assert (
        error_of(post(client, envelope("GetTask", {"id": task_id, "tenant": 7})))["error"]["code"] == -32602
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        # What the official conformance kit's v0.3 suite sends, and the errors it requires: a notification is
        # judged like any request before it is refused, so a wrong method or params keeps its own error.
        ({"jsonrpc": "2.0", "method": "message/ssend", "params": {}}, -32601),
        ({"jsonrpc": "2.0", "method": "message/send", "params": {"": "not_a_dict"}}, -32602),
        ({"jsonrpc": "2.0", "method": "NoSuchMethod", "params": {}}, -32601),
        ({"jsonrpc": "2.0", "method": "GetTask", "params": "not an object"}, -32602),
        # Well-formed notifications, v0.3 and 1.0: refused, never run.
        ({"jsonrpc": "2.0", "method": "message/send", "params": {"message": {
            "kind": "message", "messageId": "m1", "role": "user",
            "parts": [{"kind": "text", "text": "[1] | sum | report total"}]}}}, -32600),
        ({"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "x"}}, -32600),
    ],
)  # fmt: skip
def test_a_notification_gets_the_error_of_what_is_wrong_with_it_first(
    client: Any, body: Any, code: int
) -> None:
    answered = error_of(post(client, body))
    assert answered["id"] is None and answered["error"]["code"] == code, answered
    assert "result" not in answered
    listed = post(client, envelope("ListTasks", {}))
    assert listed.get_json()["result"]["tasks"] == []  # nothing was run
