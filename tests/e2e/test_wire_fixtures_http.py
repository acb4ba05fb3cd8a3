"""Raw HTTP fixtures against a live gunicorn server: parse errors, body limits before dispatch, request media
types, version negotiation, card caching, and native 1.0 responses free of v0.3 and snake_case keys."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.support.bindings import V1
from tests.support.http_bindings import BINDINGS, Binding, JsonRpc
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM, data, text, user_message
from tests.support.sse import sse_events

pytestmark = pytest.mark.slow
LIMIT = 4096
SNAKE = re.compile(r"^[a-z][a-z0-9]*_[a-z0-9_]+$")
V03_KEYS = {"kind", "final"}
CLOSE = {"Connection": "close"}


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(request_limit_bytes=LIMIT, legacy_compat=1) as live:
        yield live


def rpc_url(server: LiveServer) -> str:
    return server.url("/a2a/jsonrpc")


def rpc_body(method: str, params: Any, rpc_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def total_size(server: LiveServer) -> int:
    return JsonRpc(server).list_tasks(100)["totalSize"]


def wire_offences(value: Any, path: str = "$") -> list[str]:
    """v0.3 keys and snake_case keys anywhere in an A2A document; application payloads (a part's ``data``,
    ``metadata`` maps) are the agent's own JSON and are not walked."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in V03_KEYS or SNAKE.match(key):
                found.append(f"{path}.{key}")
            if key in ("data", "metadata") and path.split(".")[-1] not in ("error",):
                continue
            found += wire_offences(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += wire_offences(item, f"{path}[{index}]")
    return found


# --- parse errors, limits, media types -----------------------------------------------------------------


def test_malformed_json_is_a_400_parse_error(server: LiveServer) -> None:
    reply = requests.post(
        rpc_url(server),
        data=b'{"jsonrpc": "2.0", "id": 1,',
        headers={**V1, **CLOSE, "Content-Type": "application/json"},
    )
    assert reply.status_code == 400
    envelope = reply.json()
    assert set(envelope) == {"jsonrpc", "id", "error"} and envelope["id"] is None
    assert envelope["error"]["code"] == -32700

    rest = requests.post(
        server.url("/a2a/rest/message:send"),
        data=b"{not json",
        headers={**V1, **CLOSE, "Content-Type": "application/json"},
    )
    assert rest.status_code == 400
    assert rest.json()["error"]["code"] == 400


def oversized_message() -> dict[str, Any]:
    return {"message": user_message(text(SQUARE_SUM + " " * (LIMIT + 100)))}


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_oversized_body_is_413_before_dispatch(server: LiveServer, chunked: bool) -> None:
    """A body over the limit answers 413 on both bindings and stores nothing."""
    before = total_size(server)
    rpc = json.dumps(rpc_body("SendMessage", oversized_message())).encode()
    rest = json.dumps(oversized_message()).encode()
    assert len(rpc) > LIMIT and len(rest) > LIMIT
    for url, body in ((rpc_url(server), rpc), (server.url("/a2a/rest/message:send"), rest)):
        payload: Any = iter([body[:1000], body[1000:]]) if chunked else body
        reply = requests.post(
            url, data=payload, headers={**V1, **CLOSE, "Content-Type": "application/json"}, timeout=10
        )
        assert reply.status_code == 413, (url, reply.status_code, reply.text[:300])
        error = reply.json()["error"]
        assert error["code"] == (-32600 if url.endswith("jsonrpc") else 413)
    assert total_size(server) == before


def test_body_at_the_limit_is_accepted(server: LiveServer) -> None:
    body = rpc_body("SendMessage", {"message": user_message(text(SQUARE_SUM))})
    encoded = json.dumps(body).encode()
    encoded = encoded[:-1] + b" " * (LIMIT - len(encoded)) + b"}"
    assert len(encoded) == LIMIT
    reply = requests.post(
        rpc_url(server), data=encoded, headers={**V1, **CLOSE, "Content-Type": "application/json"}
    )
    assert (
        reply.status_code == 200
        and reply.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    )


def test_text_plain_is_refused(server: LiveServer) -> None:
    """A non-JSON request Content-Type: 400 with -32005 on JSON-RPC, 415 on HTTP+JSON; nothing stored."""
    before = total_size(server)
    body = json.dumps(rpc_body("SendMessage", {"message": user_message(text(SQUARE_SUM))}))
    reply = requests.post(rpc_url(server), data=body, headers={**V1, **CLOSE, "Content-Type": "text/plain"})
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == -32005 and reply.json()["id"] is None

    rest_body = json.dumps({"message": user_message(text(SQUARE_SUM))})
    rest = requests.post(
        server.url("/a2a/rest/message:send"),
        data=rest_body,
        headers={**V1, **CLOSE, "Content-Type": "text/plain"},
    )
    assert rest.status_code == 415
    assert rest.json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert total_size(server) == before


# --- versions --------------------------------------------------------------------------------------------


def test_unsupported_version(server: LiveServer) -> None:
    reply = requests.post(
        rpc_url(server),
        json=rpc_body("GetTask", {"id": "whatever"}, "v99"),
        headers={"A2A-Version": "99.0", **CLOSE},
    )
    assert reply.status_code == 200
    error = reply.json()["error"]
    assert reply.json()["id"] == "v99" and error["code"] == -32009
    assert error["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"

    rest = requests.get(server.url("/a2a/rest/tasks"), headers={"A2A-Version": "99.0", **CLOSE})
    assert rest.status_code == 400
    assert rest.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"


# --- discovery ------------------------------------------------------------------------------------------


def test_card_etag_and_304(server: LiveServer) -> None:
    """The card is cacheable: an ETag, Cache-Control, and 304 with no body for a matching If-None-Match."""
    url = server.url("/.well-known/agent-card.json")
    first = requests.get(url, headers={**V1, **CLOSE})
    assert first.status_code == 200
    etag = first.headers["ETag"]
    assert etag and "max-age=" in first.headers["Cache-Control"]
    card = first.json()
    assert card["supportedInterfaces"][0] == {
        "url": server.url("/a2a/jsonrpc"),
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
    }
    assert wire_offences(card) == []
    again = requests.get(url, headers={**V1, **CLOSE, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["ETag"] == etag
    changed = requests.get(url, headers={**V1, **CLOSE, "If-None-Match": '"not-the-card"'})
    assert changed.status_code == 200 and changed.json() == card


# --- native 1.0 shapes ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(BINDINGS))
def test_native_responses_have_no_v03_or_snake_case_keys(server: LiveServer, kind: str) -> None:
    """Every response body and stream event of a full lifecycle is pure 1.0 JSON."""
    binding: Binding = BINDINGS[kind](server)
    documents: list[Any] = []
    created = binding.send(user_message(text(SQUARE_SUM)), historyLength=5)
    documents.append(created)
    artifact_id = created["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]["id"]
    documents.append(binding.send(user_message(data({"operation": "run", "artifactId": artifact_id}))))
    failed = binding.send(user_message(data({"operation": "run", "artifactId": "missing"})))
    assert failed["status"]["state"] == "TASK_STATE_FAILED"
    documents.append(failed)
    paused = binding.send(user_message(text("   ")))
    documents.append(paused)
    documents.append(binding.get_task(paused["id"]))
    documents.append(binding.list_tasks(10))
    with binding.stream(user_message(text(SQUARE_SUM))) as stream:
        documents += list(stream)
    with binding.subscribe(paused["id"]) as stream:
        documents.append(next(stream))
    documents.append(binding.cancel(paused["id"]))
    for document in documents:
        assert wire_offences(document) == [], document


def test_raw_stream_frames_are_single_line_jsonrpc(server: LiveServer) -> None:
    """Each SSE event is one compact ``data:`` line carrying a JSON-RPC envelope that echoes the id."""
    body = rpc_body("SendStreamingMessage", {"message": user_message(text(SQUARE_SUM))}, "s-1")
    reply = requests.post(rpc_url(server), json=body, headers={**V1, **CLOSE}, stream=True)
    assert reply.status_code == 200 and reply.headers["Content-Type"].startswith("text/event-stream")
    assert reply.headers["Cache-Control"] == "no-cache"
    events = sse_events(reply.content)
    assert {kind for kind, _ in events} == {"message"}
    assert all(envelope["id"] == "s-1" and envelope["jsonrpc"] == "2.0" for _, envelope in events)
    assert all(wire_offences(envelope) == [] for _, envelope in events)


def test_rest_errors_are_google_rpc_status(server: LiveServer) -> None:
    reply = requests.get(server.url("/a2a/rest/tasks/no-such-task"), headers={**V1, **CLOSE})
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert error["code"] == 404 and error["status"] == "NOT_FOUND"
    assert error["details"][0]["reason"] == "TASK_NOT_FOUND"


@pytest.mark.parametrize(
    ("method", "params", "version", "code"),
    [
        ("SendStreamingMessage", {"message": user_message(text(SQUARE_SUM))}, "99.0", -32009),
        ("SubscribeToTask", {"id": "no-such-task"}, "1.0", -32001),
    ],
    ids=["bad-version", "unknown-task"],
)
def test_stream_failing_before_first_event_is_plain_json(
    server: LiveServer, method: str, params: dict[str, Any], version: str, code: int
) -> None:
    """A streaming call that fails before its first event answers a plain JSON-RPC error, not an SSE stream."""
    before = total_size(server)
    reply = requests.post(
        rpc_url(server), json=rpc_body(method, params, "early"), headers={"A2A-Version": version, **CLOSE}
    )
    assert reply.status_code == 200 and reply.headers["Content-Type"].startswith("application/json")
    assert reply.json()["id"] == "early" and reply.json()["error"]["code"] == code
    assert total_size(server) == before
