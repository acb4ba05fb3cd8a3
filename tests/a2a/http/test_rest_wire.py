"""HTTP+JSON specifics: media types, error body shape, versions, tenants, colon routes, OpenAPI."""

from __future__ import annotations

from typing import Any

import pytest

from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1

BASE = "/a2a/rest"


def rest_error(response: Any, status: int, reason: str) -> dict[str, Any]:
    assert response.status_code == status and response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"code", "status", "message", "details"} and error["code"] == status
    assert error["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert error["details"][0]["domain"] == "a2a-protocol.org" and error["details"][0]["reason"] == reason
    return error


def test_non_json_body_is_415(client: Any) -> None:
    response = client.post(BASE + "/message:send", data="hello", content_type="text/plain", headers=V1)
    rest_error(response, 415, "CONTENT_TYPE_NOT_SUPPORTED")


def test_header_less_rest_is_version_error(client: Any) -> None:
    response = client.post(BASE + "/message:send", json={"message": user_message(text("x"))})
    rest_error(response, 400, "VERSION_NOT_SUPPORTED")
    rest_error(client.get(BASE + "/tasks", headers={"A2A-Version": "99.0"}), 400, "VERSION_NOT_SUPPORTED")


def test_version_error_says_which_header_to_send(client: Any) -> None:
    # Without the header a request is taken as v0.3, which HTTP+JSON does not serve: say how to fix it.
    error = rest_error(client.get(BASE + "/tasks"), 400, "VERSION_NOT_SUPPORTED")
    assert "send the header 'A2A-Version: 1.0'" in error["message"]
    assert error["details"][0]["metadata"] == {"requestedVersion": "0.3"}
    assert client.get(BASE + "/tasks", headers={"A2A-Version": "1.0"}).status_code == 200


def test_not_found_body(client: Any) -> None:
    error = rest_error(client.get(BASE + "/tasks/t-404", headers=V1), 404, "TASK_NOT_FOUND")
    assert error["status"] == "NOT_FOUND" and error["details"][0]["metadata"] == {"taskId": "t-404"}


def test_empty_body_is_invalid_params(client: Any) -> None:
    rest_error(client.post(BASE + "/message:send", json={}, headers=V1), 400, "INVALID_PARAMS")
    response = client.post(BASE + "/message:send", data="", content_type="application/json", headers=V1)
    rest_error(response, 400, "INVALID_PARAMS")


@pytest.mark.parametrize("raw", ["{bad", "[1]", '{"message": NaN}'])
def test_malformed_body(client: Any, raw: str) -> None:
    response = client.post(BASE + "/message:send", data=raw, content_type="application/json", headers=V1)
    rest_error(response, 400, "INVALID_REQUEST")


def test_oversized_body_is_413() -> None:
    client = make_app(request_limit_bytes=512).test_client()
    response = client.post(
        BASE + "/message:send", json={"message": user_message(text("x" * 1000))}, headers=V1
    )
    rest_error(response, 413, "INVALID_REQUEST")


def test_bad_query_values(client: Any) -> None:
    rest_error(client.get(BASE + "/tasks?pageSize=abc", headers=V1), 400, "INVALID_PARAMS")
    rest_error(client.get(BASE + "/tasks/x?historyLength=-2", headers=V1), 400, "INVALID_PARAMS")


def test_unknown_route_and_method_are_a2a_shaped(client: Any) -> None:
    rest_error(client.get(BASE + "/nowhere/else/at/all", headers=V1), 404, "METHOD_NOT_FOUND")
    response = client.delete(BASE + "/message:send", headers=V1)
    assert response.status_code == 405 and "error" in response.get_json()


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/tasks/x", {"GET"}),
        ("DELETE", "/acme/tasks/x", {"GET"}),
        ("PUT", "/message:send", {"POST"}),
        ("GET", "/message:stream", {"POST"}),
    ],
)
def test_method_not_allowed_keeps_allow_header(
    client: Any, method: str, path: str, allowed: set[str]
) -> None:
    response = client.open(BASE + path, method=method, headers=V1)
    rest_error(response, 405, "INVALID_REQUEST")
    assert allowed <= {m.strip() for m in response.headers["Allow"].split(",")}
    assert method not in response.headers["Allow"]


