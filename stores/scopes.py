"""The scope registry: a bound on how many scopes (partitions) hold state at once.

A scope comes into being when something first writes in it, and with authentication by JWT the set of
principals — and so of scopes — is open-ended. Every scope has a bounded size of its own (task and runtime
limits), so bounding their number bounds the bytes the store can hold: at most ``max_scopes`` × one scope's
limits.

The registry keeps each live scope with its *lease*, the time something last wrote in it. A writer
:meth:`ScopeRegistry.admit`\\ s its scope before it writes; admission is one atomic step in the store, so
writers racing on many workers never register more than ``max_scopes`` scopes:

* a registered scope renews its lease (each process renews a scope at most every :attr:`~ScopeRegistry.renew_seconds`,
  so an admission usually costs no round trip);
* a new scope is registered while fewer than ``max_scopes`` are;
* when the registry is full, the scope with the oldest lease is *reclaimed* if that lease is older than
  ``idle_seconds`` — everything it holds is deleted in the same atomic step and its place given to the new
  one — otherwise the new scope is refused with :class:`~stores.errors.ScopeLimitReached`, which says when the
  oldest lease lapses (retry then).

A reclaimed scope is one nobody wrote in for ``idle_seconds``: no process still holds a renewal of it (a
renewal is trusted for at most ``renew_seconds``, a tenth of the idle time or less), so no write can land in
it while it is deleted.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from stores.errors import ScopeLimitReached

Clock = Callable[[], float]  # seconds since the epoch

RENEW_MAX_SECONDS = 60.0  # a process renews a lease at most this often (less when idle_seconds is short)
REMEMBERED = 4096  # renewals one process remembers; a forgotten one costs one round trip on next use
RECLAIM_ATTEMPTS = 3  # a reclaim loses only to another writer taking the same place: try again this often


@dataclass(frozen=True, slots=True)
class ScopeLimits:
    """``max_scopes`` scopes at once; a scope with no write for ``idle_seconds`` may be reclaimed."""

    max_scopes: int = 1024
    idle_seconds: float = 24 * 3600.0

    def __post_init__(self) -> None:
        count = self.max_scopes
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(f"scope limit max_scopes must be a positive integer, got {count!r}")
        idle = self.idle_seconds
        if isinstance(idle, bool) or not isinstance(idle, int | float) or not idle > 0:
            raise ValueError(f"scope limit idle_seconds must be positive, got {idle!r}")


@dataclass(frozen=True, slots=True)
class Admission:
    """What one admission step in the store answered."""

    admitted: bool
    # When refused: the scope with the oldest lease and that lease (seconds since the epoch).
    oldest: str = ""
    oldest_lease: float = 0.0
    reclaimed: str = ""  # the scope whose place was taken, if any


class ScopeRegistry(ABC):
    """Live scopes and their leases. Backends implement :meth:`_admit` and :meth:`live`."""

    def __init__(self, limits: ScopeLimits, clock: Clock | None) -> None:
        self.limits = limits
        self._clock = clock or time.time
        self._renewed: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def renew_seconds(self) -> float:
        return min(RENEW_MAX_SECONDS, self.limits.idle_seconds / 10)

    def admit(self, scope: str) -> None:
        """Make sure ``scope`` may write: renew its lease, register it, or reclaim the idlest scope for it.

        Raises :class:`~stores.errors.ScopeLimitReached` when ``max_scopes`` scopes are live and none has
        been idle for ``idle_seconds``; nothing was changed then."""
        now = self._clock()
        with self._lock:
            renewed = self._renewed.get(scope)
            if renewed is not None and 0 <= now - renewed < self.renew_seconds:
                return
        admission = self._admit(scope, now, "")
        for _ in range(RECLAIM_ATTEMPTS):
            if admission.admitted or now - admission.oldest_lease < self.limits.idle_seconds:
                break
            admission = self._admit(scope, now, admission.oldest)
        if not admission.admitted:
            wait = max(0.0, admission.oldest_lease + self.limits.idle_seconds - now)
            raise ScopeLimitReached(self.limits.max_scopes, wait)
        with self._lock:
            self._renewed[scope] = now
            self._renewed.move_to_end(scope)
            while len(self._renewed) > REMEMBERED:
                self._renewed.popitem(last=False)

    def _cutoff(self, now: float) -> float:
        """Leases at or before this are idle."""
        return now - self.limits.idle_seconds

    @abstractmethod
    def _admit(self, scope: str, now: float, victim: str) -> Admission:
        """One atomic step: renew or register ``scope``; when full and ``victim`` (not ``""``) is still the
        idle scope it was seen as, delete everything ``victim`` holds and register ``scope`` in its place."""

    @abstractmethod
    def live(self) -> dict[str, float]:
        """Every registered scope and its lease (for operators and tests, not for decisions)."""

    def forget_renewals(self) -> None:
        """Drop this process's remembered renewals (tests use it to stand in for another process)."""
        with self._lock:
            self._renewed.clear()
