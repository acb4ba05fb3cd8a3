"""The Redis backend's scope registry (:mod:`stores.scopes`): one sorted set of leases, the deployment's one
registry of scopes, in a slot of its own (``stores/redis/keys.py`` ``scope_registry``).

No script touches the registry and a scope's keys together, so every step stays in one cluster slot. A
reclaim is therefore three steps, each atomic in its slot:

1. *claim* (``lua/scope_admit.lua``, the registry's slot): the idle victim's lease is replaced by a claim that
   ends :data:`CLAIM_SECONDS` later; while it lasts the victim is refused, retryably, and nobody else claims it;
2. *delete* every fixed key of the victim's partition (one DEL, the victim's slot: repeating it is harmless);
3. *finish* (``lua/scope_reclaimed.lua``, the registry's slot): the victim leaves the registry if the claim is
   still this one, and the new scope takes the place.

Consistency rule: a scope is in the registry from before its first write until its keys are gone. A reclaimer
that stops between 1 and 3 leaves a claim that lapses; the next admission that finds it claims the victim
again and finishes the job (deleting again is harmless). The one assumption is the one the single-step reclaim
made about renewals, with a bound: a reclaimer does not stall for longer than :data:`CLAIM_SECONDS` between its
claim and its delete (see docs/cluster.md).
"""

from __future__ import annotations

from stores.redis import keys
from stores.redis.changes import text
from stores.redis.connection import Connection
from stores.scopes import Admission, Clock, ScopeLimits, ScopeRegistry

CLAIM_SECONDS = 30.0  # how long a claimed victim is refused while its reclaimer deletes it


class RedisScopeRegistry(ScopeRegistry):
    def __init__(self, conn: Connection, prefix: str, limits: ScopeLimits, clock: Clock | None) -> None:
        super().__init__(limits, clock)
        self._conn = conn
        self._prefix = prefix
        self._key = keys.scope_registry(prefix)
        # Repeatable: a repeat cannot double anything. Once a first run admitted the scope, a repeat only
        # renews it with the same time; a first claim is found again by its repeat (the claim has not ended,
        # so the repeat answers 'busy' or claims nothing new); a finish repeated finds its work done.
        self._claim = conn.script("scope_admit", repeatable=True)
        self._finish = conn.script("scope_reclaimed", repeatable=True)

    def _admit(self, scope: str, now: float, victim: str) -> Admission:
        cutoff = self._cutoff(now)
        args = [scope, repr(now), repr(cutoff), self.limits.max_scopes, victim, repr(now + CLAIM_SECONDS)]
        reply = self._claim([self._key], args)
        outcome = text(reply[0])
        if outcome == "ok":
            return Admission(True)
        if outcome == "busy":  # this scope is being reclaimed: it may write again once the claim ends
            return Admission(False, scope, float(text(reply[1])) - self.limits.idle_seconds)
        if outcome == "full":
            return Admission(False, text(reply[1]), float(text(reply[2])))
        claimed, claim = text(reply[1]), text(reply[2])
        # One DEL in the victim's slot (redis-py's cluster delete() would split it into a pipeline per key).
        victim_keys = [*keys.partition_keys(self._prefix, claimed), *keys.retired_keys(self._prefix, claimed)]
        self._conn.command("execute_command", "DEL", *victim_keys, repeatable=True)
        finished = self._finish([self._key], [claimed, claim, scope, repr(now), self.limits.max_scopes])
        if text(finished[0]) != "ok":  # another writer took the freed place first
            return self._admit(scope, now, "")
        return Admission(True, reclaimed="" if claimed == scope else claimed)

    def live(self) -> dict[str, float]:
        pairs = self._conn.command("zrange", self._key, 0, -1, withscores=True, repeatable=True)  # a read
        return {text(member): float(score) for member, score in pairs}
