"""Fixtures for the client's tests: a fresh (memory) state per test, so breakers never leak between tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from quineling.client import BreakerSettings, CircuitBreaker, RetryPolicy, SharedState


@pytest.fixture
def state() -> SharedState:
    return SharedState.from_url("memory://")


@pytest.fixture
def delays() -> list[float]:
    return []


@pytest.fixture
def fast_retry(delays: list[float]) -> Callable[..., RetryPolicy]:
    """A policy that records its waits instead of sleeping (``rng`` fixed at its maximum)."""

    def make(retries: int = 2, base: float = 0.1, **options: object) -> RetryPolicy:
        return RetryPolicy(retries=retries, base=base, sleep=delays.append, rng=lambda: 1.0, **options)  # type: ignore[arg-type]

    return make


@pytest.fixture
def breaker(state: SharedState) -> CircuitBreaker:
    return CircuitBreaker(state, BreakerSettings())
