"""The lean worker under real gunicorn (quineling/lean_worker.py): a call it answers itself reads, on the wire,
exactly as the same call answered through gunicorn's own parser, and a connection that mixes both kinds keeps
its order. The worker hands a request to gunicorn when any header name holds an underscore (gunicorn drops
such headers), which is how these tests have one call served both ways on one server."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.live import LiveServer, live_server
from tests.support.principals import keys_file

pytestmark = pytest.mark.slow
HAND_OVER = b"X_Hand_Over: 1\r\n"
SQUARES = "[2,3,4] | square | sum | report total"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    keys, tokens = keys_file(tmp_path_factory.mktemp("keys"), "alice")
    with live_server(auth_keys_file=str(keys), rate_limit="") as server:
        yield server, tokens["alice"]


def request(token: str, method: str, params: object, extra: bytes = b"", request_id: str = "") -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": method, "params": params}).encode()
    head = (
        f"POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n"
        f"Authorization: Bearer {token}\r\nX-Request-ID: {request_id or uuid.uuid4().hex}\r\n"
        f"Content-Length: {len(body)}\r\n"
    ).encode()
    return head + extra + b"\r\n" + body


def exchange(server: LiveServer, raw: bytes, answers: int) -> list[tuple[bytes, list[bytes], bytes]]:
    """Send ``raw`` at once on one connection; the first ``answers`` responses: status line, header lines
    without the Date, body."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(raw)
        buffer, found = b"", []
        while len(found) < answers:
            head_end = buffer.find(b"\r\n\r\n")
            if head_end >= 0:
                status, *lines = buffer[:head_end].split(b"\r\n")
                length = int(next(line for line in lines if line.startswith(b"Content-Length: "))[16:])
                if len(buffer) >= head_end + 4 + length:
                    kept = [line for line in lines if not line.startswith(b"Date: ")]
                    found.append((status, kept, buffer[head_end + 4 : head_end + 4 + length]))
                    buffer = buffer[head_end + 4 + length :]
                    continue
            chunk = sock.recv(1 << 16)
            assert chunk, f"the server closed after {len(found)} answers"
            buffer += chunk
    return found


def message(data: object) -> dict[str, object]:
    return {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                        "parts": [{"mediaType": "application/json", "data": data}]}}  # fmt: skip


def test_the_worker_says_it_answers_the_calls_itself(served: tuple[LiveServer, str]) -> None:
    server, _ = served
    assert "the lean worker" in server.log_text()


def test_an_answer_reads_the_same_whichever_reads_the_request(served: tuple[LiveServer, str]) -> None:
    server, token = served
    [(_, _, created)] = exchange(server, request(token, "SendMessage", message({"operation": "create",
                                                                                "thought": SQUARES})), 1)  # fmt: skip
    task_id = json.loads(created)["result"]["task"]["id"]
    calls = [
        ("GetTask", {"id": task_id}),
        ("GetTask", {"id": task_id, "historyLength": 0}),
        ("GetTask", {"id": "no-such-task"}),
        ("GetTask", {"id": 5}),
        ("ListTasks", {"pageSize": 1}),
        ("CancelTask", {"id": task_id}),
        ("GetExtendedAgentCard", {}),
    ]
    for method, params in calls:
        rid = uuid.uuid4().hex
        lean, plain = (
            exchange(server, request(token, method, params, extra, rid), 1)[0] for extra in (b"", HAND_OVER)
        )
        assert lean == plain, method
        assert lean[0] == b"HTTP/1.1 200 OK" and b"Connection: keep-alive" in lean[1], method


