"""A small programmable HTTP server for the client's fault tests (threaded ``http.server`` on a free port).

Each test gives a ``handler(request) -> Reply``; the server records every request. A reply is a status, headers
and a body, or ``hang=True`` (never answer until the server stops), or ``events`` (an SSE stream sent with
chunked encoding, each event flushed; ``cut=True`` drops the connection after them without finishing the body,
which a client sees as a broken stream).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes/str
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    events: list[str] | None = None  # raw SSE event texts ("id: 1\ndata: {...}")
    cut: bool = False


def sse(data: Any, event_id: str | None = None, event: str | None = None) -> str:
    lines = [f"id: {event_id}"] if event_id is not None else []
    if event:
        lines.append(f"event: {event}")
    lines.append(f"data: {json.dumps(data)}")
    return "\n".join(lines)


class FaultServer:
    def __init__(self, handler: Callable[[Request], Reply]) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                request = Request(self.command, self.path, dict(self.headers.items()), body)
                server.requests.append(request)
                reply = server.handler(request)
                if reply.hang:
                    server.stopping.wait(30)
                    self.close_connection = True
                    return
                if reply.events is not None:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    for text in reply.events:
                        chunk = (text + "\n\n").encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                    if not reply.cut:
                        self.wfile.write(b"0\r\n\r\n")
                    self.close_connection = True
                    return
                if isinstance(reply.body, bytes | str):
                    payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
                    ctype = "text/html"
                elif reply.body is None:
                    payload, ctype = b"", "application/json"
                else:
                    payload, ctype = json.dumps(reply.body).encode(), "application/json"
                self.send_response(reply.status)
                headers = {"Content-Type": ctype, **reply.headers}
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _any  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def count(self, predicate: Callable[[Request], bool] = lambda _r: True) -> int:
        return sum(1 for r in self.requests if predicate(r))


@contextmanager
def fault_server(handler: Callable[[Request], Reply]) -> Iterator[FaultServer]:
    server = FaultServer(handler)
    thread = threading.Thread(target=server.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.httpd.shutdown()
        server.httpd.server_close()


def card_for(base: str, *, interfaces: list[dict[str, str]] | None = None, streaming: bool = True,
             push: bool = False, **extra: Any) -> dict[str, Any]:  # fmt: skip
    """A minimal 1.0 card whose one JSON-RPC interface is ``base``/rpc (unless ``interfaces`` says otherwise)."""
    return {
        "name": "fault agent",
        "description": "a fixture",
        "version": "1",
        "supportedInterfaces": interfaces
        or [{"url": f"{base}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming, "pushNotifications": push},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}],
        **extra,
    }


def rpc_result(request: Request, result: Any) -> Reply:
    return Reply(body={"jsonrpc": "2.0", "id": request.body["id"], "result": result})


def task(task_id: str, state: str, **extra: Any) -> dict[str, Any]:
    return {"id": task_id, "contextId": "c1", "status": {"state": state}, **extra}
