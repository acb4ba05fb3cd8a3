"""What each route answers for a method it does not serve, and for OPTIONS (docs/decisions/0005-bindings.md):
405 with an exact ``Allow`` in the binding's error shape, and OPTIONS 204 with ``Allow`` and no
``A2A-Version`` needed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.bindings import V1

REST = "/a2a/rest"


def allowed(response: Any) -> set[str]:
    return {m.strip() for m in response.headers["Allow"].split(",")}


@pytest.mark.parametrize(
    ("path", "methods"),
    [
        ("/message:send", {"POST"}),
        ("/message:stream", {"POST"}),
        ("/tasks", {"GET", "HEAD"}),
        ("/tasks/t1", {"GET", "HEAD"}),
        ("/tasks/t1:cancel", {"POST"}),
        ("/tasks/t1:subscribe", {"GET", "HEAD", "POST"}),
        ("/tasks/t1/pushNotificationConfigs", {"GET", "HEAD", "POST"}),
        ("/tasks/t1/pushNotificationConfigs/c1", {"GET", "HEAD", "DELETE"}),
        ("/extendedAgentCard", {"GET", "HEAD"}),
        ("/acme/tasks/t1:cancel", {"POST"}),
    ],
)
def test_options_answers_allow_without_a2a_version(client: Any, path: str, methods: set[str]) -> None:
    response = client.options(REST + path)  # no A2A-Version: OPTIONS is not an A2A request
    assert response.status_code == 204 and response.data == b""
    assert allowed(response) == methods | {"OPTIONS"}
    # With the header the answer is the same.
    assert allowed(client.options(REST + path, headers=V1)) == methods | {"OPTIONS"}


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/tasks", {"GET", "HEAD", "OPTIONS"}),
        ("PUT", "/message:send", {"POST", "OPTIONS"}),
        # A custom-method path is only that operation: GET here is not GetTask of a task "t1:cancel".
        ("GET", "/tasks/t1:cancel", {"POST", "OPTIONS"}),
        ("DELETE", "/tasks/t1:cancel", {"POST", "OPTIONS"}),
        ("PATCH", "/acme/tasks/t1", {"GET", "HEAD", "OPTIONS"}),
    ],
)
def test_rest_405_names_exactly_the_allowed_methods(
    client: Any, method: str, path: str, allow: set[str]
) -> None:
    response = client.open(REST + path, method=method, headers=V1)
    assert response.status_code == 405 and allowed(response) == allow
    error = response.get_json()["error"]
    assert error["code"] == 405 and error["details"][0]["reason"] == "INVALID_REQUEST"


def test_a_task_id_with_a_colon_names_no_route(client: Any) -> None:
    response = client.get(REST + "/tasks/t1:frobnicate", headers=V1)
    assert response.status_code == 404
    assert response.get_json()["error"]["details"][0]["reason"] == "METHOD_NOT_FOUND"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_jsonrpc_endpoint_answers_405_allow_post(client: Any, method: str) -> None:
    response = client.open("/a2a/jsonrpc", method=method, headers=V1)
    assert response.status_code == 405 and allowed(response) == {"POST", "OPTIONS"}
    assert response.get_json()["error"]["code"] == -32600
