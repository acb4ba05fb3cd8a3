"""Retention through real gunicorn workers over HTTP, on the memory store (1 worker) and on Redis and the Redis
Cluster (2 workers, requests alternating between them): with three records of a two-second lifetime, a fourth run is refused
with the time the oldest frees a slot, and a run at that time succeeds again — on whichever worker."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from tests.conftest import LIVE_STORES, store_url
from tests.support.http_bindings import BINDINGS
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM, data, result_of, runtime_outcome, user_message

pytestmark = pytest.mark.slow
TTL, LIMIT = 2, 3
FREES = re.compile(r"the oldest entry frees a slot at (\S+) \(in (\d+) s\)$")


@pytest.fixture(scope="module", params=LIVE_STORES)
def server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    kind = request.param
    with live_server(
        store_url=store_url(kind),
        workers=1 if kind == "memory" else 2,  # the memory store is one process's
        threads=2,
        max_records=LIMIT,
        record_ttl_seconds=TTL,
    ) as live:
        yield live


def test_a_full_store_accepts_again_when_the_oldest_record_lapses(server: LiveServer) -> None:
    binding = BINDINGS["jsonrpc"](server, tenant="retention")
    created = binding.send(user_message(data({"operation": "create", "thought": SQUARE_SUM})))
    run = user_message(
        data({"operation": "run", "artifactId": result_of(created)["result"]["artifact"]["id"]})
    )
    first = time.time()
    for _ in range(LIMIT):
        assert runtime_outcome(binding.send(run))[0] == "ok"
    kind, error = runtime_outcome(binding.send(run))
    assert kind == "error" and error["code"] == "resource-limit", error
    assert error["message"].startswith(f"capacity reached: records is limited to {LIMIT} (max_records); ")
    match = FREES.search(error["message"])
    assert match, error["message"]
    frees = datetime.fromisoformat(match[1].replace("Z", "+00:00")).timestamp()
    assert first <= frees - TTL <= time.time() and int(match[2]) <= TTL  # when the first run's record lapses
    time.sleep(max(0.0, frees - time.time()) + 0.05)
    assert runtime_outcome(binding.send(run))[0] == "ok"  # its slot, given back inside this commit
