"""Raw-socket helpers for the attack suite: send exact bytes, read back what the server answered (or that it
closed), with nothing in between that could normalise the request."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field

from tests.support.live import LiveServer


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names; repeated ones joined by ", "
    body: bytes = b""

    def json(self) -> object:
        return json.loads(self.body)


def jsonrpc_head(
    body: bytes,
    token: str | None = None,
    extra: bytes = b"",
    path: str = "/a2a/jsonrpc",
    length: int | None = None,
) -> bytes:
    """A 1.0 JSON-RPC request head for ``body`` (its Content-Length unless ``length`` says otherwise)."""
    auth = f"Authorization: Bearer {token}\r\n".encode() if token else b""
    size = len(body) if length is None else length
    return (
        (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n"
            f"Content-Length: {size}\r\n"
        ).encode()
        + auth
        + extra
        + b"\r\n"
    )


def get_task(task_id: str = "no-such-task", rpc_id: int = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": rpc_id, "method": "GetTask", "params": {"id": task_id}}
    ).encode()


def connect(server: LiveServer, timeout: float = 10) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=timeout)


def read_answers(sock: socket.socket, most: int = 100, timeout: float = 10) -> tuple[list[Answer], bool]:
    """Answers until the server closes (or ``most`` were read, or ``timeout`` passes); with whether it closed."""
    sock.settimeout(timeout)
    buffer, closed = b"", False
    answers: list[Answer] = []
    deadline = time.monotonic() + timeout
    while len(answers) < most:
        parsed = _parse(buffer)
        if parsed is not None:
            answer, buffer = parsed
            answers.append(answer)
            continue
        if time.monotonic() > deadline:
            break
        try:
            chunk = sock.recv(1 << 16)
        except TimeoutError:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        buffer += chunk
    return answers, closed


def exchange(
    server: LiveServer, raw: bytes, most: int = 100, timeout: float = 10, half_close: bool = False
) -> tuple[list[Answer], bool]:
    """Send ``raw`` on a new connection (then shut the sending side with ``half_close``); what came back."""
    with connect(server, timeout) as sock:
        sock.sendall(raw)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return read_answers(sock, most, timeout)


def _parse(buffer: bytes) -> tuple[Answer, bytes] | None:
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    status_line, *lines = buffer[:end].decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    length = int(headers.get("content-length", "0"))
    if len(buffer) < end + 4 + length:
        return None
    body = buffer[end + 4 : end + 4 + length]
    return Answer(int(status_line.split(" ")[1]), headers, body), buffer[end + 4 + length :]
