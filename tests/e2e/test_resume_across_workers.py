"""Resumable streams, long-poll GetTask and idempotency keys through real gunicorn workers on real Redis: a
streaming follow-up cut after each of its frames and resumed with ``Last-Event-ID`` on another server
process loses and repeats nothing; a long-poll wakes on a change another process commits,
times out, and at the per-worker waiter cap answers at once; sixteen identical keyed sends racing on two
servers execute once; a changed body under a used key is refused; keys expire."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.conftest import REDIS_ONLY
from tests.e2e.client import traced_server
from tests.support.http_bindings import headers, new_tag
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM, text, user_message

pytestmark = pytest.mark.slow
LONG_POLL_SECONDS, KEY_TTL_SECONDS = 3, 4


@pytest.fixture(scope="module")
def server(redis_store_url: str) -> Iterator[LiveServer]:
    with traced_server(
        store_url=redis_store_url,
        workers=4,
        keepalive_seconds=0.5,
        subscribe_max_seconds=20,
        long_poll_seconds=LONG_POLL_SECONDS,
        max_long_polls=1,
        idempotency_ttl_seconds=KEY_TTL_SECONDS,
    ) as live:
        yield live


@pytest.fixture(scope="module")
def other(server: LiveServer) -> Iterator[LiveServer]:
    """A second gunicorn master on the same store prefix: what is sent to it is served by another process by
    construction (how one master's workers share connections is up to the kernel and the worker class)."""
    with live_server(
        share_with=server,
        workers=2,
        keepalive_seconds=0.5,
        subscribe_max_seconds=20,
        long_poll_seconds=LONG_POLL_SECONDS,
        idempotency_ttl_seconds=KEY_TTL_SECONDS,
    ) as live:
        yield live


@pytest.fixture
def tenant() -> str:
    return f"resume-{uuid.uuid4().hex[:8]}"


def frames(response: requests.Response, limit: int | None = None) -> list[dict[str, str]]:
    """SSE frames (``id``, ``data`` …) as they arrive; with ``limit``, stop reading after that many."""
    out: list[dict[str, str]] = []
    buffer = ""
    for chunk in response.iter_content(chunk_size=256, decode_unicode=True):
        buffer += chunk
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            fields = dict(
                line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":")
            )
            if "data" in fields:
                out.append(fields)
                if limit is not None and len(out) >= limit:
                    return out
    return out


def rest(server: LiveServer, tenant: str, path: str) -> str:
    return f"{server.base_url}/a2a/rest/{tenant}{path}"


def send(server: LiveServer, tenant: str, message: dict[str, Any], **extra: str) -> requests.Response:
    return requests.post(
        rest(server, tenant, "/message:send"), json={"message": message}, headers=headers(**extra), timeout=20
    )


def paused(server: LiveServer, tenant: str) -> dict[str, Any]:
    task: dict[str, Any] = send(server, tenant, user_message(text("   "))).json()["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


@pytest.mark.parametrize("binding", ["rest", "jsonrpc"])
def test_a_follow_up_stream_cut_anywhere_resumes_on_another_process(
    server: LiveServer, other: LiveServer, tenant: str, binding: str
) -> None:
    for cut in range(1, 4):  # after the opening snapshot, after WORKING, after the artifact
        task = paused(server, tenant)
        tag = new_tag()
        body = {"message": user_message(text(SQUARE_SUM), task_id=task["id"])}
        if binding == "rest":
            url, payload = rest(server, tenant, "/message:stream"), body
        else:
            url = f"{server.base_url}/a2a/jsonrpc"
            payload = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendStreamingMessage",
                "params": {**body, "tenant": tenant},
            }
        with requests.post(url, json=payload, headers=headers(tag), stream=True, timeout=20) as response:
            seen = frames(response, limit=cut)  # then the connection is dropped
        resume_tag = new_tag()
        if binding == "rest":
            resumed_response = requests.get(
                rest(other, tenant, f"/tasks/{task['id']}:subscribe"),
                headers=headers(resume_tag, **{"Last-Event-ID": seen[-1]["id"]}),
                stream=True,
                timeout=20,
            )
        else:
            subscribe = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "SubscribeToTask",
                "params": {"id": task["id"], "tenant": tenant},
            }
            resumed_response = requests.post(
                f"{other.base_url}/a2a/jsonrpc",
                json=subscribe,
                headers=headers(resume_tag, **{"Last-Event-ID": seen[-1]["id"]}),
                stream=True,
                timeout=20,
            )
        with resumed_response:
            resumed = frames(resumed_response)
        ids = [f["id"] for f in seen + resumed]
        assert len(ids) == 4 and len(set(ids)) == 4, (cut, ids)  # snapshot + WORKING, artifact, COMPLETED
        kinds = [("artifactUpdate" in f["data"], "TASK_STATE_COMPLETED" in f["data"]) for f in seen + resumed]
        assert kinds[1:] == [(False, False), (True, False), (False, True)], (cut, kinds)


