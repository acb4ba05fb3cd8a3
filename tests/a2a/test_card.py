"""The agent card: content, caching, the superset/pure choice (docs/compat-v03.md), and that its claims
match behaviour."""

from __future__ import annotations

import multiprocessing
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from werkzeug.http import http_date

from quineling.app import create_app
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


def test_version_query_parameter_chooses_the_card_like_the_header() -> None:
    """``?A2A-Version=1.0`` is the header's stand-in on every endpoint, discovery included."""
    client = make_app().test_client()
    pure = client.get(f"{CARD}?A2A-Version=1.0").get_json()
    assert "url" not in pure and "protocolVersion" not in pure
    assert client.get(f"{CARD}?A2A-Version=1.0", headers={"A2A-Version": "0.3"}).get_json()[
        "url"
    ]  # header wins
    assert client.get(f"{CARD}?A2A-Version=0.3").get_json()["url"].endswith("/a2a/jsonrpc")


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


# --- Last-Modified (docs/decisions/0005-bindings.md) --------------------------------------------------


def test_last_modified_and_if_modified_since(client: Any) -> None:
    response = client.get(CARD, headers=V1)
    modified = response.last_modified
    assert modified is not None and modified <= datetime.now(UTC)
    last_modified = response.headers["Last-Modified"]
    assert last_modified.endswith(" GMT")  # an IMF-fixdate, as RFC 9110 has it
    # At or after the card's time: not modified, with the caching headers of a 200 and no body.
    for since in (last_modified, http_date(modified + timedelta(days=1))):
        again = client.get(CARD, headers={**V1, "If-Modified-Since": since})
        assert again.status_code == 304 and again.data == b"", since
        assert again.headers["ETag"] == response.headers["ETag"]
        assert "max-age=" in again.headers["Cache-Control"]
    # Before it, or a date that does not parse: the card.
    for since in (http_date(modified - timedelta(seconds=1)), "yesterday"):
        again = client.get(CARD, headers={**V1, "If-Modified-Since": since})
        assert again.status_code == 200 and again.get_json()["name"] == "Quineling", since
    assert client.head(CARD, headers={**V1, "If-Modified-Since": last_modified}).status_code == 304


def test_if_none_match_wins_over_if_modified_since(client: Any) -> None:
    response = client.get(CARD, headers=V1)
    etag, last_modified = response.headers["ETag"], response.headers["Last-Modified"]
    stale = http_date(response.last_modified - timedelta(days=1))

    def status(**headers: str) -> int:
        named = {name.replace("_", "-"): value for name, value in headers.items()}
        return int(client.get(CARD, headers={**V1, **named}).status_code)

    # RFC 9110 section 13.2.2: with If-None-Match present, If-Modified-Since is not evaluated.
    assert status(If_None_Match='"other"', If_Modified_Since=last_modified) == 200
    assert status(If_None_Match=etag, If_Modified_Since=stale) == 304
    # If-None-Match compares weakly for GET, and * matches the card.
    assert status(If_None_Match="W/" + etag) == 304
    assert status(If_None_Match="*") == 304


def _card_last_modified(results: Any) -> None:
    response = create_app().test_client().get(CARD, headers=V1)
    results.put(response.headers["Last-Modified"])


def test_workers_forked_from_one_master_send_one_last_modified() -> None:
    """gunicorn's master loads the code and then forks each worker, which builds its own app: workers that
    boot seconds apart still send the same Last-Modified (this process stands for the master)."""
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    seen = []
    for _ in range(2):
        worker = context.Process(target=_card_last_modified, args=(results,))
        worker.start()
        seen.append(results.get(timeout=30))
        worker.join(timeout=30)
        time.sleep(1.1)  # the next worker boots in a later second
    assert seen[0] == seen[1]
    assert create_app().test_client().get(CARD, headers=V1).headers["Last-Modified"] == seen[0]
