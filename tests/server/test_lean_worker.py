"""The lean worker's own loop (quineling/server/lean_worker.py), in process over a socket pair: it answers the lean
path's calls itself and, at the first request it does not answer, stops and hands gunicorn every byte from
that request on, with what the lean path noted of it. The same worker under real gunicorn:
tests/e2e/test_lean_worker_live.py."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gevent.socket  # type: ignore[import-untyped]
import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger
from werkzeug.test import EnvironBuilder

from quineling.a2a.http.lean_jsonrpc import EXTENSION_KEY
from quineling.a2a.http.rate_limit import VERDICT_KEY
from quineling.app import create_app
from quineling.server.lean_worker import LeanGeventWorker, _Replayed
from tests.support.principals import keys_file

# What a handed-over request takes along: the lean path looked at it already (not again in Flask's app).
HANDED = {"quineling.lean.declined": True}
HEADERS = b"Host: 127.0.0.1\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\n"


def rpc(method: str, params: dict[str, Any], extra: bytes = b"", line: bytes | None = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    start = line or b"POST /a2a/jsonrpc HTTP/1.1"
    return start + b"\r\n" + HEADERS + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def create() -> bytes:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
               "parts": [{"mediaType": "application/json", "data": {"operation": "parse", "thought": "[1] | sum"}}]}  # fmt: skip
    return rpc("SendMessage", {"message": message})


LIST = rpc("ListTasks", {"pageSize": 1})


def worker_for(**config: Any) -> LeanGeventWorker:
    """A worker as gunicorn makes one, without its process: the settings, log and counters the loop reads."""
    worker = LeanGeventWorker.__new__(LeanGeventWorker)
    worker.cfg = Config()
    worker.log = Logger(worker.cfg)
    worker.nr = 0
    worker.max_requests = sys.maxsize
    worker.alive = True
    worker.wsgi = create_app(config=config)
    worker.attach(worker.wsgi.extensions[EXTENSION_KEY])
    return worker


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    server, client = socket.socketpair()
    server.settimeout(10)
    client.settimeout(10)
    yield server, client
    server.close()
    client.close()


def responses(raw: bytes) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """(status line, headers, body) of each response in ``raw``, framed by Content-Length."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        status, *lines = head.split(b"\r\n")
        headers = dict(line.split(b": ", 1) for line in lines)
        length = int(headers[b"Content-Length"])
        found.append((status, headers, rest[:length]))
        raw = rest[length:]
    return found


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def test_it_answers_pipelined_calls_then_hands_over_the_rest_untouched(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = pair
    worker = worker_for()
    handed = rpc("ListTasks", {"pageSize": 1}, extra=b"X_Odd: 1\r\n")  # gunicorn's to read
    rest = handed + b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + LIST
    client.sendall(create() + LIST + rest)
    assert worker._serve(server, ("127.0.0.1", 5000)) == (rest, HANDED)
    client.shutdown(socket.SHUT_WR)
    server.close()
    answers = responses(read_all(client))
    assert [status for status, _, _ in answers] == [b"HTTP/1.1 200 OK"] * 2
    for _, headers, body in answers:
        assert headers[b"Connection"] == b"keep-alive" and headers[b"Server"] == b"gunicorn"
        assert headers[b"Content-Type"] == b"application/json" and len(headers[b"X-Request-ID"]) == 32
        assert "result" in json.loads(body)
    created = json.loads(answers[0][2])["result"]["task"]["id"]
    assert json.loads(answers[1][2])["result"]["tasks"][0]["id"] == created  # in order, on one store
    assert worker.nr == 2


def test_a_request_in_pieces_is_read_whole(pair: tuple[socket.socket, socket.socket]) -> None:
    server, client = pair
    worker = worker_for()
    request = create()
    cuts = [
        5,
        40,
        request.index(b"\r\n\r\n") + 2,
        request.index(b"\r\n\r\n") + 4,
        len(request) - 3,
        len(request),
    ]

    def send_slowly() -> None:
        start = 0
        for cut in cuts:
            client.sendall(request[start:cut])
            start = cut
            time.sleep(0.05)
        client.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send_slowly)
    sender.start()
    assert worker._serve(server, ("127.0.0.1", 5000)) is None  # served, then the client's end of file
    sender.join()
    server.close()
    [(status, _, body)] = responses(read_all(client))
    assert status == b"HTTP/1.1 200 OK" and json.loads(body)["result"]["task"]["id"]


@pytest.mark.parametrize(
    "first",
    [
        b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"POST /a2a/rest/message:send HTTP/1.1\r\n",  # not even a whole head yet
        b"PO",  # then closed: nothing to answer
        rpc("ListTasks", {}, line=b"POST /a2a/jsonrpc HTTP/1.0"),
        rpc("ListTasks", {}, extra=b"Expect: 100-continue\r\n"),
        rpc("ListTasks", {}, extra=b"Connection: close\r\n"),
        rpc("SendStreamingMessage", {}),  # the lean path's no: Flask streams it
        rpc("GetTask", {"id": "x"}, extra=b"Origin: https://evil.example\r\n"),  # refused by Flask, not here
    ],
)
def test_what_it_does_not_answer_is_handed_over_as_read(
    pair: tuple[socket.socket, socket.socket], first: bytes
) -> None:
    server, client = pair
    client.sendall(first)
    client.shutdown(socket.SHUT_WR)
    handed = worker_for()._serve(server, ("127.0.0.1", 5000))
    assert handed == ((first, HANDED) if first != b"PO" else None)
    server.close()
    assert read_all(client) == b""  # not a byte answered


