"""The app on real Redis through silence, a restart and a pause: streams outlive the read timeout, the first
request after Redis comes back succeeds on every thread's connection, and a stalled Redis answers 503 within
the configured deadline."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from quineling.app import create_app
from tests.conftest import REDIS_URL, needs_redis
from tests.support.bindings import V1
from tests.support.redis_keys import delete_under
from tests.support.redis_server import needs_redis_server, private_redis
from tests.support.sse import parse_sse

WAITING = {
    "message": {
        "messageId": "m-wait",
        "role": "ROLE_USER",
        "parts": [
            {"mediaType": "application/json", "data": {"operation": "create", "thought": "[1,2,3] | sum"}}
        ],
    }
}


def app_on(url: str, **config: Any) -> Any:
    prefix = f"qt-out-{uuid.uuid4().hex[:10]}"
    return create_app(config={"store_url": url, "store_prefix": prefix, **config}), prefix


def start_waiting_task(client: Any) -> str:
    reply = client.post("/a2a/rest/message:send", json=WAITING, headers=V1)
    assert reply.status_code == 200, reply.get_data(as_text=True)
    task = reply.get_json()["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return str(task["id"])


def silent_subscription(config: dict[str, Any], silence: float) -> tuple[list[tuple[float, str]], Any]:
    """Subscribe, let nothing happen for ``silence`` seconds, then cancel the task from another client:
    the stream's events with their arrival times."""
    app, prefix = app_on(REDIS_URL, **config)
    try:
        client = app.test_client()
        task_id = start_waiting_task(client)
        response = client.post(f"/a2a/rest/tasks/{task_id}:subscribe", headers=V1)
        assert response.status_code == 200
        start = time.monotonic()
        cancel = threading.Timer(
            silence, lambda: app.test_client().post(f"/a2a/rest/tasks/{task_id}:cancel", headers=V1)
        )
        cancel.start()
        seen: list[tuple[float, str]] = []
        last: Any = None

        def timed(chunks: Iterator[bytes]) -> Iterator[bytes]:
            for chunk in chunks:
                if chunk.startswith(b":"):
                    seen.append((time.monotonic() - start, "keepalive"))
                yield chunk

        for kind, event in parse_sse(timed(iter(response.response))):
            seen.append((time.monotonic() - start, kind))
            last = event
            if time.monotonic() - start > silence + 10:  # bounded: never wait on a broken stream
                break
        cancel.join()
        return seen, last
    finally:
        delete_under(REDIS_URL, prefix)


@pytest.mark.redis
@needs_redis
@pytest.mark.slow
def test_a_subscription_outlives_the_old_five_second_read_timeout() -> None:
    """Default Redis deadlines, a keep-alive period longer than the 5 s read timeout: the blocking read waits
    the whole period, and 7.5 s of silence later the next event arrives."""
    seen, last = silent_subscription({"keepalive_seconds": 6}, silence=7.5)
    kinds = [kind for _, kind in seen]
    assert kinds == ["message", "keepalive", "message"], seen
    assert 5.9 < seen[1][0] < 7.0  # the keep-alive came after one whole period, not at a 5 s timeout
    assert seen[-1][0] >= 7.5
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


@pytest.mark.redis
@needs_redis
def test_the_blocking_read_has_a_read_timeout_of_its_own() -> None:
    """A 0.5 s reply deadline, a 1 s keep-alive: every call must answer within 0.5 s but the blocking event
    read waits a whole second, twice, then delivers the cancellation."""
    config = {"keepalive_seconds": 1, "redis_timeout_seconds": 0.5}
    seen, last = silent_subscription(config, silence=2.5)
    assert [kind for _, kind in seen] == ["message", "keepalive", "keepalive", "message"], seen
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


@pytest.mark.slow
@needs_redis_server
def test_the_first_request_after_a_restart_succeeds_on_every_threads_connection() -> None:
    """Each of 12 threads has a connection of its own; Redis is killed and started again on the same port.
    The next request of every thread — reads and writes alike — must succeed: a connection the server closed
    is dropped before anything is sent on it."""
    threads = 12
    with private_redis(aof=True) as server:
        app, _ = app_on(server.url)
        results: dict[int, tuple[int, str]] = {}
        barrier = threading.Barrier(threads + 1, timeout=30)

        def worker(i: int) -> None:
            client = app.test_client()
            task_id = start_waiting_task(client)  # this thread's connection is now open
            barrier.wait()
            barrier.wait()  # Redis was killed and restarted in between
            if i % 3 == 0:
                reply = client.get(f"/a2a/rest/tasks/{task_id}", headers=V1)  # a script read
            elif i % 3 == 1:
                reply = client.post("/a2a/rest/message:send", json=WAITING, headers=V1)  # a commit
            else:
                reply = client.post(f"/a2a/rest/tasks/{task_id}:cancel", headers=V1)  # a load, then a save
            results[i] = (reply.status_code, reply.get_data(as_text=True)[:200])

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        barrier.wait()
        server.kill()
        server.start()  # returns once it answers PING
        barrier.wait()
        for w in workers:
            w.join(timeout=30)
        failed = {i: r for i, r in results.items() if r[0] != 200}
        assert len(results) == threads and not failed, failed
        app.extensions["quineling"].extras["backend"].close()


@pytest.mark.slow
@needs_redis_server
def test_a_stalled_redis_answers_503_within_the_deadline_then_recovers() -> None:
    """SIGSTOP: the connection stays open and nothing answers. A request fails after the reply deadline with
    the retryable 503 instead of hanging, and once Redis resumes the same thread's next request succeeds."""
    with private_redis() as server:
        app, _ = app_on(server.url, redis_timeout_seconds=0.5, redis_connect_timeout_seconds=0.5)
        client = app.test_client()
        task_id = start_waiting_task(client)
        with server.paused():
            start = time.monotonic()
            stalled = client.get(f"/a2a/rest/tasks/{task_id}", headers=V1)
            took = time.monotonic() - start
            listed = client.get("/a2a/rest/tasks", headers=V1)
        assert stalled.status_code == 503 and stalled.headers["Retry-After"] == "1"
        assert 0.4 < took < 2.0, took
        assert listed.status_code == 503
        again = client.get(f"/a2a/rest/tasks/{task_id}", headers=V1)
        assert again.status_code == 200, again.get_data(as_text=True)
        assert again.get_json()["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        app.extensions["quineling"].extras["backend"].close()
