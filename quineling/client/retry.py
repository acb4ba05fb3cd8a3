"""Retries with exponential backoff and 25 % jitter, honouring ``Retry-After``.

The delay before retry ``n`` (0-based) is ``base·2^n + U(0, 0.25·base·2^n)``, capped at ``max_delay``; when the
agent sent ``Retry-After`` the delay is at least that. A ``Retry-After`` longer than ``max_retry_after`` is not
waited for: the call fails at once with the agent's answer, so a caller is never parked for minutes.

Which requests are retried is decided by the caller of :meth:`RetryPolicy.delay` (see
:mod:`quineling.client.http`): only those safe to repeat.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2
    base: float = 0.5
    max_delay: float = 10.0
    max_retry_after: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    rng: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.retries < 0 or self.base < 0 or self.max_delay < 0:
            raise ValueError("retries, base and max_delay must not be negative")

    @classmethod
    def none(cls) -> RetryPolicy:
        return cls(retries=0)

    def backoff(self, attempt: int) -> float:
        step: float = self.base * 2**attempt
        return min(self.max_delay, step + float(self.rng()) * 0.25 * step)

    def delay(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry ``attempt`` (0 = the first retry), or ``None``: do not retry."""
        if attempt >= self.retries:
            return None
        if retry_after is not None and retry_after > self.max_retry_after:
            return None
        wait = self.backoff(attempt)
        return max(wait, retry_after) if retry_after is not None else wait


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date; ``None`` if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)
