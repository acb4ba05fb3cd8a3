"""Tiny threaded HTTP servers playing hostile (or merely foreign) agents for the client and CLI attack tests:
each records every request it gets, headers included, so a test can prove what left the client."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[["Exchange"], None]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""

    def rpc(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.body)
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}


@dataclass
class Exchange:
    """One request: what it was, and the raw writer to answer it with."""

    handler: BaseHTTPRequestHandler
    seen: Seen

    def json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.handler.send_response(status)
        self.handler.send_header("Content-Type", "application/json")
        self.handler.send_header("Content-Length", str(len(data)))
        self.handler.end_headers()
        self.handler.wfile.write(data)

    def raw(self, data: bytes) -> None:
        self.handler.wfile.write(data)
        self.handler.wfile.flush()


@dataclass
class Agent:
    origin: str
    seen: list[Seen] = field(default_factory=list)

    def authorizations(self) -> list[str | None]:
        return [s.headers.get("authorization") for s in self.seen]


@contextmanager
def serve(route: Handler) -> Iterator[Agent]:
    """A server on a free loopback port answering every request with ``route``."""
    agent = Agent("")

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            agent.seen.append(seen)
            try:
                route(Exchange(self, seen))
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        do_GET = do_POST = _any  # noqa: N815 - the names BaseHTTPRequestHandler dispatches to

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    agent.origin = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield agent
    finally:
        server.shutdown()
        server.server_close()


BEARER = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}


def card(interface_url: str, *, schemes: dict[str, Any] | None = None) -> dict[str, Any]:
    """A minimal A2A 1.0 card with one JSON-RPC interface at ``interface_url`` (a bearer scheme unless
    ``schemes`` says otherwise)."""
    doc: dict[str, Any] = {
        "name": "hostile",
        "description": "",
        "version": "1",
        "supportedInterfaces": [
            {"url": interface_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "skills": [],
    }
    doc["securitySchemes"] = BEARER if schemes is None else schemes
    return doc


def completed_task(request: Seen) -> dict[str, Any]:
    """The JSON-RPC answer to a SendMessage (a completed task) or a GetTask (the same task)."""
    rpc = request.rpc()
    task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
    result = task if rpc.get("method") == "GetTask" else {"task": task}
    return {"jsonrpc": "2.0", "id": rpc.get("id"), "result": result}
