"""Interop tests: official, independent A2A client SDKs against a real gunicorn server.

The SDKs are optional locally (the tests skip when they are not installed) and required in CI:
with ``QUINELING_REQUIRE_INTEROP`` set, a missing SDK fails the test instead of skipping it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NoReturn

import pytest

from tests.conftest import ON_CLUSTER, cluster_url
from tests.support.live import LiveServer, live_server
from tests.support.tools import REQUIRE_INTEROP, unavailable


def sdk_unavailable(reason: str) -> NoReturn:
    """Skip, unless CI asked for interop to be mandatory (QUINELING_REQUIRE_INTEROP), then fail."""
    unavailable(reason, REQUIRE_INTEROP)


@pytest.fixture(
    scope="module",
    params=["memory", pytest.param("cluster", marks=ON_CLUSTER)],
)
def server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """One real server per test module and store: the memory store with one worker (the memory store is one
    process), and a three-master Redis Cluster with two workers (docs/cluster.md)."""
    if request.param == "cluster":
        with live_server(store_url=cluster_url(), workers=2) as live:
            yield live
        return
    with live_server(store_url="memory://", workers=1) as live:
        yield live
