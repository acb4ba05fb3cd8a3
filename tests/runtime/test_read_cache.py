"""The runtime over read caches (stores/cache.py): two runtimes with caches of their own stand for two worker
processes sharing one store. A cached read saves its round trip, and a stale one never shows in an answer."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from quineling.runtime.library import CACHEABLE_KINDS
from quineling.runtime.runtime import Runtime
from stores import Backend, TaskWrite
from stores.cache import CachingStateStore
from tests.conftest import BACKENDS, BackendMaker
from tests.runtime.test_ranch_support import SQUARES, call, create, fails, make_runtime


def caching_runtime(backend: Backend) -> Runtime:
    rt = make_runtime()
    rt.store = CachingStateStore(backend.state_store(), CACHEABLE_KINDS)
    return rt


@pytest.fixture
def backend(make_backend: BackendMaker) -> Backend:
    return make_backend()


@pytest.fixture
def bare_and_intent() -> tuple[dict[str, Any], dict[str, Any]]:
    donor = create(make_runtime(), SQUARES)
    return donor, donor["companions"]["intent"]


def test_an_observation_never_answers_from_a_stale_cache(backend: Backend, bare_and_intent: Any) -> None:
    donor, intent = bare_and_intent
    a, b = caching_runtime(backend), caching_runtime(backend)
    bare = call(a, operation="recover", recovery={"source": donor["source"]})
    assert call(a, operation="inspect", artifactId=bare["id"])["companions"]["intent"] is None  # cached now
    annotated = call(b, operation="annotate", artifactId=bare["id"], intent=intent)
    assert annotated["companions"]["intent"] == intent
    assert call(a, operation="inspect", artifactId=bare["id"]) == annotated
    assert call(a, operation="inspect", artifactId=bare["id"]) == annotated  # the cache was refreshed


def test_a_refusal_never_rests_on_a_stale_cache(backend: Backend, bare_and_intent: Any) -> None:
    """A's cache still shows the bare artifact when B annotates it; A's differing annotation, computed on the
    stale copy, would succeed — the commit refuses that, and the recomputation answers metadata-conflict."""
    donor, intent = bare_and_intent
    a, b = caching_runtime(backend), caching_runtime(backend)
    bare = call(a, operation="recover", recovery={"source": donor["source"]})
    call(a, operation="inspect", artifactId=bare["id"])
    call(b, operation="annotate", artifactId=bare["id"], intent=intent)
    fails(a, "metadata-conflict", operation="annotate", artifactId=bare["id"], intent={**intent, "name": "x"})
    assert call(b, operation="inspect", artifactId=bare["id"])["companions"]["intent"] == intent


NETWORK = {name: param for name, param in BACKENDS.items() if name != "memory"}  # round trips to count


@pytest.mark.parametrize("make_backend", list(NETWORK.values()), ids=list(NETWORK), indirect=True)
def test_a_warm_cache_saves_the_read_round_trip(make_backend: BackendMaker) -> None:
    backend = make_backend()
    rt = caching_runtime(backend)
    artifact = create(rt, SQUARES)  # what a create commits is remembered
    tasks = backend.task_store(describe=describe_task)

    def trips(request: dict[str, Any], attach: bool, runtime: Runtime = rt) -> int:
        before = backend.round_trips()
        task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        write = (lambda _outcome: TaskWrite(tasks, "default", task)) if attach else None
        runtime.dispatch(request, attach=write)
        return backend.round_trips() - before

    create_again = {"operation": "create", "thought": SQUARES}
    run = {"operation": "run", "artifactId": artifact["id"]}
    inspect = {"operation": "inspect", "artifactId": artifact["id"]}
    # With a task to save, the cached read is confirmed in that one commit.
    assert [trips(r, attach=True) for r in (create_again, run, inspect)] == [1, 1, 1]
    # Without one, an observation from the cache still needs its confirmation: the same one round trip.
    assert trips(inspect, attach=False) == 1
    uncached = Runtime(store=backend.state_store(), env=rt.env)
    assert [trips(r, attach=True, runtime=uncached) for r in (create_again, run)] == [2, 2]
