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
from typing import Any

from tests.support.http_fixture import Exchange, HttpFixture, Seen

WELL_KNOWN = "/.well-known/agent-card.json"


@dataclass
class Request(Seen):
    body: Any


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


class FaultServer(HttpFixture):
    def __init__(self, handler: Callable[[Request], Reply]) -> None:
        super().__init__()
        self.handler = handler
        self.requests: list[Request] = []
        self.stopping = threading.Event()

    def respond(self, exchange: Exchange) -> None:
        raw = exchange.read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        request = Request(exchange.command, exchange.path, dict(exchange.headers.items()), body)
        self.requests.append(request)
        reply = self.handler(request)
        if reply.hang:
            self.stopping.wait(30)
            exchange.close_connection = True
            return
        if reply.events is not None:
            exchange.send_response(reply.status)
            exchange.send_header("Content-Type", "text/event-stream")
            exchange.send_header("Transfer-Encoding", "chunked")
            for k, v in reply.headers.items():
                exchange.send_header(k, v)
            exchange.end_headers()
            for text in reply.events:
                exchange.write_chunk((text + "\n\n").encode())
            if not reply.cut:
                exchange.end_chunks()
            exchange.close_connection = True
            return
        if isinstance(reply.body, bytes | str):
            payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
            ctype = "text/html"
        elif reply.body is None:
            payload, ctype = b"", "application/json"
        else:
            payload, ctype = json.dumps(reply.body).encode(), "application/json"
        exchange.send_response(reply.status)
        headers = {"Content-Type": ctype, **reply.headers}
        for k, v in headers.items():
            exchange.send_header(k, v)
        exchange.send_header("Content-Length", str(len(payload)))
        exchange.end_headers()
        exchange.wfile.write(payload)

    def close(self) -> None:
        self.stopping.set()  # a hanging answer lets go first, so shutdown does not wait for it
        super().close()

    def count(self, predicate: Callable[[Request], bool] = lambda _r: True) -> int:
        return sum(1 for r in self.requests if predicate(r))


@contextmanager
def fault_server(handler: Callable[[Request], Reply]) -> Iterator[FaultServer]:
    with FaultServer(handler) as server:
        yield server


@contextmanager
def agent_server(rpc: Callable[[Request], Reply], **card: Any) -> Iterator[FaultServer]:
    """A fault server playing an agent: at the well-known path its card (:func:`card_for` its own URL, ``card``
    overriding fields; a field given as a function gets the URL, for interfaces that point back at the server),
    every other request to ``rpc``."""

    def handle(request: Request) -> Reply:
        if request.path != WELL_KNOWN:
            return rpc(request)
        fields = {name: value(server.base) if callable(value) else value for name, value in card.items()}
        return Reply(body=card_for(server.base, **fields))

    with fault_server(handle) as server:
        yield server


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
