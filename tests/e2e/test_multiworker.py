"""gunicorn with 4 workers on real Redis: a create → inspect → run → reproduce flow and ListTasks
paging, each request on a fresh connection so consecutive requests land on different worker processes."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.e2e.client import WorkerTrace, traced_server
from tests.support.http_bindings import BINDINGS, Binding, CallFailed
from tests.support.live import LiveServer
from tests.support.messages import SQUARE_SUM, result_of, text, user_message

pytestmark = pytest.mark.slow
WORKERS = 4
PAUSE = 0.02


@pytest.fixture(scope="module")
def server(redis_store_url: str) -> Iterator[LiveServer]:
    with traced_server(store_url=redis_store_url, workers=WORKERS, threads=4) as live:
        yield live


@pytest.fixture(params=list(BINDINGS))
def binding(request: pytest.FixtureRequest, server: LiveServer) -> Binding:
    # Each test gets its own tenant, so its listing holds exactly the tasks it created.
    return BINDINGS[request.param](server, tenant=f"e2e-{uuid.uuid4().hex[:8]}")


def run_square_sum_flow(binding: Binding, pause: float = 0.0) -> list[str]:
    """create (text part) → inspect → run (total 29) → reproduce; returns the task ids in creation order.

    ``pause`` before each request lets the worker that served the previous one go idle first (otherwise the
    busy worker tends to win the next accept on a 2-core machine)."""
    time.sleep(pause)
    created = binding.send(user_message(text(SQUARE_SUM)))
    assert created["status"]["state"] == "TASK_STATE_COMPLETED", created["status"]
    creation = result_of(created)
    assert creation["operation"] == "create" and creation["result"]["status"] == "created"
    artifact = creation["result"]["artifact"]

    time.sleep(pause)
    inspected = binding.run_op({"operation": "inspect", "artifactId": artifact["id"]})
    stored = result_of(inspected)["result"]
    assert stored["id"] == artifact["id"] and stored["source"] == artifact["source"]

    time.sleep(pause)
    ran = binding.run_op({"operation": "run", "artifactId": artifact["id"]})
    record = result_of(ran)["result"]
    assert record["outputs"]["total"] == 29
    assert record["artifactId"] == artifact["id"] and record["parentRecordId"] is None

    time.sleep(pause)
    reproduced = binding.run_op(
        {"operation": "reproduce", "artifactId": artifact["id"], "recordId": record["id"]}
    )
    child = result_of(reproduced)["result"]
    assert child["artifact"]["id"] == artifact["id"]
    assert child["artifact"]["source"] == artifact["source"]
    assert child["record"]["id"] != record["id"]
    assert child["record"]["parentRecordId"] == record["id"]
    assert child["record"]["outputs"]["total"] == 29
    return [task["id"] for task in (created, inspected, ran, reproduced)]


def walk_pages(binding: Binding, expected_total: int) -> tuple[list[str], list[tuple[str, str]]]:
    """Page through ListTasks with pageSize 2; the ids in order, and (issuing tag, consuming tag) per cursor."""
    ids: list[str] = []
    timestamps: list[str] = []
    handoffs: list[tuple[str, str]] = []
    token, issuer = "", ""
    for _ in range(expected_total):  # at most one page per task; more would be a paging loop
        time.sleep(PAUSE)  # let the worker that served the last page go idle, so any worker may take this one
        page = binding.list_tasks(2, token)
        if token:
            handoffs.append((issuer, binding.last_tag))
        assert page["totalSize"] == expected_total
        assert page["pageSize"] == 2
        assert 1 <= len(page["tasks"]) <= 2
        ids += [task["id"] for task in page["tasks"]]
        timestamps += [task["status"]["timestamp"] for task in page["tasks"]]
        token, issuer = page["nextPageToken"], binding.last_tag
        if token == "":
            break
    assert token == "", "paging did not end"
    assert timestamps == sorted(timestamps, reverse=True)  # same-offset RFC 3339: text order is time order
    return ids, handoffs


def test_square_sum_flows_and_paging_across_workers(binding: Binding, server: LiveServer) -> None:
    """Two such flows (8 tasks), then ListTasks pages of 2 whose cursors are honoured by other workers:
    exact totalSize, newest first, every task exactly once."""
    created = run_square_sum_flow(binding) + run_square_sum_flow(binding)
    trace = WorkerTrace(server)

    crossed = False
    for _ in range(20):  # repeat the (idempotent) walk until a cursor has moved between workers
        ids, handoffs = walk_pages(binding, len(created))
        assert ids == created[::-1]  # newest first, no duplicates, no gaps
        crossed = any(trace.pid(a) != trace.pid(b) for a, b in handoffs)
        if crossed:
            break
    assert crossed, "no page cursor was ever consumed by a different worker than the one that issued it"


def test_runtime_state_is_shared_between_workers(binding: Binding, server: LiveServer) -> None:
    """A flow whose create, inspect, run and reproduce were served by different worker processes still
    succeeds: the runtime's artifacts and records live in Redis, not in one worker."""
    trace = WorkerTrace(server)
    for _ in range(10):  # repeat until the flow's four requests did not all land on one worker
        run_square_sum_flow(binding, pause=PAUSE)
        served = {trace.pid(tag) for tag in binding.tags[-4:]}
        if len(served) > 1:
            return
    pytest.fail("every flow was served by a single worker process")


