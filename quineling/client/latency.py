"""Latency of the last calls to each agent: mean, p50 and p95 over a window of 20 (per process)."""

from __future__ import annotations

import math
import threading
from collections import deque
from typing import Any

WINDOW = 20


class LatencyTracker:
    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self._samples: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def record(self, agent: str, seconds: float) -> None:
        with self._lock:
            self._samples.setdefault(agent, deque(maxlen=self.window)).append(seconds)

    def clear(self) -> None:
        with self._lock:
            self._samples.clear()

    def summary(self, agent: str) -> dict[str, Any]:
        """``count``, and in milliseconds ``mean``, ``p50`` and ``p95`` (``None`` before the first sample)."""
        with self._lock:
            samples = sorted(self._samples.get(agent, ()))
        if not samples:
            return {"count": 0, "mean": None, "p50": None, "p95": None}
        return {
            "count": len(samples),
            "mean": round(1000 * sum(samples) / len(samples), 3),
            "p50": round(1000 * _percentile(samples, 50), 3),
            "p95": round(1000 * _percentile(samples, 95), 3),
        }


def _percentile(ordered: list[float], pct: float) -> float:
    """Nearest rank: the smallest sample with at least ``pct`` % of the samples at or below it."""
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


TRACKER = LatencyTracker()  # one per process: every client of an agent adds to the same window
