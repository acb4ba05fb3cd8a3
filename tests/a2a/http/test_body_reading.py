"""Request bodies are read up to the size limit and no further, whatever the framing (docs/decisions/0007-request-limits.md):
a chunked upload larger than the limit gets 413 after ``limit + 1`` bytes on every route
of both bindings, v0.3 included, and a body of exactly the limit is served. (The same over a real socket,
against gunicorn: tests/e2e/test_body_limits_live.py.)"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from flask import request

from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1

LIMIT = 4096


class Upload(io.RawIOBase):
    """A chunked request body of ``size`` bytes (``prefix`` then spaces) that counts what the app reads."""

    def __init__(self, size: int, prefix: bytes = b"") -> None:
        self.size = size
        self.prefix = prefix
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), self.size - self.consumed, 1000)  # a chunk at a time, as a socket gives it
        head = self.prefix[self.consumed : self.consumed + count]
        buffer[:count] = head + b" " * (count - len(head))
        self.consumed += count
        return count


def post_chunked(client: Any, path: str, upload: Upload, headers: dict[str, str] | None = None) -> Any:
    """POST ``upload`` as a chunked body: no Content-Length, and a stream the server has terminated (as
    gunicorn and werkzeug's server do for chunked requests)."""
    return chunked(client, "POST", path, upload, headers)


def chunked(client: Any, method: str, path: str, upload: Upload, headers: dict[str, str] | None) -> Any:
    return client.open(
        path,
        method=method,
        headers={
            "Transfer-Encoding": "chunked",
            "Content-Type": "application/json",
            **(V1 if headers is None else headers),
        },
        environ_overrides={"wsgi.input": upload, "wsgi.input_terminated": True},
    )


ROUTES = [
    "/a2a/rest/message:send",
    "/a2a/rest/message:stream",
    "/a2a/rest/tasks/t-1:cancel",
    "/a2a/rest/tasks/t-1:subscribe",
    "/a2a/rest/tasks/t-1/pushNotificationConfigs",
    "/a2a/rest/tenant-a/message:send",
    "/a2a/jsonrpc",
]


@pytest.fixture
def client() -> Any:
    return make_app(request_limit_bytes=LIMIT).test_client()


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize("version", [V1, {}], ids=["1.0", "header-less"])
def test_an_oversized_chunked_body_is_refused_after_limit_plus_one_bytes(
    client: Any, path: str, version: dict[str, str]
) -> None:
    upload = Upload(256 * LIMIT)
    response = post_chunked(client, path, upload, version)
    assert response.status_code == 413, response.get_data(as_text=True)[:300]
    error = response.get_json()["error"]
    assert error["code"] == (-32600 if path.endswith("jsonrpc") else 413)
    assert upload.consumed <= LIMIT + 1


def test_a_v03_chunked_body_is_refused_the_same_way(client: Any) -> None:
    head = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}).encode()
    upload = Upload(256 * LIMIT, head)
    response = post_chunked(client, "/a2a/jsonrpc", upload, {})
    assert response.status_code == 413 and upload.consumed <= LIMIT + 1


def test_a_get_with_a_chunked_body_reads_no_more_than_the_limit(client: Any) -> None:
    upload = Upload(256 * LIMIT)
    response = chunked(client, "GET", "/a2a/rest/tasks", upload, V1)
    assert response.status_code == 413 and upload.consumed <= LIMIT + 1


def body_of_size(size: int, rpc: bool) -> bytes:
    params = {"message": user_message(text("[2,3,4] | square | sum | report total"))}
    document = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params} if rpc else params
    encoded = json.dumps(document).encode()
    return encoded[:-1] + b" " * (size - len(encoded)) + b"}"


@pytest.mark.parametrize("path", ["/a2a/rest/message:send", "/a2a/jsonrpc"])
def test_a_chunked_body_of_exactly_the_limit_is_served(client: Any, path: str) -> None:
    for size, status in ((LIMIT, 200), (LIMIT + 1, 413)):
        body = body_of_size(size, path.endswith("jsonrpc"))
        assert len(body) == size
        response = post_chunked(client, path, Upload(size, body))
        assert response.status_code == status, response.get_data(as_text=True)[:300]


def test_any_other_body_reader_is_capped_by_werkzeug_too() -> None:
    """Routes outside the bindings read through werkzeug, whose cap (MAX_CONTENT_LENGTH) is set one byte above
    the bindings' limit: nothing reads an endless body. (werkzeug cuts a chunked body at its cap rather than
    refusing it; the bindings' own reader is what answers 413.)"""
    app = make_app(request_limit_bytes=LIMIT)
    seen: list[int] = []

    @app.post("/probe")
    def probe() -> str:
        seen.append(len(request.get_data()))
        return "read"

    upload = Upload(256 * LIMIT)
    post_chunked(app.test_client(), "/probe", upload)
    assert seen == [LIMIT + 1] and upload.consumed <= LIMIT + 1


def test_a_body_the_server_cannot_read_is_invalid_request(client: Any) -> None:
    class Broken(Upload):
        def readinto(self, buffer: Any) -> int:
            raise OSError("connection reset by peer")

    for path in ("/a2a/rest/message:send", "/a2a/jsonrpc"):
        response = post_chunked(client, path, Broken(10))
        assert response.status_code == 400
        assert "could not be read" in response.get_json()["error"]["message"]


class GunicornRequest:
    """What gunicorn's pre_request hook is given: a request whose ``body`` is the WSGI input stream."""

    def __init__(self, body: Any) -> None:
        self.body = body
        self.must_close = False


@pytest.mark.parametrize(
    ("path", "headers", "size", "closes"),
    [
        ("/a2a/rest/message:send", {}, 256 * LIMIT, True),  # too large: reading stopped
        ("/a2a/jsonrpc", {}, 256 * LIMIT, True),
        ("/a2a/rest/message:send", {"Content-Type": "text/plain"}, 100, True),  # refused unread: 415
        ("/a2a/jsonrpc", {"Content-Type": "text/plain"}, 100, True),
        ("/a2a/rest/no/such/route", {}, 100, True),  # 404: nobody reads it
        ("/a2a/rest/message:send", {}, 100, False),  # read to its end (then refused as not JSON): kept
        ("/a2a/jsonrpc", {}, 0, False),  # an empty chunked body
    ],
)
def test_a_body_left_unread_closes_the_connection(
    client: Any, path: str, headers: dict[str, str], size: int, closes: bool
) -> None:
    """Under gunicorn, an answer that leaves a request body unread makes the worker close the connection
    rather than read the rest of the body to reach the next request (without a bound, under gevent)."""
    from quineling.server.hooks import remember_request

    upload = Upload(size)
    served = GunicornRequest(upload)
    remember_request(None, served)
    response = client.open(
        path,
        method="POST",
        headers={"Transfer-Encoding": "chunked", "Content-Type": "application/json", **V1, **headers},
        environ_overrides={"wsgi.input": upload, "wsgi.input_terminated": True},
    )
    assert response.status_code >= 400
    assert served.must_close is closes
    assert upload.consumed <= LIMIT + 1
