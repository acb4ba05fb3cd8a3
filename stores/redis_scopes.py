"""The Redis backend's scope registry (:mod:`stores.scopes`): one sorted set of leases, admitted by one
EVALSHA of ``lua/scope_admit.lua``, which also deletes a reclaimed scope's keys in the same step.

The registry key has a tag of its own, so a reclaim touches two slots: it runs on a single Redis server (as
this backend does); on a Redis Cluster it would need the registry and the reclaim split into two steps."""

from __future__ import annotations

from stores import keys
from stores.redis_changes import text
from stores.redis_connection import Connection
from stores.scopes import Admission, Clock, ScopeLimits, ScopeRegistry


class RedisScopeRegistry(ScopeRegistry):
    def __init__(self, conn: Connection, prefix: str, limits: ScopeLimits, clock: Clock | None) -> None:
        super().__init__(limits, clock)
        self._conn = conn
        self._prefix = prefix
        self._key = keys.scope_registry(prefix)
        # Repeatable: a repeat cannot double anything. Once a first run admitted the scope (registered it, or
        # reclaimed a place for it), the scope is registered, and a repeat only renews it with the same time;
        # a run that refused changed nothing.
        self._script = conn.script("scope_admit", repeatable=True)

    def _admit(self, scope: str, now: float, victim: str) -> Admission:
        victim_keys = keys.partition_keys(self._prefix, victim) if victim else []
        script_keys = [self._key, keys.registry(self._prefix), *victim_keys]
        args = [scope, repr(now), repr(self._cutoff(now)), self.limits.max_scopes, victim]
        reply = self._script(script_keys, args)
        outcome = text(reply[0])
        if outcome == "ok":
            return Admission(True)
        if outcome == "reclaimed":
            return Admission(True, reclaimed=text(reply[1]))
        return Admission(False, text(reply[1]), float(text(reply[2])))

    def live(self) -> dict[str, float]:
        pairs = self._conn.command("zrange", self._key, 0, -1, withscores=True, repeatable=True)  # a read
        return {text(member): float(score) for member, score in pairs}
