"""Fixtures for the real-process concurrency tests (real Redis only; see tests/conftest.py for the guard)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator

import pytest

from tests.concurrency import support
from tests.conftest import CLUSTER_URL, ON_CLUSTER, cluster_url
from tests.support import redis_cluster


@pytest.fixture(scope="session")
def crowd() -> Iterator[support.Crowd]:
    """One warm pool of spawned processes for the whole session (spawning costs seconds on a small box). They
    inherit the cluster's URL, so the same pool races on Redis and on the cluster."""
    if CLUSTER_URL or redis_cluster.available():
        os.environ["QUINELING_TEST_REDIS_CLUSTER_URL"] = cluster_url()
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(support.PROCESSES)
    with context.Pool(support.PROCESSES, initializer=support.prepare, initargs=(barrier,)) as pool:
        yield support.Crowd(pool, barrier)


@pytest.fixture(params=["redis", pytest.param("cluster", marks=ON_CLUSTER)])
def prefix(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every race runs on real Redis and on a three-master Redis Cluster (docs/cluster.md)."""
    yield from support.fresh_prefix(cluster=request.param == "cluster")
