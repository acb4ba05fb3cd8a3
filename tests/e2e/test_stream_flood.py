"""A real server with the default settings (gevent workers) under many open streams and clients that never
finish their headers: other requests are still answered within a second, the stream cap refuses with 503 and
``Retry-After``, and a client that hangs up (or a worker that stops) frees its stream within a second or two
(docs/deployment.md, "Worker model"). Memory × 1 worker, and Redis and the Redis Cluster × 4 workers;
loopback only, every loop bounded."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.cluster import RedisCluster

from stores.redis.connection import make_client
from tests.conftest import LIVE_STORES, store_url
from tests.support.live import LiveServer, live_server

pytestmark = pytest.mark.slow
STREAMS, SLOW_CLIENTS = 200, 50


# The cluster runs the cap test below (the XREADs' connections); this one is about the worker model.
@pytest.fixture(params=LIVE_STORES[:2])
def store(request: pytest.FixtureRequest) -> tuple[str, int]:
    return store_url(request.param), 1 if request.param == "memory" else 4


def rpc(server: LiveServer, method: str, params: dict[str, Any], timeout: float = 5) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(
            b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    reply: dict[str, Any] = json.loads(received.partition(b"\r\n\r\n")[2])
    return reply


def waiting_task(server: LiveServer) -> str:
    """A task waiting for input: a blank thought asks for clarification."""
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "   "}]}
    task = rpc(server, "SendMessage", {"message": message})["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id: str = task["id"]
    return task_id


def slow_header_client(server: LiveServer) -> socket.socket:
    """The issue's repro: part of a request line, and never the rest."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(b"GET / HTTP/1.1\r\n")
    return sock


class Stream:
    """A raw REST SubscribeToTask: the status line, headers, and the events as they arrive."""

    def __init__(self, server: LiveServer, task_id: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        self.sock.sendall(
            f"GET /a2a/rest/tasks/{task_id}:subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "A2A-Version: 1.0\r\n\r\n".encode()
        )
        self.received = b""
        self.ended = False
        while b"\r\n\r\n" not in self.received and self._read():
            pass
        head = self.received.partition(b"\r\n\r\n")[0].decode()
        self.status = int(head.split()[1])
        self.headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in head.split("\r\n")[1:])}
        if self.status == 200:
            self.wait_for(b"data:")
        else:  # a refusal: read its whole JSON body
            length = int(self.headers["content-length"])
            while len(self.received.partition(b"\r\n\r\n")[2]) < length and self._read():
                pass

    def _read(self) -> bool:
        chunk = self.sock.recv(65536)
        self.received += chunk
        self.ended = self.ended or not chunk
        return bool(chunk)

    def wait_for(self, marker: bytes, seconds: float = 10) -> None:
        deadline = time.monotonic() + seconds
        while marker not in self.received:
            assert time.monotonic() < deadline and self._read(), f"no {marker!r} in {self.received[-300:]!r}"

    def body(self) -> Any:
        return json.loads(self.received.partition(b"\r\n\r\n")[2])

    def close(self) -> None:
        self.sock.close()


def get_task_seconds(server: LiveServer, task_id: str) -> float:
    start = time.monotonic()
    assert rpc(server, "GetTask", {"id": task_id})["result"]["id"] == task_id
    return time.monotonic() - start


