"""Start-up and shutdown under real gunicorn (docs/deployment.md, "Start-up and shutdown"): the one-line
banner, a store that cannot be reached at start-up (reported, /readyz 503, recovered by itself), and SIGTERM
with a request in flight (it completes) and an open stream (it ends cleanly, long before graceful_timeout)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
import requests

from tests.conftest import ON_CLUSTER
from tests.e2e.test_stream_flood import Stream, exited, waiting_task, within
from tests.support import redis_cluster
from tests.support.live import free_port, live_server
from tests.support.redis_server import REDIS_SERVER, needs_redis_server

pytestmark = pytest.mark.slow
PASSWORD = "hunter2-" + uuid.uuid4().hex
GRACEFUL_TIMEOUT = 30  # quineling.server.options.gunicorn_options


def banner_lines(log: str) -> list[str]:
    """The banner's text, from a text log line or from a JSON one's ``event`` (the log format is ``auto``: JSON
    when the output is not a terminal, as under the tests)."""
    texts = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        texts.append(str(entry.get("event", "")) if isinstance(entry, dict) else line)
    return [text for text in texts if "quineling " in text and " serving " in text]


@pytest.fixture
def redis_port() -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    """A port where nothing listens yet, and the redis-server processes a test starts there (stopped after)."""
    started: list[subprocess.Popen[bytes]] = []
    yield free_port(), started
    for proc in started:
        proc.kill()
        proc.wait(timeout=10)


@needs_redis_server
def test_a_store_unreachable_at_start_up_is_reported_and_recovered_from(
    redis_port: tuple[int, list[subprocess.Popen[bytes]]],
) -> None:
    port, started = redis_port
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    with live_server(
        store_url=url, workers=2, ready_path="/healthz", redis_connect_timeout_seconds=0.5
    ) as server:
        # Reported once, by the master, with the URL's password removed.
        log = server.log_text()
        (line,) = banner_lines(log)
        assert f"| store redis://:***@127.0.0.1:{port}/0 |" in line
        assert "| workers 2×gevent" in line
        errors = [entry for entry in log.splitlines() if "cannot be reached at start-up" in entry]
        assert len(errors) == 1 and "ConnectionRefusedError" in errors[0], log
        # The workers serve: alive, not ready, and a request that needs the store is the retryable 503.
        assert requests.get(server.url("/healthz"), timeout=5).status_code == 200
        ready = requests.get(server.url("/readyz"), timeout=5)
        assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
        listing = requests.get(server.url("/a2a/rest/tasks"), headers={"A2A-Version": "1.0"}, timeout=5)
        assert listing.status_code == 503 and listing.json()["error"]["status"] == "UNAVAILABLE"
        # The store comes up: the server is ready by itself, no restart.
        assert REDIS_SERVER is not None
        started.append(
            subprocess.Popen(
                [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--requirepass", PASSWORD],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        )  # fmt: skip

        def ready_now() -> bool:
            return requests.get(server.url("/readyz"), timeout=5).status_code == 200

        within(10, ready_now)
        listing = requests.get(server.url("/a2a/rest/tasks"), headers={"A2A-Version": "1.0"}, timeout=5)
        assert listing.status_code == 200
        assert PASSWORD not in server.log_text()  # nowhere in the log, master's or workers'


@pytest.fixture
def private_cluster() -> Iterator[redis_cluster.LocalCluster]:
    """A three-master cluster on free ports, not started yet (stopped and removed after)."""
    cluster = redis_cluster.LocalCluster(redis_cluster.free_ports(3))
    yield cluster
    cluster.stop()


@needs_redis_server  # the private cluster's nodes
@pytest.mark.parametrize("_", [pytest.param("cluster", marks=ON_CLUSTER)])
def test_a_cluster_unreachable_at_start_up_is_reported_and_recovered_from(
    private_cluster: redis_cluster.LocalCluster, _: str
) -> None:
    """As above on a Redis Cluster, whose client reads the slot map when it is made: the workers start anyway
    (they used to die at boot), and a cluster that goes away entirely later is the retryable 503 again."""
    url = private_cluster.url
    with live_server(
        store_url=url,
        workers=2,
        ready_path="/healthz",
        redis_connect_timeout_seconds=0.5,
        forget_keys=False,  # the cluster is stopped at the end, and removed after
    ) as server:
        log = server.log_text()
        (line,) = banner_lines(log)
        assert f"| store {url} |" in line
        errors = [entry for entry in log.splitlines() if "cannot be reached at start-up" in entry]
        assert len(errors) == 1 and "ConnectionRefusedError" in errors[0], log
        ready = requests.get(server.url("/readyz"), timeout=10)
        assert ready.status_code == 503 and ready.json()["status"] == "unavailable"
        listing = requests.get(server.url("/a2a/rest/tasks"), headers={"A2A-Version": "1.0"}, timeout=10)
        assert listing.status_code == 503 and listing.json()["error"]["status"] == "UNAVAILABLE"

        private_cluster.ensure()

        def ready_now() -> bool:
            return requests.get(server.url("/readyz"), timeout=10).status_code == 200

        within(30, ready_now)
        listing = requests.get(server.url("/a2a/rest/tasks"), headers={"A2A-Version": "1.0"}, timeout=10)
        assert listing.status_code == 200
        # Every node gone: the client's reread of the slot map finds none, which is the retryable 503 too.
        for port in private_cluster.ports:
            private_cluster.kill(port)
        listing = requests.get(server.url("/a2a/rest/tasks"), headers={"A2A-Version": "1.0"}, timeout=30)
        assert listing.status_code == 503 and listing.json()["error"]["status"] == "UNAVAILABLE"
        assert "Traceback" not in server.log_text()


def test_the_banner_then_sigterm_finishes_the_request_in_flight_and_ends_open_streams_cleanly() -> None:
    with live_server(
        store_url="memory://", workers=1, tenants="", rate_limit="20/second;600/minute"
    ) as server:
        (line,) = banner_lines(server.log_text())  # the master's, once; not one per worker
        assert f"serving http://127.0.0.1:{server.port} on 127.0.0.1:{server.port}" in line
        assert "| store memory:// | workers 1×gevent (1000 connections/worker) |" in line
        assert line.endswith("| auth anonymous (loopback only) | rate limit 20/second;600/minute")
        assert line.split("quineling ", 1)[1].split()[0] not in ("", "unknown")  # the installed version
        task_id = waiting_task(server)
        stream = Stream(server, task_id)
        # A request in flight: its headers and half its body are in when the worker is told to stop.
        body = json.dumps(
            {"jsonrpc": "2.0", "id": "in-flight", "method": "GetTask", "params": {"id": task_id}}
        ).encode()
        request = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        request.sendall(
            b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"A2A-Version: 1.0\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:20]
        )
        time.sleep(0.5)  # the worker has accepted it and waits for the rest of the body
        start = time.monotonic()
        os.kill(server.pid, signal.SIGTERM)
        # The open stream ends with its chunked body's last chunk — a clean end its client reconnects after.
        stream.wait_for(b"\r\n0\r\n\r\n", seconds=3)
        assert time.monotonic() - start < 3
        while not stream.ended:  # and its connection closes right after, not at the keep-alive timeout
            stream._read()
        assert time.monotonic() - start < 3
        time.sleep(0.5)
        request.sendall(body[20:])
        answer = b""
        while chunk := request.recv(65536):
            answer += chunk
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), answer
        assert b"\r\nconnection: close" in head.lower()  # and then the worker closes the connection
        reply = json.loads(payload)
        assert reply["id"] == "in-flight" and reply["result"]["id"] == task_id
        request.close()
        stream.close()
        # Nothing holds the worker now: gone within seconds, far from graceful_timeout.
        within(5, lambda: exited(server.pid))
        assert time.monotonic() - start < GRACEFUL_TIMEOUT / 4
