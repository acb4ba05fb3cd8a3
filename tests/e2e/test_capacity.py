"""The task-capacity scenario and paused-task expiry through real HTTP, on the memory store (1 worker) and
on Redis and the Redis Cluster (2 workers): more clarification tasks than the task capacity, then a valid
create."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import LIVE_STORES, store_url
from tests.support.http_bindings import BINDINGS, Binding, CallFailed, expect_not_found
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM, result_of, text, user_message

pytestmark = pytest.mark.slow
CAPACITY = 8
CLARIFICATIONS = CAPACITY + 3


def workers(kind: str) -> int:
    return 1 if kind == "memory" else 2  # the memory store is one process's


@pytest.fixture(scope="module", params=LIVE_STORES)
def capacity_server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    kind = request.param
    with live_server(store_url=store_url(kind), workers=workers(kind), threads=4, task_max=CAPACITY) as live:
        yield live


def clarify(binding: Binding) -> str:
    task = binding.send(user_message(text("   ")))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task["status"]
    return task["id"]


def missing(binding: Binding, call: Callable[[], object]) -> None:
    """``call`` answers the binding's task-not-found error."""
    with pytest.raises(CallFailed) as failure:
        call()
    expect_not_found(binding, failure.value)


def listed_ids(binding: Binding) -> tuple[list[str], int]:
    page = binding.list_tasks(100)
    assert page["nextPageToken"] == ""
    return [task["id"] for task in page["tasks"]], page["totalSize"]


@pytest.mark.parametrize("kind", list(BINDINGS))
def test_capacity_scenario(capacity_server: LiveServer, kind: str) -> None:
    """Oldest paused tasks are evicted to admit new ones; retained ones still follow up and cancel, and
    evicted ids answer task-not-found for get, follow-up and cancel."""
    binding = BINDINGS[kind](capacity_server, tenant=f"capacity-{kind}")
    paused = [clarify(binding) for _ in range(CLARIFICATIONS)]
    created = binding.send(user_message(text(SQUARE_SUM)))
    assert created["status"]["state"] == "TASK_STATE_COMPLETED", created["status"]
    assert result_of(created)["result"]["status"] == "created"

    # Eviction takes the oldest last-updated paused tasks first; capacity holds the rest plus the create.
    evicted, retained = paused[: CLARIFICATIONS - CAPACITY + 1], paused[CLARIFICATIONS - CAPACITY + 1 :]
    ids, total = listed_ids(binding)
    assert total == CAPACITY == len(retained) + 1
    assert ids == [created["id"], *retained[::-1]]
    assert binding.get_task(created["id"])["status"]["state"] == "TASK_STATE_COMPLETED"

    for task_id in evicted:
        missing(binding, lambda task_id=task_id: binding.get_task(task_id))
        missing(
            binding, lambda task_id=task_id: binding.send(user_message(text(SQUARE_SUM), task_id=task_id))
        )
        missing(binding, lambda task_id=task_id: binding.cancel(task_id))

    followed, cancelled = retained[0], retained[1]
    assert binding.get_task(followed)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = binding.send(user_message(text(SQUARE_SUM), task_id=followed))
    assert done["id"] == followed and done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert result_of(done)["result"]["status"] == "created"  # the result container was replaced
    assert [m["role"] for m in binding.get_task(followed)["history"]].count("ROLE_USER") == 2
    assert binding.cancel(cancelled)["status"]["state"] == "TASK_STATE_CANCELED"
    assert binding.get_task(cancelled)["status"]["state"] == "TASK_STATE_CANCELED"

    # Follow-up and cancel changed states in place: nothing new was admitted or evicted.
    ids, total = listed_ids(binding)
    assert total == len(ids) == CAPACITY
    assert set(ids) == {created["id"], *retained}
    assert ids[:2] == [cancelled, followed]  # newest status first

    continue_after_admission_and_eviction(binding, ids)


def continue_after_admission_and_eviction(binding: Binding, full: list[str]) -> None:
    """A cursor keeps its place while new tasks are admitted ahead of it and old ones evicted behind it."""
    first = binding.list_tasks(3)
    assert [task["id"] for task in first["tasks"]] == full[:3]
    newcomers = [clarify(binding) for _ in range(2)]  # each evicts the oldest retained task
    evicted = full[-2:]
    rest: list[str] = []
    token = first["nextPageToken"]
    while token:
        page = binding.list_tasks(3, token)
        assert page["totalSize"] == CAPACITY
        rest += [task["id"] for task in page["tasks"]]
        token = page["nextPageToken"]
    assert rest == full[3:-2]
    assert not set(newcomers) & set(rest)
    for task_id in evicted:
        missing(binding, lambda task_id=task_id: binding.get_task(task_id))


TTL_SECONDS = 1


# Not on the cluster: task expiry is the store's (its conformance suite runs there), and this server would cost
# the cluster run about nine seconds of start, sleeps and stop.
@pytest.fixture(scope="module", params=LIVE_STORES[:2])
def ttl_server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    kind = request.param
    with live_server(
        store_url=store_url(kind), workers=workers(kind), threads=4, task_ttl_seconds=TTL_SECONDS
    ) as live:
        yield live


@pytest.mark.parametrize("kind", list(BINDINGS))
def test_paused_task_expires_and_polling_does_not_extend_it(ttl_server: LiveServer, kind: str) -> None:
    """A clarification task polled every 0.25 s still expires one TTL after its last update."""
    binding = BINDINGS[kind](ttl_server, tenant=f"ttl-{kind}")
    started = time.monotonic()
    task_id = clarify(binding)
    completed = binding.send(user_message(text(SQUARE_SUM)))  # terminal tasks do not expire
    for poll_at in (0.25, 0.5, 0.75):
        time.sleep(max(0.0, started + poll_at - time.monotonic()))
        assert binding.get_task(task_id)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert time.monotonic() - started < TTL_SECONDS, "machine too slow to poll inside the TTL"
    # Had the polls extended its life, it would live until 0.75 s + TTL; check well before that.
    time.sleep(max(0.0, started + TTL_SECONDS + 0.35 - time.monotonic()))
    missing(binding, lambda: binding.get_task(task_id))
    missing(binding, lambda: binding.send(user_message(text(SQUARE_SUM), task_id=task_id)))
    missing(binding, lambda: binding.cancel(task_id))
    ids, total = listed_ids(binding)
    assert (ids, total) == ([completed["id"]], 1)
