"""A private ``redis-server`` on a free loopback port that a test may kill, pause and restart.

Never the shared Redis of ``QUINELING_TEST_REDIS_URL``: outage tests stop their own server only.

    with private_redis(aof=True) as server:
        backend = RedisBackend(server.url)
        server.kill(); server.start()      # same port, same data directory
        with server.paused(): time.sleep(2) # SIGSTOP, then SIGCONT
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest
import redis

from tests.support.live import free_port

_T = TypeVar("_T")

REDIS_SERVER = shutil.which("redis-server")
# Marked `redis` too, so a CI run that requires the real-Redis suites (QUINELING_REQUIRE_REDIS) fails when
# the binary is missing instead of skipping these quietly.
REDIS_SERVER_MARKS = [
    pytest.mark.redis,
    pytest.mark.skipif(
        REDIS_SERVER is None, reason="needs the redis-server binary to start a private server"
    ),
]


def wait_for_ping(probe: redis.Redis, timeout: float, alive: Callable[[], None] = lambda: None) -> None:
    """Ping ``probe`` until it answers (then close it); ``alive`` is called between tries, to fail at once
    when the server's process has exited. The last error propagates once ``timeout`` has passed."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            alive()
            try:
                if probe.ping():
                    return
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
    finally:
        probe.close()


def needs_redis_server(test: _T) -> _T:
    """Decorator: the test starts a private ``redis-server`` (see :data:`REDIS_SERVER_MARKS`)."""
    for mark in REDIS_SERVER_MARKS:
        test = mark(test)
    return test


class PrivateRedis:
    def __init__(self, directory: Path, *, aof: bool) -> None:
        self.port = free_port()
        self.directory = directory
        self.aof = aof
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start (again) on the same port and data directory; returns once it answers PING (after loading
        its append-only file)."""
        assert REDIS_SERVER is not None
        durability = (
            ["--appendonly", "yes", "--appendfsync", "always"] if self.aof else ["--appendonly", "no"]
        )
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--dir"]
        self.proc = subprocess.Popen(
            [*args, str(self.directory), *durability, "--daemonize", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 10.0) -> None:
        probe = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=0.5, socket_connect_timeout=0.5)
        wait_for_ping(probe, timeout)

    def kill(self) -> None:
        """SIGKILL: the server dies at once, its clients' sockets are closed by the kernel."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc = None

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """SIGSTOP while the block runs (connections stay open, nothing answers), then SIGCONT."""
        self.signal(signal.SIGSTOP)
        try:
            yield
        finally:
            self.signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process does not act on SIGKILL's cleanup
            self.kill()


@contextmanager
def private_redis(*, aof: bool = False) -> Iterator[PrivateRedis]:
    """A started private server; stopped and its directory removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="quineling-redis-"))
    server = PrivateRedis(directory, aof=aof)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)