def local_ports(server: LiveServer) -> set[int]:
    """The local TCP ports of the server's worker processes' sockets (their Redis connections among them)."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    inodes: set[str] = set()
    for pid in children:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except FileNotFoundError:  # closed since the listing
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    ports: set[int] = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] in inodes:
            ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def blocked_reads(server: LiveServer) -> int:
    """The server's Redis connections blocked in a command (the streams' XREADs), on every node of a cluster.
    Connections are told apart by their ports, as other tests may share the Redis server or the cluster."""
    client = make_client(server.store_url, socket_timeout=5.0)
    try:
        if isinstance(client, RedisCluster):
            by_node = client.client_list(target_nodes=RedisCluster.PRIMARIES)
            listed = [entry for entries in by_node.values() for entry in entries]
        else:
            listed = client.client_list()
    finally:
        client.close()
    ports = local_ports(server)
    return sum(
        1
        for c in listed
        if int(c["addr"].rsplit(":", 1)[1]) in ports and "b" in c["flags"] and c["cmd"] == "xread"
    )


def within(seconds: float, condition: Callable[[], bool]) -> float:
    start = time.monotonic()
    while not condition():
        elapsed = time.monotonic() - start
        assert elapsed < seconds, f"not within {seconds} s"
        time.sleep(0.02)
    return time.monotonic() - start


@pytest.fixture
def closing() -> Iterator[list[Any]]:
    opened: list[Any] = []
    yield opened
    for item in opened:
        item.close()


def test_streams_and_slow_header_clients_leave_get_task_answering(
    store: tuple[str, int], closing: list[Any]
) -> None:
    store_url, workers = store
    with live_server(store_url=store_url, workers=workers, tenants="") as server:
        task_id = waiting_task(server)
        closing.extend(slow_header_client(server) for _ in range(SLOW_CLIENTS))
        assert get_task_seconds(server, task_id) < 1.0
        streams = [Stream(server, task_id) for _ in range(STREAMS)]
        closing.extend(streams)
        assert [s.status for s in streams] == [200] * STREAMS
        assert all(b'"TASK_STATE_INPUT_REQUIRED"' in s.received for s in streams)
        latencies = [get_task_seconds(server, task_id) for _ in range(20)]
        assert max(latencies) < 1.0, latencies
        # The streams are live: a cancel reaches every one of them, and each then ends.
        assert (
            rpc(server, "CancelTask", {"id": task_id})["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        )
        for stream in streams:
            stream.wait_for(b'"TASK_STATE_CANCELED"')
        # A slow-header client gets no thread or greenlet for long: gunicorn closes it (keepalive, 5 s).
        for sock in closing[:SLOW_CLIENTS]:
            sock.settimeout(10)
            try:
                assert sock.recv(65536) == b""
            except ConnectionResetError:
                pass
        assert "Traceback" not in server.log_text()


def test_the_stream_cap_refuses_with_503_and_a_hung_up_client_frees_its_slot(closing: list[Any]) -> None:
    with live_server(store_url="memory://", workers=1, tenants="", max_streams=20) as server:
        task_id = waiting_task(server)
        streams = [Stream(server, task_id) for _ in range(20)]
        closing.extend(streams)
        assert [s.status for s in streams] == [200] * 20
        refused = Stream(server, task_id)
        closing.append(refused)
        assert refused.status == 503 and refused.headers["retry-after"] == "5"
        assert refused.body()["error"]["status"] == "UNAVAILABLE"
        assert get_task_seconds(server, task_id) < 1.0
        # Ten clients hang up without a word; their slots are free long before a keep-alive write (15 s).
        for stream in streams[:10]:
            stream.close()
        reopened: list[Stream] = []

        def ten_more() -> bool:
            attempt = Stream(server, task_id)
            (reopened if attempt.status == 200 else closing).append(attempt)
            return len(reopened) == 10

        assert within(2.5, ten_more) < 2.5
        closing.extend(reopened)
        beyond = Stream(server, task_id)
        beyond.close()
        assert beyond.status == 503  # and the cap holds again


def test_the_cap_is_per_worker_and_a_gone_client_ends_its_blocking_read(
    redis_store_url: str, closing: list[Any]
) -> None:
    per_worker, workers = 5, 4
    with live_server(
        store_url=redis_store_url, workers=workers, tenants="", max_streams=per_worker
    ) as server:
        task_id = waiting_task(server)
        accepted: list[Stream] = []
        refusals = 0
        for _ in range(120):  # bounded: the kernel spreads the connections over the workers
            stream = Stream(server, task_id)
            if stream.status == 200:
                accepted.append(stream)
            else:
                assert stream.status == 503 and stream.headers["retry-after"] == "5"
                stream.close()
                refusals += 1
            if len(accepted) == per_worker * workers:
                break
        closing.extend(accepted)
        if len(accepted) == per_worker * workers:
            # The connections happened to spread evenly: every worker is at its cap, so any one refuses.
            beyond = Stream(server, task_id)
            beyond.close()
            assert beyond.status == 503 and beyond.headers["retry-after"] == "5"
            refusals += 1
        assert per_worker <= len(accepted) <= per_worker * workers and refusals > 0
        assert within(3, lambda: blocked_reads(server) == len(accepted))
        assert get_task_seconds(server, task_id) < 1.0
        for stream in accepted:
            stream.close()
        # Every stream's XREAD has ended (its connection is back in the pool) within about a poll slice.
        assert within(2.5, lambda: blocked_reads(server) == 0) < 2.5


def test_a_stopping_worker_ends_its_streams_at_once(closing: list[Any]) -> None:
    with live_server(store_url="memory://", workers=1, tenants="") as server:
        task_id = waiting_task(server)
        streams = [Stream(server, task_id) for _ in range(20)]
        closing.extend(streams)
        start = time.monotonic()
        os.kill(server.pid, signal.SIGTERM)
        for stream in streams:  # each ends cleanly, with its chunked body's last chunk (then resubscribes)
            stream.wait_for(b"\r\n0\r\n\r\n", seconds=3)
        assert time.monotonic() - start < 3
        # The server is gone once the idle connections are (keepalive, 5 s), not after graceful_timeout (30 s).
        within(12, lambda: exited(server.pid))


def exited(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
