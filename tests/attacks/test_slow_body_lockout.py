"""Issue 26, item 1: unauthenticated clients that send a head and then trickle the body must not lock real users
out. With a keys file on and room for 100 connections, 120 such connections are opened; alice's calls and
``/healthz`` are answered within a second throughout, because a request without valid credentials is refused
(401, connection closed) from its head, before any of its body is waited for. A body that does not arrive within
``QUINELING_BODY_TIMEOUT_SECONDS`` is answered 408 and its connection closed, on either path."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.attacks.wire import connect, exchange, get_task, jsonrpc_head, read_answers
from tests.support.live import LiveServer, live_server
from tests.support.principals import keys_file

pytestmark = pytest.mark.slow
ATTACKERS = 120
DECLARED = 1024 * 1024  # under the 2 MiB limit: a body the server would otherwise wait for


@pytest.fixture(scope="module", params=["lean", "flask"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, str]]:
    keys, tokens = keys_file(tmp_path_factory.mktemp("keys"), "alice")
    with live_server(
        auth_keys_file=str(keys),
        rate_limit="",
        worker_connections=100,
        body_timeout_seconds=2,
        lean_jsonrpc=int(request.param == "lean"),
    ) as server:
        yield server, tokens["alice"]


def _trickle(sockets: list[socket.socket], stop: threading.Event) -> None:
    while not stop.wait(0.25):
        for sock in sockets:
            try:
                sock.send(b" ")
            except OSError:
                pass


def test_slow_unauthenticated_bodies_leave_alice_served(served: tuple[LiveServer, str]) -> None:
    server, token = served
    attackers: list[socket.socket] = []
    stop = threading.Event()
    trickler = threading.Thread(target=_trickle, args=(attackers, stop), daemon=True)
    latencies: list[float] = []
    try:
        for _ in range(ATTACKERS):
            sock = connect(server, timeout=5)
            sock.sendall(jsonrpc_head(b"", length=DECLARED) + b"{")
            attackers.append(sock)
        trickler.start()
        with requests.Session() as alice:
            ends = time.monotonic() + 4
            while time.monotonic() < ends:
                for check in ("call", "healthz"):
                    started = time.monotonic()
                    if check == "call":
                        answer = requests.post(
                            server.url("/a2a/jsonrpc"),
                            data=get_task(),
                            headers={
                                "Authorization": f"Bearer {token}",
                                "Content-Type": "application/json",
                                "A2A-Version": "1.0",
                            },  # fmt: skip
                            timeout=5,
                        )
                        assert answer.status_code == 200 and "error" in answer.json()
                    else:
                        assert alice.get(server.url("/healthz"), timeout=5).status_code == 200
                    latencies.append(time.monotonic() - started)
                time.sleep(0.05)
        # Every attacker was refused from its head, and its connection closed.
        for sock in attackers:
            answers, closed = read_answers(sock, timeout=3)
            assert [answer.status for answer in answers] == [401] and closed
            assert answers[0].headers.get("connection") == "close"
    finally:
        stop.set()
        for sock in attackers:
            sock.close()
    print(f"alice under {ATTACKERS} slow bodies: median {statistics.median(latencies) * 1000:.1f} ms, "
          f"max {max(latencies) * 1000:.1f} ms over {len(latencies)} requests")  # fmt: skip
    assert max(latencies) < 1.0


def test_an_authenticated_body_that_never_arrives_gets_408(served: tuple[LiveServer, str]) -> None:
    server, token = served
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(jsonrpc_head(b"", token, length=100) + b'{"jsonrpc"')
        answers, closed = read_answers(sock, timeout=8)
    assert [answer.status for answer in answers] == [408] and closed
    assert answers[0].headers.get("connection") == "close"
    assert 1.5 < time.monotonic() - started < 6


def test_a_declared_length_over_the_limit_is_refused_from_the_head(served: tuple[LiveServer, str]) -> None:
    server, token = served
    raw = (
        jsonrpc_head(b"", token, length=3 * 1024 * 1024) + b"{" + jsonrpc_head(get_task(), token) + get_task()
    )
    started = time.monotonic()
    answers, closed = exchange(server, raw, timeout=5)
    assert [answer.status for answer in answers] == [413] and closed
    assert time.monotonic() - started < 1.5


def test_a_refused_credential_closes_the_connection_and_runs_nothing_behind_it(
    served: tuple[LiveServer, str], tmp_path: Path
) -> None:
    server, token = served
    body = get_task()
    raw = jsonrpc_head(body, "not-a-key") + body + jsonrpc_head(body, token) + body
    answers, closed = exchange(server, raw, timeout=5)
    assert [answer.status for answer in answers] == [401] and closed
    assert answers[0].headers.get("connection") == "close"
