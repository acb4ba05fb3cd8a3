"""A chunked upload far beyond the body limit, over a real socket to gunicorn (both worker classes): the worker
answers 413 after reading about the limit and closes the connection, so the client's send fails long before
the body is through (docs/decisions/0007-request-limits.md). Before, HTTP+JSON read the whole body first (a
1 GiB upload took a worker to 1.5 GiB), and after any answer that left a body unread, a gevent worker went on
reading it to its end to serve the next request on the connection."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.support.live import LiveServer, live_server

pytestmark = pytest.mark.slow
LIMIT = 64 * 1024
OFFERED = 128 * 1024 * 1024  # what the client tries to send
# What may go through before the client notices: the limit, gunicorn's bounded drain of an unread body
# (64 KiB), and the loopback socket buffers on both ends (several MiB with autotuning).
MAY_PASS = 16 * 1024 * 1024
CHUNK = b"x" * 65536
FRAME = f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n"


@pytest.fixture(scope="module", params=["gevent", "gthread"])
def server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    with live_server(request_limit_bytes=LIMIT, worker_class=request.param) as live:
        yield live


def chunked_upload(server: LiveServer, path: str, version: bool) -> tuple[int, int, float]:
    """Send up to OFFERED bytes as a chunked body until the server answers or stops reading; returns the HTTP
    status, the bytes the client managed to send and the seconds it took."""
    address = urlsplit(server.base_url)
    sock = socket.create_connection((address.hostname, address.port), timeout=20)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {address.netloc}\r\nContent-Type: application/json\r\n"
        + ("A2A-Version: 1.0\r\n" if version else "")
        + "Transfer-Encoding: chunked\r\n\r\n"
    )
    sent = 0
    started = time.monotonic()
    with sock:
        sock.sendall(head.encode())
        try:
            while sent < OFFERED:  # on after the answer, too: only the server's closing stops the client
                sock.sendall(FRAME)
                sent += len(CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection on the rest of the upload
        answer = b""
        try:
            while b"\r\n" not in answer:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except ConnectionResetError:
            pass
    elapsed = time.monotonic() - started
    status_line = answer.split(b"\r\n", 1)[0].decode(errors="replace")
    assert status_line.startswith("HTTP/1.1 "), (path, answer[:200])
    return int(status_line.split()[1]), sent, elapsed


@pytest.mark.parametrize(
    ("path", "version"),
    [
        ("/a2a/rest/message:send", True),
        ("/a2a/rest/tasks/t-1:subscribe", True),
        ("/a2a/rest/tasks/t-1:cancel", True),
        ("/a2a/jsonrpc", True),
        ("/a2a/jsonrpc", False),  # header-less: the v0.3 family
    ],
    ids=["rest-send", "rest-subscribe", "rest-cancel", "jsonrpc", "jsonrpc-v03"],
)
def test_an_endless_chunked_upload_is_refused_without_reading_it(
    server: LiveServer, path: str, version: bool
) -> None:
    status, sent, elapsed = chunked_upload(server, path, version)
    assert status == 413
    assert sent < MAY_PASS, f"the server kept reading: {sent} of {OFFERED} bytes went through"
    assert elapsed < 10
