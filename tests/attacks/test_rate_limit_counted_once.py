"""Issue 26, item 4: a request refused by the rate limit is counted once, whichever path reads it. With
``2/second;10/minute``, six calls within a second (two allowed, four refused) and one more 1.2 s later leave the
minute's budget at seven of ten: the last call is allowed, with the lean path on as with it off."""

from __future__ import annotations

import time

import pytest
import requests

from tests.attacks.wire import get_task
from tests.support.live import live_server

pytestmark = pytest.mark.slow
HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


@pytest.mark.parametrize("keep_alive", [True, False], ids=["one-connection", "new-connections"])
@pytest.mark.parametrize("lean", [1, 0], ids=["lean", "flask"])
def test_refusals_are_counted_once(lean: int, keep_alive: bool) -> None:
    with (
        live_server(rate_limit="2/second;10/minute", lean_jsonrpc=lean) as server,
        requests.Session() as session,
    ):
        post = session.post if keep_alive else requests.post
        url = server.url("/a2a/jsonrpc")
        second = time.monotonic()
        statuses = [post(url, data=get_task(), headers=HEADERS, timeout=5).status_code for _ in range(6)]
        assert time.monotonic() - second < 1
        assert statuses.count(200) >= 2 and statuses.count(429) >= 3
        time.sleep(1.2)
        last = post(url, data=get_task(), headers=HEADERS, timeout=5)
        assert last.status_code == 200, last.text
        assert last.headers["RateLimit-Policy"] == "2;w=1, 10;w=60"
