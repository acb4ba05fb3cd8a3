"""The memory backend's retention index for one scope: expiry times, owners and what each document holds.

Expiry times sit in a heap as well as a dict, so a commit finds the documents that lapsed in O(lapsed ·
log n) rather than by looking at every document, as the Redis backend's sorted set does. Extending an expiry
pushes a new heap entry and leaves the old one behind (skipped when popped); the heap is rebuilt once stale
entries outnumber live ones, so it stays O(documents with an expiry).
"""

from __future__ import annotations

import heapq

from stores.changes import Key


class ScopeLeases:
    def __init__(self) -> None:
        self.expiries: dict[Key, float] = {}
        self.owners: dict[Key, Key] = {}  # owned document → its owner
        self.dependents: dict[Key, set[Key]] = {}  # owner → the documents it owns
        self.holds: dict[Key, dict[str, int]] = {}
        self._heap: list[tuple[float, Key]] = []

    def set_expiry(self, key: Key, at: float) -> None:
        self.expiries[key] = at
        heapq.heappush(self._heap, (at, key))
        if len(self._heap) > 2 * len(self.expiries) + 64:
            self._heap = [(when, k) for k, when in self.expiries.items()]
            heapq.heapify(self._heap)

    def extend(self, key: Key, at: float) -> None:
        """Move an existing expiry to at least ``at``; a document without one is left alone."""
        current = self.expiries.get(key)
        if current is not None and at > current:
            self.set_expiry(key, at)

    def set_owner(self, key: Key, owner: Key) -> None:
        self.owners[key] = owner
        self.dependents.setdefault(owner, set()).add(key)

    def clear(self, key: Key) -> None:
        """Forget ``key``'s own lease (expiry, owner, holds); what it owns stays owned by it."""
        self.expiries.pop(key, None)  # its heap entry is skipped when popped
        owner = self.owners.pop(key, None)
        if owner is not None:
            owned = self.dependents.get(owner)
            if owned is not None:
                owned.discard(key)
                if not owned:
                    del self.dependents[owner]
        self.holds.pop(key, None)

    def due(self, now: float) -> list[Key]:
        """Documents whose own expiry is at or before ``now``, earliest first."""
        lapsed: list[Key] = []
        while self._heap and self._heap[0][0] <= now:
            at, key = heapq.heappop(self._heap)
            if self.expiries.get(key) == at and key not in lapsed:
                lapsed.append(key)
        return lapsed

    def alive(self, key: Key, now: float, present: set[Key] | dict[Key, str]) -> bool:
        """Whether a stored ``key`` is still retained: its expiry is later than ``now``, or its owner is
        stored and alive."""
        at = self.expiries.get(key)
        if at is not None:
            return at > now
        owner = self.owners.get(key)
        if owner is not None:
            return owner in present and self.alive(owner, now, present)
        return True

    def holds_some(self, key: Key, name: str) -> bool:
        """Whether ``key``, or anything it owns, holds some of counter ``name``."""
        if self.holds.get(key, {}).get(name, 0) > 0:
            return True
        return any(self.holds_some(owned, name) for owned in self.dependents.get(key, ()))

    def frees_at(self, name: str) -> float | None:
        """When the first document holding some of ``name`` lapses (``None``: none of them expires). Only a
        refusal or a usage report asks, so a sort is fine."""
        for key, at in sorted(self.expiries.items(), key=lambda item: item[1]):
            if self.holds_some(key, name):
                return at
        return None
