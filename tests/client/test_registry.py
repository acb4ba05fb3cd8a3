"""The known-agents registry and the shared breaker state, in memory and through Redis (two instances on one
Redis URL stand for two processes or hosts)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from quineling.client import (
    AgentRegistry,
    AgentUnreachable,
    BreakerSettings,
    CardError,
    CircuitBreaker,
    SharedState,
    Timeouts,
)
from quineling.client.retry import RetryPolicy
from tests.client.fault_server import FaultServer, Reply, Request, agent_server, fault_server
from tests.support.redis_keys import delete_under

ROOT = Path(__file__).resolve().parents[2]


def ready_agent(ready: dict[str, int], **card: Any) -> AbstractContextManager[FaultServer]:
    """An agent whose /readyz answers ``ready["status"]`` (a test may change it while the agent runs)."""

    def handle(request: Request) -> Reply:
        if request.path == "/readyz":
            return Reply(ready["status"], {"status": "x"})
        return Reply(404, "<html></html>")

    return agent_server(handle, **card)


@pytest.fixture
def registry(state: SharedState) -> AgentRegistry:
    return AgentRegistry(state, timeouts=Timeouts(connect=1, read=2), retry=RetryPolicy.none())


def test_register_list_find_remove(registry: AgentRegistry) -> None:
    ready = {"status": 200}
    skill = {"id": "translate", "name": "Translate", "description": "words", "tags": ["language"]}
    with ready_agent(ready, skills=[skill]) as live:
        entry = registry.register(live.base + "/")
        assert (entry.url, entry.name, entry.skills, entry.health) == (
            live.base,
            "fault agent",
            ("translate",),
            "healthy",
        )
        assert entry.latency_ms is not None and entry.last_seen is not None
        assert [a.url for a in registry.list()] == [live.base]
        assert [a.url for a in registry.find("LANGUAGE")] == [live.base] and registry.find("cooking") == []
        assert registry.register(live.base).registered_at == entry.registered_at  # re-registering refreshes
        assert len(registry.list()) == 1
        assert registry.remove(live.base) and not registry.remove(live.base)
        assert registry.list() == [] and registry.get(live.base) is None


def test_an_agent_without_a_usable_card_is_not_registered(registry: AgentRegistry) -> None:
    grpc_only = [{"url": "http://x/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]
    with ready_agent({"status": 200}, interfaces=grpc_only) as live:
        with pytest.raises(CardError, match="offers no interface this client speaks"):
            registry.register(live.base)
    with fault_server(lambda _r: Reply(404, "<html>nothing</html>")) as nothing, pytest.raises(CardError):
        registry.register(nothing.base)
    assert registry.list() == []


def test_health_checks_read_the_card_and_the_readiness_endpoint(registry: AgentRegistry) -> None:
    ready = {"status": 200}
    with ready_agent(ready) as live:
        registry.register(live.base)
        (checked,) = registry.check(live.base)
        assert (checked.health, checked.ready) == ("healthy", True)
        ready["status"] = 404
        assert [(a.health, a.ready) for a in registry.check()] == [("healthy", None)]  # no readiness offered
        ready["status"] = 503
        (unready,) = registry.check()
        assert (unready.health, unready.ready) == ("unhealthy", False) and "not ready" in (
            unready.last_error or ""
        )
        seen = unready.last_seen
    (down,) = registry.check()
    assert down.health == "unhealthy" and down.last_seen == seen and "connect" in (down.last_error or "")
    assert down.last_checked is not None and seen is not None and down.last_checked >= seen


@pytest.fixture
def redis_state(redis_store_url: str) -> Iterator[Any]:
    prefix = f"qclient-{uuid.uuid4().hex[:10]}"
    made: list[SharedState] = []

    def make() -> SharedState:
        state = SharedState.from_url(redis_store_url, prefix=prefix)
        made.append(state)
        return state

    make.prefix = prefix  # type: ignore[attr-defined]
    make.url = redis_store_url  # type: ignore[attr-defined]
    yield make
    for state in made:
        state.store.close()
    delete_under(redis_store_url, prefix)


def test_the_registry_is_shared_through_redis(redis_state: Any) -> None:
    one, two = (AgentRegistry(redis_state(), retry=RetryPolicy.none()) for _ in range(2))
    with ready_agent({"status": 200}) as live:
        one.register(live.base)
        assert [a.name for a in two.list()] == ["fault agent"]
        (checked,) = two.check()
        assert one.get(live.base).last_checked == checked.last_checked  # type: ignore[union-attr]
        assert two.remove(live.base) and one.list() == []


def test_the_breaker_is_shared_through_redis(redis_state: Any) -> None:
    settings = BreakerSettings(threshold=5, window=60)
    here, there = CircuitBreaker(redis_state(), settings), CircuitBreaker(redis_state(), settings)
    for breaker in (here, there, here, there, here):
        breaker.failure("https://agent")
    with pytest.raises(AgentUnreachable, match="circuit breaker"):
        there.before("https://agent")
    there.reset("https://agent")
    here.before("https://agent")


def test_a_breaker_opened_by_another_process_is_open_here(redis_state: Any) -> None:
    here = CircuitBreaker(redis_state())
    script = (
        "import sys; from quineling.client import CircuitBreaker, SharedState; "
        "b = CircuitBreaker(SharedState.from_url(sys.argv[1], prefix=sys.argv[2])); "
        "[b.failure('https://agent') for _ in range(5)]"
    )
    subprocess.run(
        [sys.executable, "-c", script, redis_state.url, redis_state.prefix], check=True, cwd=ROOT, timeout=60
    )
    with pytest.raises(AgentUnreachable, match="circuit breaker"):
        here.before("https://agent")
