"""Shared pytest fixtures. Each block below belongs to one part of the project; keep blocks separate."""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------------------
# stores: the backend table and fixtures the conformance suite (tests/stores) runs against every backend.
# Real Redis runs only when QUINELING_TEST_REDIS_URL is set; each test gets its own key prefix, deleted after.
# ---------------------------------------------------------------------------------------------------------
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from stores import Backend, MemoryBackend, RedisBackend, StateStore, TaskLimits, TaskStore
from tests.support import redis_cluster
from tests.support.redis_keys import delete_under

# Every server a test starts writes each log line at once: tests read a server's log right after a request and
# assert on what it does not contain. The batched default (QUINELING_LOG_FLUSH_SECONDS=1) has tests of its
# own, which set it (tests/observe/test_log_batching.py).
os.environ.setdefault("QUINELING_LOG_FLUSH_SECONDS", "0")

REDIS_URL = os.environ.get("QUINELING_TEST_REDIS_URL", "")
needs_redis = pytest.mark.skipif(
    not REDIS_URL, reason="set QUINELING_TEST_REDIS_URL to run against real Redis"
)
# A Redis Cluster of three masters: QUINELING_TEST_REDIS_CLUSTER_URL (.ci/run starts one), or else one this
# session starts itself on tests/support/redis_cluster.py's ports when redis-server is installed.
CLUSTER_URL = os.environ.get("QUINELING_TEST_REDIS_CLUSTER_URL", "")
needs_cluster = pytest.mark.skipif(
    not (CLUSTER_URL or redis_cluster.available()),
    reason="set QUINELING_TEST_REDIS_CLUSTER_URL or install redis-server to run against a Redis Cluster",
)
ON_CLUSTER = [pytest.mark.redis, pytest.mark.cluster, needs_cluster]


def cluster_url() -> str:
    """The shared test cluster's URL, starting it on first use (see :data:`CLUSTER_URL`)."""
    if CLUSTER_URL:
        return CLUSTER_URL
    cluster = redis_cluster.LocalCluster()
    cluster.ensure()
    return cluster.url


class BackendMaker:
    """Makes backend instances of one kind; every Redis instance made by one maker shares one server."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.prefix = f"qt-{uuid.uuid4().hex[:12]}"
        self.made: list[Backend] = []
        self._server: Any = None

    @property
    def shared(self) -> bool:
        """Whether two instances see the same data (true for Redis, false for the in-process store)."""
        return self.kind != "memory"

    def __call__(self, prefix: str | None = None) -> Backend:
        backend: Backend
        if self.kind == "memory":
            backend = MemoryBackend()
        elif self.kind == "fakeredis":
            import fakeredis

            self._server = self._server or fakeredis.FakeServer()
            client = fakeredis.FakeRedis(server=self._server)
            backend = RedisBackend("redis://fake", client=client, prefix=prefix or self.prefix)
        else:
            backend = RedisBackend(self.url, prefix=prefix or self.prefix)
        self.made.append(backend)
        return backend

    @property
    def url(self) -> str:
        return cluster_url() if self.kind == "cluster" else REDIS_URL

    def cleanup(self) -> None:
        if self.kind in ("redis", "cluster") and self.made:
            delete_under(self.url, *{backend.prefix for backend in self.made})  # type: ignore[attr-defined]
        for backend in self.made:
            backend.close()


BACKENDS: dict[str, Any] = {
    "memory": "memory",
    "fakeredis": "fakeredis",
    "redis": pytest.param("redis", marks=[pytest.mark.redis, needs_redis]),
    "cluster": pytest.param("cluster", marks=ON_CLUSTER),
}


class FakeClock:
    """An injectable store clock (seconds since the epoch) that tests move by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=list(BACKENDS.values()), ids=list(BACKENDS))
def make_backend(request: pytest.FixtureRequest) -> Iterator[BackendMaker]:
    maker = BackendMaker(request.param)
    yield maker
    maker.cleanup()


@pytest.fixture
def backend(make_backend: BackendMaker) -> Backend:
    return make_backend()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def state_store(backend: Backend) -> StateStore:
    return backend.state_store()