def test_a_connection_mixing_both_kinds_keeps_its_order(served: tuple[LiveServer, str]) -> None:
    server, token = served
    card = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    ids = [uuid.uuid4().hex for _ in range(5)]
    raw = b"".join(
        [
            request(token, "ListTasks", {"pageSize": 1}, request_id=ids[0]),
            request(token, "GetTask", {"id": "x"}, request_id=ids[1]),
            request(token, "ListTasks", {"pageSize": 1}, HAND_OVER, request_id=ids[2]),
            card,
            request(token, "GetTask", {"id": "x"}, request_id=ids[3]),
            request(token, "GetTask", {"id": "x"}, b"Origin: https://evil.example\r\n", request_id=ids[4]),
        ]
    )
    answers = exchange(server, raw, 6)
    assert [status for status, _, _ in answers] == [b"HTTP/1.1 200 OK"] * 5 + [b"HTTP/1.1 403 FORBIDDEN"]
    for (_, lines, _), rid in zip(answers[:3] + answers[4:], ids, strict=True):
        assert f"X-Request-ID: {rid}".encode() in lines
    assert "tasks" in json.loads(answers[0][2])["result"]
    assert json.loads(answers[3][2])["name"]  # the card, served by gunicorn and Flask
    assert json.loads(answers[4][2])["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"


def test_a_refused_rate_is_counted_once_through_the_hand_over(tmp_path: Path) -> None:
    """The refusal is Flask's, answered before the body is read: its connection then closes (what was
    pipelined behind it does not run), as gunicorn alone does."""
    keys, tokens = keys_file(tmp_path, "alice")
    with live_server(auth_keys_file=str(keys), rate_limit="3/minute") as server:
        raw = b"".join(request(tokens["alice"], "GetTask", {"id": "x"}) for _ in range(5))
        answers = exchange(server, raw, 4)
        again = exchange(server, request(tokens["alice"], "GetTask", {"id": "x"}), 1)
    assert [status for status, _, _ in answers + again] == [b"HTTP/1.1 200 OK"] * 3 + [
        b"HTTP/1.1 429 TOO MANY REQUESTS"
    ] * 2
    remaining = [
        next(line for line in lines if line.startswith(b"RateLimit-Remaining: "))
        for _, lines, _ in answers + again
    ]
    assert remaining == [b"RateLimit-Remaining: %d" % n for n in (2, 1, 0, 0, 0)]
    assert b"Connection: close" in answers[3][1]
    assert json.loads(answers[3][2])["error"]["data"][0]["reason"] == "RATE_LIMIT_EXCEEDED"


def test_with_the_json_access_log_it_writes_the_access_line_gunicorn_would(tmp_path: Path) -> None:
    keys, tokens = keys_file(tmp_path, "alice")
    with live_server(
        auth_keys_file=str(keys), access_log=1, log_format="json", log_flush_seconds=0
    ) as server:
        ids = [uuid.uuid4().hex, uuid.uuid4().hex]
        raw = request(
            tokens["alice"], "GetTask", {"id": "x"}, request_id=ids[0], extra=b"User-Agent: t/1\r\n"
        )
        raw += request(tokens["alice"], "GetTask", {"id": "x"}, HAND_OVER + b"User-Agent: t/1\r\n", ids[1])
        answers = exchange(server, raw, 2)
        assert "the lean worker" in server.log_text()
        lines: dict[str, dict[str, object]] = {}
        deadline = time.monotonic() + 5
        while len(lines) < 2 and time.monotonic() < deadline:
            for line in server.log_text().splitlines():
                event = json.loads(line)
                if event.get("event") == "access" and event.get("request_id") in ids:
                    lines[str(event["request_id"])] = event
            time.sleep(0.05)
    lean, plain = (lines[rid] for rid in ids)
    assert lean["duration_seconds"] >= 0 and plain["duration_seconds"] >= 0  # type: ignore[operator]
    kept = ("client", "http_method", "path", "status", "bytes", "user_agent", "logger", "level", "pid")
    assert {k: lean[k] for k in kept} == {k: plain[k] for k in kept}
    assert lean["status"] == 200 and lean["bytes"] == len(answers[0][2]) and lean["user_agent"] == "t/1"
