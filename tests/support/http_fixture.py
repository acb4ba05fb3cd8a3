"""The one threaded loopback HTTP server behind the suites' hand-made peers (a faulty agent, a lossy proxy).

A subclass of :class:`HttpFixture` answers each request in :meth:`HttpFixture.respond`, given the request's
:class:`Exchange` (an HTTP/1.1 ``BaseHTTPRequestHandler``, quiet, every verb routed to ``respond``). Used as a
context manager it serves on a free port at :attr:`HttpFixture.base` until the block ends.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Seen:
    """A request as a fixture recorded it."""

    method: str
    path: str
    headers: dict[str, str]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


class Exchange(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # chunked streams and kept-alive connections, as real agents serve them
    server: _Server

    def log_message(self, *_args: Any) -> None:
        pass

    def _any(self) -> None:
        self.server.fixture.respond(self)

    do_GET = do_POST = do_DELETE = _any  # noqa: N815

    def seen(self) -> Seen:
        return Seen(self.command, self.path, dict(self.headers.items()))

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def write_chunk(self, data: bytes) -> None:
        """One chunk of a ``Transfer-Encoding: chunked`` body, flushed so the client sees it now."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fixture: HttpFixture) -> None:
        self.fixture = fixture
        super().__init__(("127.0.0.1", 0), Exchange)


class HttpFixture:
    def __init__(self) -> None:
        self.httpd = _Server(self)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def respond(self, exchange: Exchange) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
