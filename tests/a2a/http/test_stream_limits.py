"""The per-worker stream cap (503 with ``Retry-After`` in each binding's error shape, the slot freed when the
response closes) and a stream's early end when its client hangs up (docs/deployment.md, "Worker model")."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from werkzeug.serving import make_server

from quineling.a2a.context import CallContext
from quineling.a2a.http.streams import RETRY_AFTER_SECONDS, StreamSlots, stop_probe
from quineling.a2a.subscription import StreamSettings, follow
from quineling.a2a.task_facts import describe_task
from stores import backend_from_url
from tests.a2a.conftest import make_app, text, user_message


@contextmanager
def serving(**config: Any) -> Iterator[tuple[Any, int]]:
    """The app (over the fake runtime) behind werkzeug's threaded server on a free port: real sockets, so a
    client that hangs up is seen as one, as under gunicorn."""
    app = make_app(config=config)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield app, server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def request(port: int, method: str, path: str, body: Any = None, version: str = "1.0") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    payload = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: {version}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    sock.sendall(head.encode() + b"\r\n" + payload)
    return sock


def answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and what of the body has arrived once the head and a first event (or the whole JSON
    body) are in."""
    received = b""
    while True:
        chunk = sock.recv(65536)
        received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        if not chunk or (
            _ and (b"data:" in body or (b"json" in head.lower() and body.rstrip().endswith(b"}")))
        ):
            break
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def waiting_task(port: int) -> str:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message(text(""))}}
    with request(port, "POST", "/a2a/jsonrpc", body) as sock:
        status, _, reply = answer(sock)
    task = json.loads(reply)["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id: str = task["id"]
    return task_id


def rest_subscribe(port: int, task_id: str) -> socket.socket:
    return request(port, "GET", f"/a2a/rest/tasks/{task_id}:subscribe")


def rpc_subscribe(port: int, task_id: str) -> socket.socket:
    body = {"jsonrpc": "2.0", "id": "s", "method": "SubscribeToTask", "params": {"id": task_id}}
    return request(port, "POST", "/a2a/jsonrpc", body)


def v03_resubscribe(port: int, task_id: str) -> socket.socket:
    body = {"jsonrpc": "2.0", "id": "r", "method": "tasks/resubscribe", "params": {"id": task_id}}
    return request(port, "POST", "/a2a/jsonrpc", body, version="0.3")


SUBSCRIBERS = {"rest": rest_subscribe, "jsonrpc": rpc_subscribe, "v03": v03_resubscribe}


def assert_refused(sock: socket.socket, kind: str) -> None:
    status, headers, raw = answer(sock)
    sock.close()
    assert status == 503
    assert headers["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert headers["content-type"].startswith("application/json")
    body = json.loads(raw)
    if kind == "rest":
        error = body["error"]
        assert error["code"] == 503 and error["status"] == "UNAVAILABLE"
        assert "limit of 2 open streams" in error["message"]
        assert error["details"][0]["metadata"]["retryable"] == "true"
    elif kind == "jsonrpc":
        assert body["jsonrpc"] == "2.0" and body["id"] == "s"
        assert body["error"]["code"] == -32603
        assert body["error"]["data"][0]["reason"] == "STREAM_LIMIT_REACHED"
        assert body["error"]["data"][0]["metadata"]["retryable"] == "true"
    else:  # v0.3 errors are code and message only
        assert body["id"] == "r" and set(body["error"]) == {"code", "message"}
        assert body["error"]["code"] == -32603


def wait_until(condition: Any, seconds: float) -> float:
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < seconds, f"not within {seconds} s"
        time.sleep(0.01)
    return time.monotonic() - start


@pytest.mark.parametrize("kind", list(SUBSCRIBERS))
def test_beyond_the_cap_a_subscription_is_refused_and_a_gone_client_frees_its_slot(kind: str) -> None:
    with serving(max_streams=2, keepalive_seconds=30) as (app, port):
        slots = app.extensions["quineling"].streams
        subscribe = SUBSCRIBERS[kind]
        task_id = waiting_task(port)
        held = [subscribe(port, task_id), subscribe(port, task_id)]
        for sock in held:
            status, headers, body = answer(sock)
            assert status == 200 and headers["content-type"].startswith("text/event-stream")
            assert body.split(b"\r\n")[-1].startswith(b"data:") or b"data:" in body
        assert slots.open == 2
        assert_refused(subscribe(port, task_id), kind)
        # Other requests are still served, and streaming sends (which never wait) are not capped.
        get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
        with request(port, "POST", "/a2a/jsonrpc", get) as sock:
            assert json.loads(answer(sock)[2])["result"]["id"] == task_id
        with request(port, "POST", "/a2a/rest/message:stream", {"message": user_message(text("x"))}) as sock:
            assert answer(sock)[0] == 200
        # The clients hang up: well before the next keep-alive write (30 s) their slots are free again.
        for sock in held:
            sock.close()
        assert wait_until(lambda: slots.open == 0, 3.0) < 3.0
        again = subscribe(port, task_id)
        assert answer(again)[0] == 200
        again.close()


def test_the_task_is_checked_before_the_cap_and_a_failed_subscription_holds_no_slot() -> None:
    with serving(max_streams=1) as (app, port):
        slots = app.extensions["quineling"].streams
        with rest_subscribe(port, "no-such-task") as sock:
            assert answer(sock)[0] == 404
        with rpc_subscribe(port, "no-such-task") as sock:
            assert json.loads(answer(sock)[2])["error"]["code"] == -32001
        assert slots.open == 0  # the failed calls took no slot
        task_id = waiting_task(port)
        held = rest_subscribe(port, task_id)
        assert answer(held)[0] == 200
        # Every slot is held: an unknown task is still task-not-found on each binding, not "stream limit".
        with rest_subscribe(port, "no-such-task") as sock:
            status, _, body = answer(sock)
            assert status == 404 and json.loads(body)["error"]["status"] == "NOT_FOUND"
        with rpc_subscribe(port, "no-such-task") as sock:
            assert json.loads(answer(sock)[2])["error"]["code"] == -32001
        with v03_resubscribe(port, "no-such-task") as sock:
            assert b"-32001" in answer(sock)[2]
        assert_refused(rpc_subscribe(port, task_id), "jsonrpc")  # a real task beyond the cap: 503
        held.close()


def test_stream_slots() -> None:
    slots = StreamSlots(2)
    one, two = slots.acquire(), slots.acquire()
    assert one and two and slots.acquire() is None and slots.open == 2
    one()
    one()  # twice is once
    assert slots.open == 1
    assert slots.acquire() is not None and slots.open == 2


# --- a stream ends early when its client is gone -----------------------------------------------------------


def test_follow_stops_within_a_poll_slice_once_told_to() -> None:
    backend = backend_from_url("memory://")
    store = backend.task_store(describe=describe_task)
    task = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}
    store.save("s", task)
    stop = False
    settings = StreamSettings(keepalive_seconds=60, subscribe_max_seconds=60, poll_seconds=0.05)
    events = follow(store, "s", task["id"], None, settings, keepalive=True, should_stop=lambda: stop)
    stop = True
    start = time.monotonic()
    assert list(events) == []  # ended, without a keep-alive or an error
    assert time.monotonic() - start < 0.5


def test_follow_keepalives_keep_their_period_across_poll_slices() -> None:
    backend = backend_from_url("memory://")
    store = backend.task_store(describe=describe_task)
    task = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}
    store.save("s", task)
    settings = StreamSettings(keepalive_seconds=0.3, subscribe_max_seconds=1.0, poll_seconds=0.05)
    stamps, start = [], time.monotonic()
    for event in follow(store, "s", task["id"], None, settings, keepalive=True):
        if event is None:
            stamps.append(time.monotonic() - start)
    assert len(stamps) == 3, stamps  # at about 0.3, 0.6 and 0.9 s, not one per 0.05 s slice
    assert all(0.25 < b - a < 0.5 for a, b in zip([0.0, *stamps], stamps, strict=False)), stamps


def test_the_probe_sees_a_closed_or_reset_peer_and_nothing_else() -> None:
    server, client = socket.socketpair()
    try:
        gone = stop_probe({"gunicorn.socket": server})
        assert gone() is False
        client.sendall(b"GET / HTTP/1.1\r\n")  # data waiting (a pipelined request) is not a hang-up
        assert gone() is False
        assert server.recv(100)  # ... and the probe consumed none of it
        assert server.gettimeout() is None  # the server's blocking mode is restored
        client.close()
        assert gone() is True
    finally:
        server.close()
    assert gone() is True  # a socket the server already closed
    assert stop_probe({})() is False  # in-process: no socket, no worker


def test_call_context_carries_the_probe_without_changing_equality() -> None:
    assert CallContext(tenant="a") == CallContext(tenant="a", should_stop=lambda: True)
    assert CallContext().should_stop() is False