def test_a_body_over_the_limit_is_handed_over_before_it_is_read(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = pair
    head = b"POST /a2a/jsonrpc HTTP/1.1\r\n" + HEADERS + b"Content-Length: 2097153\r\n\r\n"
    client.sendall(head + b"{")
    handed = worker_for()._serve(server, ("127.0.0.1", 5000))
    assert handed == (head + b"{", HANDED)


def test_a_rate_limit_refusal_counted_here_travels_with_the_request(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    server, client = pair
    worker = worker_for(rate_limit="1/minute")
    client.sendall(LIST + LIST)
    pending, carried = worker._serve(server, ("127.0.0.1", 5000)) or (b"", {})
    assert pending == LIST
    verdict = carried[VERDICT_KEY]
    assert not verdict.allowed and verdict.remaining == 0


@pytest.mark.parametrize("why", ["stopping", "max_requests"])
def test_a_worker_that_is_to_stop_answers_with_close_and_ends_the_connection(
    pair: tuple[socket.socket, socket.socket], why: str
) -> None:
    server, client = pair
    worker = worker_for()
    if why == "stopping":
        worker.alive = False
    else:
        worker.max_requests = 2
    client.sendall(LIST + LIST + LIST)
    assert worker._serve(server, ("127.0.0.1", 5000)) is None
    server.close()
    answers = responses(read_all(client))
    expected = [b"close"] if why == "stopping" else [b"keep-alive", b"close"]
    assert [headers[b"Connection"] for _, headers, _ in answers] == expected


def test_an_idle_connection_is_closed_after_the_keep_alive_time() -> None:
    server, client = gevent.socket.socketpair()
    worker = worker_for()
    worker.cfg.set("keepalive", 1)
    client.sendall(LIST + b"POST /a2a/jsonrpc HTTP/1.1\r\nHost:")  # the second head never completes
    started = time.monotonic()
    assert worker._serve(server, ("127.0.0.1", 5000)) is None
    assert 0.9 < time.monotonic() - started < 5
    assert responses(client.recv(1 << 16))[0][0] == b"HTTP/1.1 200 OK"
    server.close()
    client.close()


def test_the_replayed_socket_reads_what_was_read_first_and_is_still_a_socket() -> None:
    left, right = gevent.socket.socketpair()
    right.sendall(b" and then the socket")
    replayed = _Replayed(left, b"what was read", {"k": 1})
    # gevent's socket class: in a gevent worker, whose standard library gevent has patched, socket.socket.
    assert isinstance(replayed, gevent.socket.socket) and left.fileno() == -1
    assert replayed.recv(4, socket.MSG_PEEK) == b"what"  # a peek takes nothing
    assert replayed.recv(5) == b"what "
    assert replayed.recv(100) == b"was read"
    assert replayed.recv(100) == b" and then the socket"
    assert replayed.carried == {"k": 1}
    replayed.close()
    right.close()


def test_a_fault_of_the_lean_path_is_gunicorns_500_and_the_connection_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = worker_for()

    def broken(environ: dict[str, Any]) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(worker.lean, "serve", broken)
    listener = gevent.socket.socket()
    listener.bind(("127.0.0.1", 0))
    server, client = gevent.socket.socketpair()
    client.sendall(LIST)
    worker.handle(listener, server, ("127.0.0.1", 5000))
    answer = read_all(client)
    assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n") and b"a bug" not in answer
    assert server.fileno() == -1  # closed
    client.close()
    listener.close()


def test_a_refused_credential_is_handed_over_from_its_head_and_checked_twice_at_most(
    pair: tuple[socket.socket, socket.socket], tmp_path: Path
) -> None:
    """Issue 26: the lean worker does not wait for the body of a request whose credential fails; Flask, which
    it goes to, checks it once more (and refuses it, unread). Before, the body was awaited with no deadline."""
    server, client = pair
    keys, _ = keys_file(tmp_path, "alice")
    worker = worker_for(auth_keys_file=str(keys))
    lean = worker.lean
    checked: list[str | None] = []
    authenticate = lean.authenticator.authenticate

    def counting(header: str | None) -> Any:
        checked.append(header)
        return authenticate(header)

    lean.authenticator.authenticate = counting
    head = (
        b"POST /a2a/jsonrpc HTTP/1.1\r\n"
        + HEADERS
        + b"Authorization: Bearer nope\r\nContent-Length: 1000\r\n\r\n"
    )
    client.sendall(head + b"{")  # the rest of the body never comes
    assert worker._serve(server, ("127.0.0.1", 5000)) == (head + b"{", HANDED)
    assert checked == ["Bearer nope"]
    environ = EnvironBuilder(
        path="/a2a/jsonrpc",
        method="POST",
        headers={"Authorization": "Bearer nope", "A2A-Version": "1.0", "Content-Type": "application/json"},
        data=b"{",
    ).get_environ()
    environ.update(HANDED)  # what the hand-over carries into gunicorn's environ
    statuses: list[str] = []
    lean(environ, lambda status, headers, *_: statuses.append(status))
    assert statuses == ["401 UNAUTHORIZED"] and checked == ["Bearer nope"] * 2
