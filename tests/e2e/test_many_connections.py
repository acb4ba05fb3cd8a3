"""Many clients on one gevent worker on Redis and on the Redis Cluster (issue 27): 500 open streams and 1,000
kept-alive clients, each of which has sent a GetTask, are more than any Redis pool default (redis-py's is 100
connections), yet every answer is right, a GetTask takes well under 100 ms at p99, ``/readyz`` answers 200, and
the stream cap — not the store — is what refuses the next stream. A store connection is held for the duration
of a store call only (stores/redis/connection.py), so connections scale with calls in flight, not clients.

The clients are plain non-blocking sockets driven by one selector, so the whole scenario takes seconds."""

from __future__ import annotations

import json
import resource
import selectors
import socket
import statistics
import time
from collections.abc import Iterator

import pytest

from tests.conftest import REDIS_STORES, store_url
from tests.e2e.test_stream_flood import Stream, waiting_task
from tests.support.live import LiveServer, live_server

pytestmark = pytest.mark.slow
STREAMS, CLIENTS, PROBES = 500, 1000, 200
ROUNDS = 3  # of probes, each after every client has asked again
DESCRIPTORS = STREAMS + CLIENTS + 200  # this process's sockets, and the worker's (which inherits the limit)


@pytest.fixture(scope="module", autouse=True)
def enough_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * DESCRIPTORS:
        pytest.skip(f"the hard open-files limit ({hard}) is below the {2 * DESCRIPTORS} this test holds")
    wanted = 4 * DESCRIPTORS if hard == resource.RLIM_INFINITY else min(hard, 4 * DESCRIPTORS)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def get_task_request(task_id: str, number: int) -> bytes:
    body = json.dumps(
        {"jsonrpc": "2.0", "id": number, "method": "GetTask", "params": {"id": task_id}}
    ).encode()
    return (
        b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def answered(received: bytes) -> tuple[int, bytes] | None:
    """The status and body of a complete HTTP answer, or ``None`` while it is incomplete."""
    head, sep, rest = received.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
    return (int(lines[0].split()[1]), rest[:length]) if len(rest) >= length else None


def get_tasks(socks: list[socket.socket], task_id: str, budget: float = 30) -> list[tuple[int, bytes]]:
    """One GetTask on each kept-alive socket at once, every answer read (in the sockets' order)."""
    received = {sock: b"" for sock in socks}
    done: dict[socket.socket, tuple[int, bytes]] = {}
    with selectors.DefaultSelector() as selector:
        for number, sock in enumerate(socks):
            sock.sendall(get_task_request(task_id, number))
            selector.register(sock, selectors.EVENT_READ, sock)
        deadline = time.monotonic() + budget
        while len(done) < len(socks):
            assert time.monotonic() < deadline, f"{len(socks) - len(done)} GetTasks unanswered"
            for key, _ in selector.select(timeout=1):
                sock = key.data
                chunk = sock.recv(65536)
                assert chunk, "a kept-alive connection was closed"
                received[sock] += chunk
                answer = answered(received[sock])
                if answer is not None:
                    done[sock] = answer
                    selector.unregister(sock)
    return [done[sock] for sock in socks]


def probe_seconds(server: LiveServer, task_id: str) -> list[float]:
    """GetTask after GetTask on one kept-alive connection, each one's time to its whole answer."""
    times = []
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        for _ in range(PROBES):
            start = time.monotonic()
            ((status, body),) = get_tasks([sock], task_id)
            times.append(time.monotonic() - start)
            assert status == 200 and json.loads(body)["result"]["id"] == task_id, body
    return times


def ready(server: LiveServer) -> int:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return int(received.split()[1])


def wrong(answers: list[tuple[int, bytes]], task_id: str) -> list[tuple[int, bytes]]:
    """The answers that are not the task (none, when every GetTask was answered right)."""
    return [
        (status, body)
        for status, body in answers
        if status != 200 or json.loads(body).get("result", {}).get("id") != task_id
    ]


@pytest.mark.parametrize("kind", REDIS_STORES)
def test_a_thousand_clients_and_500_streams_on_one_worker(
    kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # gunicorn closes a connection idle for 5 s (its keepalive); opening 1,000 of them one by one can take that
    # long on a busy machine, so this server waits longer: the subject here is the store's connections.
    monkeypatch.setenv("GUNICORN_CMD_ARGS", "--keep-alive 60")
    opened: list[socket.socket] = []

    def close_all() -> None:
        for sock in opened:
            sock.close()

    request.addfinalizer(close_all)
    connections = STREAMS + CLIENTS + 100
    # A store call that finds every connection busy waits up to the Redis timeout for one. 1,000 GetTasks at
    # once on a CPU shared with other test files can take longer than the default 5 s to drain, which would
    # be an overload answer, not the pool defect this test is about (that one refused the 101st client at
    # once); a stuck pool still fails here, as a GetTask unanswered within get_tasks' budget.
    with live_server(
        store_url=store_url(kind),
        workers=1,
        tenants="",
        worker_connections=connections,
        max_streams=STREAMS,
        redis_timeout_seconds=25,
    ) as server:
        task_id = waiting_task(server)
        streams = [Stream(server, task_id) for _ in range(STREAMS)]
        opened.extend(stream.sock for stream in streams)
        assert [s.status for s in streams] == [200] * STREAMS
        clients = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(CLIENTS)]
        opened.extend(clients)
        assert not wrong(
            get_tasks(clients, task_id), task_id
        )  # all at once, each on its own kept-alive connection
        # While all of them stay connected (each round first has every client ask again). A call that waits behind streams or a full pool waits in
        # every round; a round spoilt by a neighbour's CPU use (CI runs other test files beside this one) is
        # not that, so the best of a few rounds must be under 100 ms.
        rounds = []
        for _ in range(ROUNDS):
            assert not wrong(
                get_tasks(clients, task_id), task_id
            )  # each is answered again on the same connection
            probes = probe_seconds(server, task_id)
            rounds.append((statistics.quantiles(probes, n=100)[98], probes))
            print(
                f"{kind}: GetTask p50 {statistics.median(probes) * 1000:.1f} ms, p99 {rounds[-1][0] * 1000:.1f} ms"
            )
            if rounds[-1][0] < 0.1:
                break
        p99, probes = min(rounds, key=lambda r: r[0])
        assert p99 < 0.1, [sorted(r[1])[-5:] for r in rounds]
        assert ready(server) == 200
        for (
            stream
        ) in streams:  # every stream is still open, and has had nothing but keep-alives since its first event
            stream.sock.setblocking(False)
            try:
                more = stream.sock.recv(65536)
            except BlockingIOError:
                continue
            assert more, "a stream was closed"
            assert b": keepalive" in more and b"data:" not in more and b"event:" not in more, more
        refused = Stream(server, task_id)  # one stream more than the cap
        opened.append(refused.sock)
        assert refused.status == 503 and b"STREAM_LIMIT_REACHED" in refused.received, refused.received
        assert "Traceback" not in server.log_text()
