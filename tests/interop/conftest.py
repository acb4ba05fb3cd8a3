"""Interop tests: official, independent A2A client SDKs against a real gunicorn server.

The SDKs are optional locally (the tests skip when they are not installed) and required in CI:
with ``QUINELING_REQUIRE_INTEROP`` set, a missing SDK fails the test instead of skipping it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NoReturn

import pytest

from tests.support.live import LiveServer, live_server


def sdk_unavailable(reason: str) -> NoReturn:
    """Skip, unless CI asked for interop to be mandatory (QUINELING_REQUIRE_INTEROP), then fail."""
    if os.environ.get("QUINELING_REQUIRE_INTEROP"):
        pytest.fail(f"QUINELING_REQUIRE_INTEROP is set but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    """One real server per test module: memory store, one worker (the memory store is one process)."""
    with live_server(store_url="memory://", workers=1) as live:
        yield live
