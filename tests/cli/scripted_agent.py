"""A tiny A2A 1.0 JSON-RPC agent whose tasks follow a script, for what the real agent never does: stay
WORKING, report TASK_STATE_UNSPECIFIED, or finish only after a few polls. It records every request (method,
A2A-Version header, params, time) so a test can check what the command line sent and how often.

    with scripted_agent(["TASK_STATE_WORKING", "TASK_STATE_UNSPECIFIED", "TASK_STATE_COMPLETED"]) as agent:
        ...  # SendMessage answers WORKING; each GetTask moves one step along the script, then stays.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Agent:
    url: str
    script: list[str]  # task states; "MESSAGE" first: SendMessage answers with a direct Message instead
    card_extra: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0

    def methods(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == name]


def _task(agent: Agent, state: str) -> dict[str, Any]:
    task: dict[str, Any] = {"id": "task-1", "contextId": "ctx-1", "status": {"state": state}}
    if state == "TASK_STATE_COMPLETED":
        task["artifacts"] = [{"artifactId": "out", "parts": [{"text": "done"}]}]
    return task


@contextmanager
def scripted_agent(script: list[str], **card_extra: Any) -> Iterator[Agent]:
    agent = Agent("", script, card_extra)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            agent.requests.append(
                {"method": "card", "version": self.headers.get("A2A-Version"), "at": time.monotonic()}
            )
            self._send({
                "name": "Scripted", "description": "follows a script", "version": "1",
                "supportedInterfaces": [{"url": agent.url + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "capabilities": {"streaming": False, "pushNotifications": False},
                "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["t"]}],
                **agent.card_extra,
            })  # fmt: skip

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            method = body.get("method")
            agent.requests.append({"method": method, "version": self.headers.get("A2A-Version"),
                                   "params": body.get("params"), "at": time.monotonic(),
                                   "headers": dict(self.headers.items())})  # fmt: skip
            if method == "SendMessage" and agent.script[0] == "MESSAGE":
                result = {
                    "message": {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": "hello back"}]}
                }
            elif method == "SendMessage":
                result: dict[str, Any] = {"task": _task(agent, agent.script[0])}
            elif method == "GetTask":
                agent.step = min(agent.step + 1, len(agent.script) - 1)
                result = _task(agent, agent.script[agent.step])
            else:
                self._send({"jsonrpc": "2.0", "id": body.get("id"),
                            "error": {"code": -32601, "message": f"{method} not offered"}})  # fmt: skip
                return
            self._send({"jsonrpc": "2.0", "id": body.get("id"), "result": result})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    agent.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield agent
    finally:
        server.shutdown()
        server.server_close()