@pytest.fixture
def task_store(backend: Backend, clock: FakeClock) -> TaskStore:
    return backend.task_store(TaskLimits(), clock=clock, describe=describe_task)


@pytest.fixture
def make_task_store(backend: Backend, clock: FakeClock) -> Callable[..., TaskStore]:
    """A task store of the test's backend with the given limits (and the test's clock)."""

    def make(**limits: Any) -> TaskStore:
        return backend.task_store(TaskLimits(**limits), clock=clock, describe=describe_task)

    return make


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster: needs a Redis Cluster (QUINELING_TEST_REDIS_CLUSTER_URL)")


_skipped_redis_tests: list[str] = []
_skipped_cluster_tests: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and "redis" in report.keywords:
        _skipped_redis_tests.append(report.nodeid)
    if report.skipped and "cluster" in report.keywords:
        _skipped_cluster_tests.append(report.nodeid)


def _redis_required_but_skipped() -> bool:
    return bool(os.environ.get("QUINELING_REQUIRE_REDIS") and _skipped_redis_tests)


def _cluster_required_but_skipped() -> bool:
    return bool(os.environ.get("QUINELING_REQUIRE_CLUSTER") and _skipped_cluster_tests)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With QUINELING_REQUIRE_REDIS set (CI), a skipped real-Redis test fails the run instead of passing;
    with QUINELING_REQUIRE_CLUSTER, a skipped Redis Cluster test does."""
    required = _redis_required_but_skipped() or _cluster_required_but_skipped()
    if required and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _redis_required_but_skipped():
        terminalreporter.write_line(
            f"QUINELING_REQUIRE_REDIS is set but {len(_skipped_redis_tests)} real-Redis test(s) were skipped "
            f"(is QUINELING_TEST_REDIS_URL set and Redis up?), e.g. {_skipped_redis_tests[0]}",
            red=True,
        )
    if _cluster_required_but_skipped():
        terminalreporter.write_line(
            f"QUINELING_REQUIRE_CLUSTER is set but {len(_skipped_cluster_tests)} Redis Cluster test(s) were "
            f"skipped (is QUINELING_TEST_REDIS_CLUSTER_URL set and the cluster up?), e.g. "
            f"{_skipped_cluster_tests[0]}",
            red=True,
        )


# --------------------------------------------- end of stores block ---------------------------------------


# ---------------------------------------------------------------------------------------------------------
# live stores: the store URL a live (gunicorn) test runs on. Every such test on real Redis runs on the Redis
# Cluster too (docs/cluster.md, "Tests"); kinds are resolved lazily, as the cluster may have to be started.
# ---------------------------------------------------------------------------------------------------------
REDIS_STORES = [BACKENDS["redis"], BACKENDS["cluster"]]
LIVE_STORES = ["memory", *REDIS_STORES]  # for modules that also run on the memory store (one worker)


def store_url(kind: str) -> str:
    """``memory://``, the test Redis or the test cluster, for a kind of :data:`LIVE_STORES`."""
    if kind == "memory":
        return "memory://"
    return cluster_url() if kind == "cluster" else REDIS_URL


@pytest.fixture(scope="module", params=REDIS_STORES, ids=["redis", "cluster"])
def redis_store_url(request: pytest.FixtureRequest) -> str:
    """The test Redis, then the test cluster: a live module's server takes its store URL from here."""
    return store_url(request.param)


# A live test whose subject is not the store (a worker's own cap, the keys file, per-worker metrics) runs on
# Redis only, to keep CI short; docs/cluster.md lists each one. It shares the module's Redis-run server.
REDIS_ONLY = pytest.mark.parametrize("redis_store_url", [BACKENDS["redis"]], indirect=True, ids=["redis"])


# ------------------------------------------- end of live stores block -----------------------------------


# ---------------------------------------------------------------------------------------------------------
# pytest-xdist (./dev test, CI): each file runs on one worker (--dist loadfile, pyproject.toml), handed out in
# collection order. Files with slow tests (live servers, clusters, namespaces) go first, so the many quick
# files fill the workers at the end instead of one long file running alone.
# ---------------------------------------------------------------------------------------------------------
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a serial run keeps pytest's order
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: the order within each file stays


# --------------------------------------------- end of xdist block ----------------------------------------