@pytest.mark.parametrize(
    ("accept", "answered"),
    [
        (None, "application/a2a+json"),  # A2A 1.0.1: HTTP+JSON SHOULD use its own media type
        ("*/*", "application/a2a+json"),
        ("application/*", "application/a2a+json"),
        ("application/a2a+json", "application/a2a+json"),
        ("application/json, application/a2a+json", "application/a2a+json"),
        ("application/json", "application/json"),  # a client that accepts only JSON still gets it
        ("application/json;q=0.9, application/a2a+json;q=0.1", "application/json"),
        ("text/html", "application/a2a+json"),  # nothing acceptable: the binding's own type, never a 406
    ],
)
def test_response_media_type_is_negotiated(client: Any, accept: str | None, answered: str) -> None:
    headers = V1 if accept is None else {**V1, "Accept": accept}
    body = {"message": user_message(text("x"))}
    sent = client.post(BASE + "/message:send", json=body, headers=headers)
    assert sent.status_code == 200 and sent.mimetype == answered
    task_id = sent.get_json()["task"]["id"]
    assert client.get(f"{BASE}/tasks/{task_id}", headers=headers).mimetype == answered
    error = client.get(f"{BASE}/tasks/nope", headers=headers)
    assert error.status_code == 404 and error.mimetype == "application/json"  # a google.rpc.Status body


def test_a2a_json_request_accepted(client: Any) -> None:
    import json

    body = json.dumps({"message": user_message(text("x"))})
    response = client.post(BASE + "/message:send", data=body, content_type="application/a2a+json", headers=V1)
    assert response.status_code == 200


def test_tenant_routes_scope_tasks(client: Any) -> None:
    body = {"message": user_message(text(""))}
    task = client.post(BASE + "/acme/message:send", json=body, headers=V1).get_json()["task"]
    assert client.get(f"{BASE}/acme/tasks/{task['id']}", headers=V1).status_code == 200
    rest_error(client.get(f"{BASE}/tasks/{task['id']}", headers=V1), 404, "TASK_NOT_FOUND")
    listed = client.get(BASE + "/acme/tasks", headers=V1).get_json()
    assert listed["totalSize"] == 1
    canceled = client.post(f"{BASE}/acme/tasks/{task['id']}:cancel", headers=V1)
    assert canceled.get_json()["status"]["state"] == "TASK_STATE_CANCELED"


def test_cancel_with_json_content_type_and_no_body(client: Any) -> None:
    task = client.post(
        BASE + "/message:send", json={"message": user_message(text(""))}, headers=V1
    ).get_json()["task"]
    response = client.post(f"{BASE}/tasks/{task['id']}:cancel", content_type="application/json", headers=V1)
    assert response.status_code == 200


def test_subscribe_get_and_post(client: Any) -> None:
    task = client.post(
        BASE + "/message:send", json={"message": user_message(text(""))}, headers=V1
    ).get_json()["task"]
    for verb in ("GET", "POST"):
        response = client.open(f"{BASE}/tasks/{task['id']}:subscribe", method=verb, headers=V1)
        assert response.mimetype == "text/event-stream"
        first = next(iter(response.response))
        assert b'\ndata: {"task":' in first and first.startswith(b"retry: 2000\nid: g")
        response.close()


def test_delete_push_config_not_supported(client: Any) -> None:
    response = client.delete(BASE + "/tasks/t/pushNotificationConfigs/c", headers=V1)
    rest_error(response, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED")


def test_openapi_document(client: Any) -> None:
    spec = client.get(BASE + "/openapi.json").get_json()
    assert spec["info"]["title"] == "Quineling A2A HTTP+JSON"
    assert {"/a2a/rest/message:send", "/a2a/rest/tasks/{task_id}:cancel", "/a2a/rest/{tenant}/tasks"} <= set(
        spec["paths"]
    )


@pytest.mark.parametrize("path", ["/a2a/rest/tasks//x", "/a2a/rest//tasks", "/a2a/jsonrpc//"])
def test_doubled_slashes_are_no_route_and_never_an_html_redirect(client: Any, path: str) -> None:
    response = client.get(path, headers={"A2A-Version": "1.0"})
    assert response.status_code in (404, 405), response.status_code
    assert response.mimetype == "application/json"
