"""v0.3 JSON-RPC compatibility (docs/compat-v03.md) through raw HTTP: header-less v0.3 clients against the
real app and runtime, compat on and off, plus round trips between the v0.3 and 1.0 method families."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from quineling.app import create_app
from tests.support.bindings import V1
from tests.support.sse import parse_sse, sse_events

BASE = "http://127.0.0.1:8049"
RPC = "/a2a/jsonrpc"
CARD = "/.well-known/agent-card.json"
THOUGHT = "[2,3,4] | square | sum | report total"
V03_METHODS = [
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
]


def _app(legacy_compat: bool) -> Flask:
    # Short keep-alive/subscribe windows keep an idle resubscription from holding a test for minutes.
    config = {"keepalive_seconds": 0.2, "subscribe_max_seconds": 5}
    return create_app(base_url=BASE, legacy_compat=legacy_compat, config=config)


@pytest.fixture
def client() -> FlaskClient:
    return _app(True).test_client()


@pytest.fixture
def client_off() -> FlaskClient:
    return _app(False).test_client()


# --- raw wire helpers ----------------------------------------------------------------------------------


def _rpc(
    client: FlaskClient, method: str, params: Any = None, headers: dict[str, str] | None = None, **kw: Any
) -> Any:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        body["params"] = params
    return client.post(
        RPC, data=json.dumps(body), content_type="application/json", headers=headers or {}, **kw
    )


def _result(response: Any) -> Any:
    assert response.status_code == 200 and response.mimetype == "application/json"
    body = response.get_json()
    assert body.get("error") is None, body
    assert body["jsonrpc"] == "2.0" and body["id"] == 7
    return body["result"]


def _error(response: Any) -> dict[str, Any]:
    assert response.status_code == 200 and response.mimetype == "application/json"
    body = response.get_json()
    assert "result" not in body and body["id"] == 7
    return body["error"]


def _message(*parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"kind": "message", "messageId": "m-1", "role": "user", "parts": list(parts), **fields}


TEXT = {"kind": "text", "text": THOUGHT}


def _send(client: FlaskClient, *parts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return _result(_rpc(client, "message/send", {"message": _message(*parts, **fields)}))


def _without_payloads(value: Any) -> Any:
    """A copy with data-part payloads emptied: Quineling results legitimately contain keys like ``kind``."""
    if isinstance(value, list):
        return [_without_payloads(v) for v in value]
    if not isinstance(value, dict):
        return value
    is_part = "data" in value and (
        value.get("kind") == "data" or set(value) <= {"data", "mediaType", "metadata"}
    )
    return {k: (None if is_part and k == "data" else _without_payloads(v)) for k, v in value.items()}


def _keys_and_enums(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            if isinstance(item, str) and key in ("state", "role"):
                yield f"{key}={item}"
            yield from _keys_and_enums(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys_and_enums(item)


def assert_pure_v03(value: Any) -> None:
    """No 1.0-only member or enum spelling anywhere in a v0.3 response."""
    found = set(_keys_and_enums(_without_payloads(value)))
    v1_only = {
        "mediaType",
        "statusUpdate",
        "artifactUpdate",
        "supportedInterfaces",
        "returnImmediately",
        "raw",
    }
    assert not found & v1_only, found & v1_only
    assert not [f for f in found if "=ROLE_" in f or "=TASK_STATE_" in f]


def assert_pure_v1(value: Any) -> None:
    found = set(_keys_and_enums(_without_payloads(value)))
    assert not found & {"kind", "final", "file", "mimeType", "blocking"}, found
    assert not [f for f in found if f.startswith(("state=", "role=")) and "_" not in f]


# --- discovery -----------------------------------------------------------------------------------------


def test_header_less_card_is_the_superset_card(client: FlaskClient) -> None:
    response = client.get(CARD)
    card = response.get_json()
    assert response.status_code == 200 and "A2A-Version" in response.headers.get("Vary", "")
    assert card["protocolVersion"] == "0.3"
    assert card["url"] == BASE + RPC and card["preferredTransport"] == "JSONRPC"
    assert "additionalInterfaces" not in card  # REST stays 1.0-only, so it is not offered to v0.3 clients
    assert card["supportsAuthenticatedExtendedCard"] is False
    assert "extendedAgentCard" not in card["capabilities"]
    assert {"url": BASE + RPC, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"} in card[
        "supportedInterfaces"
    ]
    assert card["supportedInterfaces"][0]["protocolVersion"] == "1.0"  # 1.0 entries first


def test_1_0_card_is_pure_but_declares_the_0_3_mirror(client: FlaskClient) -> None:
    card = client.get(CARD, headers=V1).get_json()
    assert not {"url", "protocolVersion", "preferredTransport", "supportsAuthenticatedExtendedCard"} & set(
        card
    )
    assert [i["protocolVersion"] for i in card["supportedInterfaces"]] == ["1.0", "1.0", "0.3"]


def test_compat_off_card_has_no_0_3_entry(client_off: FlaskClient) -> None:
    for headers in ({}, V1):
        card = client_off.get(CARD, headers=headers).get_json()
        assert "url" not in card and "protocolVersion" not in card
        assert all(i["protocolVersion"] == "1.0" for i in card["supportedInterfaces"])


# --- message/send --------------------------------------------------------------------------------------


def _assert_created(task: dict[str, Any]) -> None:
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    [artifact] = task["artifacts"]
    assert artifact["artifactId"] == "quineling-result"
    [part] = artifact["parts"]
    assert part["kind"] == "data" and set(part) == {"kind", "data"}
    assert part["data"]["operation"] == "create"
    assert part["data"]["result"]["status"] == "created"


def test_message_send_text_creates_and_returns_a_bare_v03_task(client: FlaskClient) -> None:
    task = _send(client, TEXT)
    _assert_created(task)
    [user] = task["history"]
    assert user == {**_message(TEXT), "contextId": task["contextId"], "taskId": task["id"]}
    assert_pure_v03(task)


def test_message_send_data_part_and_blocking_flag(client: FlaskClient) -> None:
    request = {"kind": "data", "data": {"operation": "create", "thought": THOUGHT}}
    for configuration in ({"blocking": True}, {"blocking": False}, {}):
        params = {"message": _message(request), "configuration": configuration}
        _assert_created(_result(_rpc(client, "message/send", params)))


def test_failed_task_keeps_quineling_error(client: FlaskClient) -> None:
    task = _send(client, {"kind": "data", "data": {"operation": "bogus"}})
    assert task["status"]["state"] == "failed"
    message = task["status"]["message"]
    assert message["kind"] == "message" and message["role"] == "agent"
    assert message["parts"][0]["kind"] == "text"
    error = message["metadata"]["quinelingError"]
    assert (error["code"], error["path"]) == ("unknown-operation", "operation")
    assert error["message"].startswith("unknown operation 'bogus'; valid operations: ")
    assert "worldCommand" in error["message"]
    assert_pure_v03(task)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"message": "hi"},
        {"message": _message(TEXT, role="ROLE_USER")},
        {"message": _message({"kind": "image", "text": "x"})},
        {"message": _message(TEXT), "configuration": {"blocking": "yes"}},
        {"message": {"kind": "message", "role": "user", "parts": [TEXT]}},  # no messageId: the 1.0 verdict
    ],
)
def test_message_send_invalid_params(client: FlaskClient, params: Any) -> None:
    error = _error(_rpc(client, "message/send", params))
    assert set(error) == {"code", "message"} and error["code"] == -32602


# --- streams -------------------------------------------------------------------------------------------


def test_message_stream_events_have_kinds_and_end_final(client: FlaskClient) -> None:
    response = _rpc(client, "message/stream", {"message": _message(TEXT)})
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    events = sse_events(response.get_data())
    assert all(kind == "message" and body["id"] == 7 and "result" in body for kind, body in events)
    results = [body["result"] for _, body in events]
    assert results[0]["kind"] == "task" and results[0]["status"]["state"] == "submitted"
    assert [r["kind"] for r in results[1:]] == ["status-update", "artifact-update", "status-update"]
    assert [r.get("final") for r in results if r["kind"] == "status-update"] == [False, True]
    assert results[-1]["status"]["state"] == "completed"
    assert results[2]["artifact"]["parts"][0]["kind"] == "data"
    assert results[2]["lastChunk"] is True
    for result in results:
        assert_pure_v03(result)


def test_message_stream_early_error_is_plain_json(client: FlaskClient) -> None:
    error = _error(_rpc(client, "message/stream", {"message": _message(TEXT, role="robot")}))
    assert error["code"] == -32602 and set(error) == {"code", "message"}


def _error_event(response: Any) -> dict[str, Any]:
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    [(_, body)] = sse_events(response.get_data())
    assert body["id"] == 7 and "result" not in body
    return body["error"]


def test_resubscribe_failures_are_always_sse(client: FlaskClient) -> None:
    """Strict v0.3 clients only accept an event stream from tasks/resubscribe."""
    assert _error_event(_rpc(client, "tasks/resubscribe", {"id": "no-such-task"})) == {
        "code": -32001,
        "message": "Task not found: no-such-task",
    }
    done = _send(client, TEXT)
    assert _error_event(_rpc(client, "tasks/resubscribe", {"id": done["id"]}))["code"] == -32004
    assert _error_event(_rpc(client, "tasks/resubscribe", {}))["code"] == -32602


def test_resubscribe_follows_a_task_to_the_end(client: FlaskClient) -> None:
    waiting = _send(client, {"kind": "text", "text": "hello there"})
    assert waiting["status"]["state"] == "input-required"
    response = _rpc(client, "tasks/resubscribe", {"id": waiting["id"]}, buffered=False)
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    stream = parse_sse(response.response)
    _, first = next(stream)
    assert first["result"]["kind"] == "task"
    assert first["result"]["status"]["state"] == "input-required"
    follow_up = _send(client, TEXT, taskId=waiting["id"], messageId="m-2")
    _assert_created(follow_up)
    events = [body["result"] for _, body in stream]
    response.close()
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is True
    assert events[-1]["status"]["state"] == "completed"
    assert [e.get("final") for e in events if e["kind"] == "status-update"][:-1] == [False] * (
        sum(e["kind"] == "status-update" for e in events) - 1
    )


# --- tasks/get, tasks/cancel ---------------------------------------------------------------------------


def test_tasks_get_and_history_length(client: FlaskClient) -> None:
    task = _send(client, TEXT)
    assert _result(_rpc(client, "tasks/get", {"id": task["id"]})) == task
    trimmed = _result(_rpc(client, "tasks/get", {"id": task["id"], "historyLength": 0}))
    assert "history" not in trimmed and trimmed["kind"] == "task"
    assert _error(_rpc(client, "tasks/get", {"id": "nope"})) == {
        "code": -32001,
        "message": "Task not found: nope",
    }
    assert _error(_rpc(client, "tasks/get", {}))["code"] == -32602


def test_tasks_cancel(client: FlaskClient) -> None:
    waiting = _send(client, {"kind": "text", "text": "hello there"})
    canceled = _result(_rpc(client, "tasks/cancel", {"id": waiting["id"]}))
    assert canceled["kind"] == "task" and canceled["status"]["state"] == "canceled"
    done = _send(client, TEXT)
    error = _error(_rpc(client, "tasks/cancel", {"id": done["id"]}))
    assert error["code"] == -32002 and set(error) == {"code", "message"}
    assert _error(_rpc(client, "tasks/cancel", {"id": "nope"}))["code"] == -32001


# --- push configs and the extended card ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params"),
    [
        (
            "tasks/pushNotificationConfig/set",
            {"taskId": "t", "pushNotificationConfig": {"url": "https://h.test/x"}},
        ),
        ("tasks/pushNotificationConfig/get", {"id": "t", "pushNotificationConfigId": "p"}),
        ("tasks/pushNotificationConfig/get", {"id": "t"}),
        ("tasks/pushNotificationConfig/list", {"id": "t"}),
        ("tasks/pushNotificationConfig/delete", {"id": "t", "pushNotificationConfigId": "p"}),
    ],
)
def test_push_methods_report_push_not_supported(client: FlaskClient, method: str, params: Any) -> None:
    error = _error(_rpc(client, method, params))
    assert set(error) == {"code", "message"} and error["code"] == -32003


def test_push_set_with_a_bad_shape_is_invalid_params(client: FlaskClient) -> None:
    assert _error(_rpc(client, "tasks/pushNotificationConfig/set", {"taskId": "t"}))["code"] == -32602


def test_extended_card_is_unsupported(client: FlaskClient) -> None:
    for params in (None, {}):
        error = _error(_rpc(client, "agent/getAuthenticatedExtendedCard", params))
        assert set(error) == {"code", "message"} and error["code"] == -32004


# --- version header, families, compat off ---------------------------------------------------------------


def test_v03_methods_also_accept_a_1_0_header(client: FlaskClient) -> None:
    """Recognition is by method name; with compat on a v0.3 method answers v0.3 even under A2A-Version 1.0."""
    task = _result(_rpc(client, "message/send", {"message": _message(TEXT)}, headers=V1))
    _assert_created(task)


def test_native_methods_keep_1_0_shapes_header_less(client: FlaskClient) -> None:
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": THOUGHT}]}
    result = _result(_rpc(client, "SendMessage", {"message": message}))
    assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert_pure_v1(result)


@pytest.mark.parametrize("method", V03_METHODS)
@pytest.mark.parametrize("headers", [{}, V1], ids=["header-less", "1.0"])
def test_compat_off_v03_methods_are_method_not_found(
    client_off: FlaskClient, method: str, headers: dict[str, str]
) -> None:
    """The method family is chosen before the version check, so even a header-less v0.3
    call gets method-not-found, not version-not-supported, when compat is off."""
    response = _rpc(client_off, method, {"id": "t", "message": _message(TEXT)}, headers=headers)
    assert response.mimetype == "application/json"
    assert response.get_json()["error"]["code"] == -32601


# --- round trips between the families ------------------------------------------------------------------


def test_v03_create_then_1_0_get(client: FlaskClient) -> None:
    created = _send(client, TEXT)
    task = _result(_rpc(client, "GetTask", {"id": created["id"]}, headers=V1))
    assert task["id"] == created["id"] and task["status"]["state"] == "TASK_STATE_COMPLETED"
    [part] = task["artifacts"][0]["parts"]
    assert part["data"] == created["artifacts"][0]["parts"][0]["data"]
    assert set(part["data"]) == {"operation", "result"}
    assert task["history"][0]["role"] == "ROLE_USER" and task["history"][0]["parts"] == [{"text": THOUGHT}]
    assert_pure_v1(task)


def test_1_0_create_then_v03_get(client: FlaskClient) -> None:
    message = {
        "messageId": "m-1",
        "role": "ROLE_USER",
        "parts": [{"data": {"operation": "create", "thought": THOUGHT}}],
    }
    created = _result(_rpc(client, "SendMessage", {"message": message}, headers=V1))["task"]
    task = _result(_rpc(client, "tasks/get", {"id": created["id"]}))
    _assert_created(task)
    assert task["artifacts"][0]["parts"][0]["data"] == created["artifacts"][0]["parts"][0]["data"]
    assert task["history"][0]["parts"] == [
        {"kind": "data", "data": {"operation": "create", "thought": THOUGHT}}
    ]
    assert_pure_v03(task)


def test_failed_task_round_trips_both_ways(client: FlaskClient) -> None:
    failed = _send(client, {"kind": "data", "data": {"operation": "bogus"}})
    task = _result(_rpc(client, "GetTask", {"id": failed["id"]}, headers=V1))
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    assert task["status"]["message"]["metadata"] == failed["status"]["message"]["metadata"]
    again = _result(_rpc(client, "tasks/get", {"id": failed["id"]}))
    assert again == failed
