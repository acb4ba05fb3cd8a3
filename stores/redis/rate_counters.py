"""The rate-limit counters on Redis: one EVALSHA of ``lua/rate_hit.lua`` per request, for all its windows."""

from __future__ import annotations

from collections.abc import Sequence

from stores.rate_counters import RateCounter, Window, WindowCount
from stores.redis import keys
from stores.redis.connection import Connection


class RedisRateCounter(RateCounter):
    """Counters under ``<prefix>:rate:{identity}:<window>``: one hash tag per identity, so one request's
    windows are one slot and one atomic script."""

    def __init__(self, connection: Connection, prefix: str) -> None:
        self._prefix = prefix
        # Not repeatable: a repeat after a lost reply would count the request twice.
        self._hit = connection.script("rate_hit", repeatable=False)

    def hit(self, identity: str, windows: Sequence[Window]) -> list[WindowCount]:
        reply = self._hit(
            [keys.rate_window(self._prefix, identity, window.name) for window in windows],
            [window.seconds for window in windows],
        )
        return [WindowCount(int(reply[i]), max(0, int(reply[i + 1])) / 1000) for i in range(0, len(reply), 2)]
