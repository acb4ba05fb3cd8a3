"""A circuit breaker per agent: after ``threshold`` (5) consecutive failures it opens for ``window`` (60) s and
calls fail at once with :class:`AgentUnreachable`; then one caller gets a half-open trial — success closes the
breaker, failure opens it for another window. Other callers keep failing fast while the trial runs (a trial that
never reports back frees the slot after ``trial_timeout``).

A failure is one failed HTTP attempt: a connection error, a timeout, or a 5xx/429 answer. A retry is an
attempt of its own, so the breaker sits inside the retry loop: an open breaker also stops the retries. Answers
that show a working agent (2xx, A2A errors in 4xx, 401/403) count as successes.

The state lives in :class:`~quineling.client.shared.SharedState`, so with a Redis URL every process and host
sees the same breaker. If that store fails, the breaker steps aside (the call goes ahead): a broken store must
not stop calls to a healthy agent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from quineling.client.errors import AgentUnreachable
from quineling.client.shared import SharedState, local_state
from stores import StoreError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BreakerSettings:
    threshold: int = 5
    window: float = 60.0
    trial_timeout: float = 30.0


class CircuitBreaker:
    def __init__(
        self,
        state: SharedState | None = None,
        settings: BreakerSettings | None = None,
        clock: Callable[[], float] = time.time,  # wall clock: shared across hosts
    ) -> None:
        self.state = state or local_state()
        self.settings = settings or BreakerSettings()
        self.clock = clock

    @staticmethod
    def _key(agent: str) -> tuple[str, str]:
        return ("breaker", agent)

    def status(self, agent: str) -> dict[str, Any]:
        """``state`` (closed, open, half-open), ``failures`` and ``open_until`` (epoch seconds or None)."""
        doc = self._read(agent) or {}
        open_until = doc.get("open_until")
        if not open_until:
            state = "closed"
        else:
            state = "open" if self.clock() < open_until else "half-open"
        return {"state": state, "failures": int(doc.get("failures", 0)), "open_until": open_until}

    def before(self, agent: str) -> None:
        """Raise :class:`AgentUnreachable` if the breaker is open (or half-open with a trial under way)."""
        doc = self._read(agent)
        if not doc or not doc.get("open_until"):
            return
        now = self.clock()
        if now < doc["open_until"]:
            self._refuse(agent, doc["open_until"] - now)
        claimed = False

        def claim(current: dict[str, Any] | None) -> dict[str, Any] | None:
            nonlocal claimed
            claimed = False
            if not current or not current.get("open_until") or now < current["open_until"]:
                return current
            if current.get("trial_until", 0) > now:
                return current  # someone else's trial is under way
            claimed = True
            return {**current, "trial_until": now + self.settings.trial_timeout}

        try:
            after = self.state.update(self._key(agent), claim)
        except StoreError as error:
            log.warning("circuit breaker state unavailable (%s); calling %s anyway", error, agent)
            return
        if not claimed and after and after.get("open_until"):
            wait = max(after["open_until"] - now, after.get("trial_until", now) - now)
            self._refuse(agent, wait, trial=now >= after["open_until"])

    def _refuse(self, agent: str, wait: float, *, trial: bool = False) -> None:
        what = "a half-open trial call is under way" if trial else f"open for another {wait:.1f}s"
        raise AgentUnreachable(
            f"circuit breaker for {agent} is open after {self.settings.threshold} consecutive failures ({what})",
            hint="the agent kept failing; calls fail fast until its breaker half-opens",
        )

    def success(self, agent: str) -> None:
        doc = self._read(agent)
        if not doc:
            return
        self._write(agent, lambda _current: None)

    def failure(self, agent: str) -> None:
        now = self.clock()
        window, threshold = self.settings.window, self.settings.threshold

        def count(current: dict[str, Any] | None) -> dict[str, Any] | None:
            doc = dict(current or {})
            doc["failures"] = int(doc.get("failures", 0)) + 1
            if doc.get("open_until") and now >= doc["open_until"]:  # the half-open trial failed
                doc.update(open_until=now + window, trial_until=0)
            elif not doc.get("open_until") and doc["failures"] >= threshold:
                doc.update(open_until=now + window, trial_until=0)
            return doc

        self._write(agent, count)

    def reset(self, agent: str) -> None:
        self._write(agent, lambda _current: None)

    def _read(self, agent: str) -> dict[str, Any] | None:
        try:
            return self.state.get(self._key(agent))
        except StoreError as error:
            log.warning("circuit breaker state unavailable (%s); calling %s anyway", error, agent)
            return None

    def _write(self, agent: str, change: Callable[[dict[str, Any] | None], dict[str, Any] | None]) -> None:
        try:
            self.state.update(self._key(agent), change)
        except StoreError as error:
            log.warning("circuit breaker state not updated (%s) for %s", error, agent)
