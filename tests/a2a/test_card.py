"""The agent card: content, caching, the superset/pure choice (docs/compat-v03.md), and that its claims
match behaviour."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1

CARD = "/.well-known/agent-card.json"


def test_pure_card_content() -> None:
    client = make_app(base_url="http://127.0.0.1:8049").test_client()
    card = client.get(CARD, headers=V1).get_json()
    assert card["name"] == "Quineling" and card["version"] == "0.0.0-experimental"
    assert card["supportedInterfaces"] == [
        {"url": "http://127.0.0.1:8049/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "http://127.0.0.1:8049/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": "http://127.0.0.1:8049/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    assert card["capabilities"]["streaming"] is True and card["capabilities"]["pushNotifications"] is False
    assert not card["capabilities"].get("extendedAgentCard")
    assert card["defaultInputModes"] == ["application/json", "text/plain"]
    assert card["defaultOutputModes"] == ["application/json"]
    assert [s["id"] for s in card["skills"]] == ["build", "ranch", "execute"]
    for skill in card["skills"]:
        assert skill["description"] and skill["tags"] and skill["examples"]
    assert "url" not in card and "protocolVersion" not in card  # no v0.3 fields in the pure card


def test_compat_off_has_no_v03_interface_and_no_vary() -> None:
    client = make_app(legacy_compat=False).test_client()
    response = client.get(CARD)
    card = response.get_json()
    assert [i["protocolVersion"] for i in card["supportedInterfaces"]] == ["1.0", "1.0"]
    assert "Vary" not in response.headers and "url" not in card


def test_header_less_gets_superset_card_with_compat() -> None:
    client = make_app().test_client()
    response = client.get(CARD)
    card = response.get_json()
    assert response.headers["Vary"] == "A2A-Version"
    assert card["supportedInterfaces"][0]["protocolVersion"] == "1.0"  # 1.0 clients still parse it
    assert card["url"].endswith("/a2a/jsonrpc") and card["protocolVersion"].startswith("0.3")


def test_card_superset_setting_serves_pure_card() -> None:
    client = make_app(config={"card_superset": False}).test_client()
    card = client.get(CARD).get_json()
    assert "url" not in card and "protocolVersion" not in card


def test_etag_and_304(client: Any) -> None:
    response = client.get(CARD, headers=V1)
    assert "max-age=" in response.headers["Cache-Control"]
    etag = response.headers["ETag"]
    assert etag
    again = client.get(CARD, headers={**V1, "If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    other = client.get(CARD, headers={**V1, "If-None-Match": '"nope"'})
    assert other.status_code == 200


def test_card_claims_match_behaviour(client: Any) -> None:
    """Streaming works, push answers not-supported, and every advertised interface URL answers."""
    card = client.get(CARD, headers=V1).get_json()
    for interface in card["supportedInterfaces"]:
        path = urlsplit(interface["url"]).path
        headers = {"A2A-Version": interface["protocolVersion"]}
        if interface["protocolBinding"] == "JSONRPC":
            method = "SendStreamingMessage" if interface["protocolVersion"] == "1.0" else "message/stream"
            message: dict[str, Any] = user_message(text("x"))
            if interface["protocolVersion"] == "0.3":
                message = {
                    "kind": "message",
                    "messageId": "m",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "x"}],
                }
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
            response = client.post(path, json=body, headers=headers)
        else:
            response = client.post(
                path + "/message:stream", json={"message": user_message(text("x"))}, headers=headers
            )
        assert response.status_code == 200 and response.mimetype == "text/event-stream", interface
        assert b"data: " in response.data
    push = {"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig",
            "params": {"taskId": "t", "url": "https://example.com/h"}}  # fmt: skip
    assert client.post("/a2a/jsonrpc", json=push, headers=V1).get_json()["error"]["code"] == -32003


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health(client: Any, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200 and response.get_json()["status"] == "ok"