def test_stale_and_foreign_ids_are_refused(server: LiveServer, tenant: str) -> None:
    one, other = paused(server, tenant), paused(server, tenant)
    with requests.get(
        rest(server, tenant, f"/tasks/{other['id']}:subscribe"), headers=headers(), stream=True, timeout=20
    ) as r:
        foreign = frames(r, limit=1)[0]["id"]
    for bad in (foreign, "not-an-id"):
        answer = requests.get(
            rest(server, tenant, f"/tasks/{one['id']}:subscribe"),
            headers=headers(**{"Last-Event-ID": bad}),
            timeout=20,
        )
        assert answer.status_code == 400 and "GetTask" in answer.json()["error"]["message"]


def test_long_poll_wakes_on_another_process_change_and_times_out(
    server: LiveServer, other: LiveServer, tenant: str
) -> None:
    task = paused(server, tenant)
    url = rest(server, tenant, f"/tasks/{task['id']}?currentGeneration=4")
    started = time.monotonic()
    timed_out = requests.get(url, headers=headers(), timeout=20)
    assert timed_out.json()["metadata"]["generation"] == 4
    assert LONG_POLL_SECONDS - 0.5 < time.monotonic() - started < LONG_POLL_SECONDS + 3
    woken: list[tuple[float, Any]] = []

    def poll() -> None:
        answer = requests.get(url, headers=headers(), timeout=20).json()
        woken.append((time.monotonic(), answer))

    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(0.5)
    sent_at = time.monotonic()
    send(other, tenant, user_message(text(SQUARE_SUM), task_id=task["id"]))
    waiter.join(20)
    ((at, answer),) = woken
    assert answer["metadata"]["generation"] == 7 and at - sent_at < 1.5


@REDIS_ONLY  # the waiter cap is each worker's own count
def test_long_polls_beyond_the_waiter_cap_are_answered_at_once(server: LiveServer, tenant: str) -> None:
    """One waiter per worker (``max_long_polls=1``), four workers, six long-polls: at least two find their
    worker's waiter taken and are answered at once (pigeonhole), and at most four wait."""
    task = paused(server, tenant)
    url = rest(server, tenant, f"/tasks/{task['id']}?currentGeneration=4")
    durations: list[float] = []

    def poll() -> None:
        started = time.monotonic()
        assert requests.get(url, headers=headers(), timeout=20).json()["metadata"]["generation"] == 4
        durations.append(time.monotonic() - started)

    pollers = [threading.Thread(target=poll) for _ in range(6)]
    for poller in pollers:
        poller.start()
    for poller in pollers:
        poller.join(20)
    quick = [d for d in durations if d < LONG_POLL_SECONDS - 1]
    assert len(durations) == 6 and 2 <= len(quick) <= 6, durations
    assert len(durations) - len(quick) <= 4


def test_sixteen_identical_keyed_sends_on_two_servers_execute_once(
    server: LiveServer, other: LiveServer, tenant: str
) -> None:
    """Half the racers go to each server (4 + 2 workers), so the race spans processes by construction."""
    barrier = threading.Barrier(16)
    answers: list[tuple[int, str, str]] = []

    def one(host: LiveServer) -> None:
        tag = new_tag()
        barrier.wait()
        response = send(
            host, tenant, user_message(text(SQUARE_SUM)), tag=tag, **{"Idempotency-Key": "race-1"}
        )
        answers.append((response.status_code, response.json()["task"]["id"], tag))

    threads = [threading.Thread(target=one, args=((server, other)[i % 2],)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == 16 and {status for status, _, _ in answers} == {200}
    assert len({task_id for _, task_id, _ in answers}) == 1
    listed = requests.get(rest(server, tenant, "/tasks"), headers=headers(), timeout=20).json()
    assert listed["totalSize"] == 1  # one execution: one task


@REDIS_ONLY  # claims refusing a changed body and lapsing: the conformance suite runs them on the cluster
def test_a_changed_body_is_refused_and_keys_expire(server: LiveServer, tenant: str) -> None:
    key = {"Idempotency-Key": "once"}
    first = send(server, tenant, user_message(text(SQUARE_SUM)), **key).json()["task"]["id"]
    changed = send(server, tenant, user_message(text("[9] | sum")), **key)
    assert (
        changed.status_code == 409
        and changed.json()["error"]["details"][0]["reason"] == "IDEMPOTENCY_KEY_REUSED"
    )
    time.sleep(KEY_TTL_SECONDS + 0.2)
    again = send(server, tenant, user_message(text(SQUARE_SUM)), **key).json()["task"]["id"]
    assert again != first  # the key lapsed: a new request
