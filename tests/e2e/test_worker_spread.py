"""How new connections spread over a host's gevent workers, and so how many streams a host holds before its
first refusal (issue 27; docs/performance.md, "Spread over workers"). Without ``QUINELING_REUSE_PORT`` the
workers share one listening socket and whichever wakes first accepts; with it each worker listens on a socket
of its own (``SO_REUSEPORT``) and the kernel spreads connections over them by a hash of their addresses. The
figures are printed; the test holds each worker to its own socket and the host to the documented floor."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REDIS_ONLY
from tests.e2e.test_stream_flood import Stream, waiting_task
from tests.support.live import LiveServer, live_server

pytestmark = pytest.mark.slow
WORKERS, CAP = 4, 25
ATTEMPTS = 2 * WORKERS * CAP
FLOOR = 0.6  # of workers × cap, open before the first refusal (docs/performance.md says what was measured)


def sockets_of(pid: str) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def per_worker(server: LiveServer) -> tuple[set[str], Counter[str]]:
    """The listening sockets on the server's port that its workers hold, and each worker's connections from
    clients (by pid)."""
    workers = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    owner = {inode: pid for pid in workers for inode in sockets_of(pid)}
    listening: set[str] = set()
    connected: Counter[str] = Counter()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], fields[9]
        if local_port == server.port and inode in owner:
            if state == "0A":
                listening.add(inode)
            else:
                connected[owner[inode]] += 1
    return listening, connected


def fill(server: LiveServer) -> tuple[int, int, list[int]]:
    """Streams opened until the first refusal, streams open after every attempt, and the connections of each
    worker then (refused ones still closing among them)."""
    task_id = waiting_task(server)
    opened: list[Stream] = []
    first_refusal = 0
    try:
        for _ in range(ATTEMPTS):
            stream = Stream(server, task_id)
            if stream.status == 200:
                opened.append(stream)
            else:
                stream.close()
                first_refusal = first_refusal or len(opened)
        _, connected = per_worker(server)
        return first_refusal or len(opened), len(opened), sorted(connected.values(), reverse=True)
    finally:
        for stream in opened:
            stream.close()


@pytest.mark.parametrize("reuse_port", [False, True], ids=["shared-socket", "reuse-port"])
@REDIS_ONLY
def test_how_a_host_spreads_streams_over_its_workers(redis_store_url: str, reuse_port: bool) -> None:
    with live_server(
        store_url=redis_store_url,
        workers=WORKERS,
        tenants="",
        max_streams=CAP,
        reuse_port=int(reuse_port),
    ) as server:
        listening, _ = per_worker(server)
        # With reuse_port each worker accepts on a socket of its own; else all on the master's, inherited.
        assert len(listening) == (WORKERS if reuse_port else 1), listening
        first_refusal, held, spread = fill(server)
    print(
        f"reuse_port={reuse_port}: first refusal after {first_refusal} of {WORKERS * CAP} streams "
        f"({first_refusal / (WORKERS * CAP):.0%}); {held} open after {ATTEMPTS} attempts; per worker {spread}"
    )
    assert held <= WORKERS * CAP  # each worker's cap holds
    assert first_refusal >= FLOOR * WORKERS * CAP
    if reuse_port:
        assert len(spread) == WORKERS  # every worker took some