LOSER_CODES = {-32004, -32002, -32603}  # UnsupportedOperation, TaskNotCancelable, retryable Internal
LOSER_STATUSES = {400, 409, 500}


Answer = tuple[str, object]  # (messageId | "cancel" | "lost", task or CallFailed)


def contend(
    binding: Binding, task_id: str, index: int, barrier: threading.Barrier, answers: list[Answer]
) -> None:
    """One racer: every third cancels, the others send a complete follow-up."""
    barrier.wait()
    try:
        if index % 3 == 2:
            answers[index] = ("cancel", binding.cancel(task_id))
        else:
            message = user_message(text(SQUARE_SUM), task_id=task_id)
            answers[index] = (message["messageId"], binding.send(message))
    except CallFailed as failure:
        answers[index] = ("lost", failure)


def race(binding: Binding, task_id: str, contenders: int) -> list[Answer]:
    barrier = threading.Barrier(contenders)
    answers: list[Answer] = [("", None)] * contenders
    threads = [
        threading.Thread(target=contend, args=(binding, task_id, i, barrier, answers))
        for i in range(contenders)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return answers


def test_racing_follow_ups_and_cancels_have_one_winner(binding: Binding) -> None:
    """Follow-ups and cancels fired at once at one clarification task, over several workers: exactly one
    request wins, the stored task is what the winner answered, and no loser's message reaches the history."""
    contenders = 6
    for _ in range(4):
        task_id = binding.send(user_message(text("   ")))["id"]
        answers = race(binding, task_id, contenders)
        stored = binding.get_task(task_id)
        won = [(key, task) for key, task in answers if key not in ("lost", "")]
        lost = [failure for key, failure in answers if key == "lost"]
        assert len(won) + len(lost) == contenders
        for failure in lost:
            assert isinstance(failure, CallFailed)
            if failure.code is not None:
                assert failure.code in LOSER_CODES, failure.body
            else:
                assert failure.http_status in LOSER_STATUSES, failure.body
        user_ids = [m["messageId"] for m in stored["history"] if m["role"] == "ROLE_USER"]
        if stored["status"]["state"] == "TASK_STATE_CANCELED":
            # Every cancel that succeeded answered CANCELED (idempotent); no follow-up won.
            assert won and all(key == "cancel" for key, _ in won)
            assert len(user_ids) == 1
        else:
            assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
            assert len(won) == 1 and won[0][0] != "cancel", won
            key, task = won[0]
            assert isinstance(task, dict) and task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert user_ids[1:] == [key]
