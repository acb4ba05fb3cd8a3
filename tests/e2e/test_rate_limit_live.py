"""Rate limits under real gunicorn on real Redis: three worker processes share one budget exactly — of
N + k concurrent requests, exactly N pass and k get the 429, whichever workers serve them."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.e2e.client import traced_server
from tests.support.http_bindings import TAG_HEADER
from tests.support.live import live_server

pytestmark = pytest.mark.slow
BUDGET, EXTRA, WORKERS = 20, 12, 3


def test_concurrent_requests_over_three_workers_get_exactly_the_budget(redis_store_url: str) -> None:
    """Half the requests go to a second master on the same store prefix, so the budget is shared across
    processes by construction (which worker of one master takes a connection is the kernel's choice)."""
    with (
        traced_server(store_url=redis_store_url, workers=WORKERS, rate_limit=f"{BUDGET}/minute") as server,
        live_server(share_with=server, rate_limit=f"{BUDGET}/minute") as other,
    ):
        tags = [uuid.uuid4().hex for _ in range(BUDGET + EXTRA)]

        def get(index: int) -> requests.Response:
            host = (server, other)[index % 2]
            return requests.get(
                host.url("/a2a/rest/tasks"),
                headers={"A2A-Version": "1.0", TAG_HEADER: tags[index], "Connection": "close"},
                timeout=30,
            )

        with ThreadPoolExecutor(max_workers=len(tags)) as pool:
            responses = list(pool.map(get, range(len(tags))))
        codes = [response.status_code for response in responses]
        assert codes.count(200) == BUDGET and codes.count(429) == EXTRA, codes
        refused = [r for r in responses if r.status_code == 429]
        assert all(
            r.json()["error"]["status"] == "RESOURCE_EXHAUSTED" and r.headers["Retry-After"] for r in refused
        )
        remaining = sorted(int(r.headers["RateLimit-Remaining"]) for r in responses if r.status_code == 200)
        assert remaining == list(range(BUDGET))  # each allowed request saw its own count
