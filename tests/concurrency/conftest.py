"""Fixtures for the real-process concurrency tests (real Redis only; see tests/conftest.py for the guard)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator

import pytest

from tests.concurrency import support


@pytest.fixture(scope="session")
def crowd() -> Iterator[support.Crowd]:
    """One warm pool of spawned processes for the whole session (spawning costs seconds on a small box)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(support.PROCESSES)
    with context.Pool(support.PROCESSES, initializer=support.prepare, initargs=(barrier,)) as pool:
        yield support.Crowd(pool, barrier)


@pytest.fixture
def prefix() -> Iterator[str]:
    yield from support.fresh_prefix()
