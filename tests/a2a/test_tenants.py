"""Only tenants the agent serves are accepted: capacity is per tenant, so an unlisted name is refused
rather than given a fresh task budget."""

from __future__ import annotations

from typing import Any

import pytest

from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1


def send(client: Any, tenant: str | None) -> Any:
    params: dict[str, Any] = {"message": user_message(text("[1] | sum | report t"))}
    if tenant is not None:
        params["tenant"] = tenant
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    return client.post("/a2a/jsonrpc", json=body, headers=V1).get_json()


def test_default_serves_only_the_default_tenant() -> None:
    client = make_app(config={"tenants": ""}).test_client()
    assert "result" in send(client, None)
    refused = send(client, "acme")["error"]
    assert refused["code"] == -32602 and "acme" in refused["message"]
    rest = client.post("/a2a/rest/acme/message:send", json={"message": user_message(text("x"))}, headers=V1)
    assert rest.status_code == 400
    assert client.get("/a2a/rest/tasks", headers=V1).get_json()["totalSize"] == 1  # nothing else stored


@pytest.mark.parametrize("setting", ["acme, beta", "*"])
def test_configured_tenants_are_served_and_isolated(setting: str) -> None:
    client = make_app(config={"tenants": setting}).test_client()
    task_id = send(client, "acme")["result"]["task"]["id"]
    assert client.get(f"/a2a/rest/acme/tasks/{task_id}", headers=V1).status_code == 200
    assert client.get(f"/a2a/rest/tasks/{task_id}", headers=V1).status_code == 404
