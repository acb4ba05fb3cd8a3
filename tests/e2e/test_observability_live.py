"""Metrics and logs of a real two-worker gunicorn server on real Redis, with authentication on.

The scrape sums both workers (the requests below are spread over them: each on a fresh connection), counts a
JSON-RPC error — answered with HTTP 200 — under its reason, keeps an exited worker's counts while dropping its
open streams, and needs a valid token. The log (the server's stdout and stderr, not a terminal, so JSON by
default) is one JSON object per line; every request can be found by the id its response echoed, in the app's
``request`` event and gunicorn's ``access`` event alike; a token and a thought sent to the server never appear.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import REDIS_ONLY
from tests.support.live import LiveServer, live_server
from tests.support.messages import data, text, user_message
from tests.support.principals import keys_file

pytestmark = pytest.mark.slow
TIMEOUT = 10


@pytest.fixture(scope="module")
def token(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    path, tokens = keys_file(tmp_path_factory.mktemp("obs"), "alice")
    return {"file": str(path), "alice": tokens["alice"]}


@pytest.fixture(scope="module")
def server(token: dict[str, str], redis_store_url: str) -> Iterator[LiveServer]:
    with live_server(
        store_url=redis_store_url, workers=2, access_log=1, auth_keys_file=token["file"], keepalive_seconds=1
    ) as live:
        yield live


def call(server: LiveServer, token: str, method: str, params: Any, **headers: str) -> requests.Response:
    return requests.post(
        server.url("/a2a/jsonrpc"),
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={"A2A-Version": "1.0", "Authorization": f"Bearer {token}", "Connection": "close", **headers},
        timeout=TIMEOUT,
    )


def scrape(server: LiveServer, token: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    answer = requests.get(
        server.url("/metrics"), headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT
    )
    assert answer.status_code == 200, answer.text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def sample(values: dict[Any, float], name: str, **labels: str) -> float:
    return values.get((name, frozenset(labels.items())), 0.0)


def log_lines(server: LiveServer) -> list[dict[str, Any]]:
    """Every complete line of the server's log (one may be being written), each of which must be one JSON
    object."""
    text = server.log_text()
    lines = text[: text.rfind("\n") + 1].splitlines()
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON log line: {line!r}") from None
    return parsed


def events_for(server: LiveServer, request_id: str, wait: float = 5.0) -> dict[str, dict[str, Any]]:
    """The app's ``request`` and gunicorn's ``access`` event of one request (access is written when the
    response has been sent, so it may come a moment later)."""
    deadline = time.monotonic() + wait
    while True:
        found = {line["event"]: line for line in log_lines(server) if line.get("request_id") == request_id}
        if {"request", "access"} <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def served_by(server: LiveServer, request_ids: list[str]) -> set[int]:
    """The worker pids the app's ``request`` lines name for ``request_ids``."""
    wanted = set(request_ids)
    return {
        line["pid"]
        for line in log_lines(server)
        if line.get("event") == "request" and line.get("request_id") in wanted
    }


def test_the_scrape_sums_both_workers_and_counts_jsonrpc_errors_by_reason(
    server: LiveServer, token: dict[str, str]
) -> None:
    """Batches of 16 failing GetTasks until both workers have served some (which worker accepts a connection is
    the kernel's choice: under gevent one worker can take a whole batch), then every one of them is counted."""
    before = scrape(server, token["alice"])
    ids: list[str] = []
    for _ in range(12):
        batch = [f"obs-{uuid.uuid4().hex}" for _ in range(16)]
        for request_id in batch:
            time.sleep(0.02)  # the worker that served the last request goes idle, so either may accept
            answer = call(
                server, token["alice"], "GetTask", {"id": "no-such-task"}, **{"X-Request-ID": request_id}
            )
            assert answer.status_code == 200 and answer.json()["error"]["code"] == -32001
            assert answer.headers["X-Request-ID"] == request_id
        ids += batch
        events_for(server, batch[-1])  # the batch's lines are written
        if len(served_by(server, ids)) == 2:
            break
    assert len(served_by(server, ids)) == 2, "every request was served by one worker: the sum shows nothing"
    after = scrape(server, token["alice"])
    labels = {"binding": "jsonrpc", "method": "GetTask", "outcome": "TASK_NOT_FOUND"}
    assert sample(after, "quineling_requests_total", **labels) - sample(
        before, "quineling_requests_total", **labels
    ) == len(ids)
    timed = {"binding": "jsonrpc", "method": "GetTask"}
    assert sample(after, "quineling_request_duration_seconds_count", **timed) - sample(
        before, "quineling_request_duration_seconds_count", **timed
    ) == len(ids)
    assert sample(after, "quineling_store_round_trips_total") > sample(
        before, "quineling_store_round_trips_total"
    )
    for request_id in ids[:16] + ids[-16:]:
        events = events_for(server, request_id)
        request, access = events["request"], events["access"]
        assert request["level"] == "INFO" and request["principal"] == "alice"
        assert (request["binding"], request["method"], request["outcome"], request["status"]) == (
            "jsonrpc", "GetTask", "TASK_NOT_FOUND", 200,
        )  # fmt: skip
        assert request["task_id"] == "no-such-task" and request["client"] == "127.0.0.1"
        assert (
            access["status"] == 200 and access["path"] == "/a2a/jsonrpc" and access["pid"] == request["pid"]
        )


def test_the_scrape_needs_a_valid_token(server: LiveServer, token: dict[str, str]) -> None:
    missing = requests.get(server.url("/metrics"), timeout=TIMEOUT)
    assert missing.status_code == 401 and "Bearer" in missing.headers["WWW-Authenticate"]
    wrong = requests.get(server.url("/metrics"), headers={"Authorization": "Bearer qk_nope"}, timeout=TIMEOUT)
    assert wrong.status_code == 401
    assert scrape(server, token["alice"])


def test_tokens_and_thoughts_never_reach_the_logs(server: LiveServer, token: dict[str, str]) -> None:
    marker = f"zebra{uuid.uuid4().hex[:12]}"
    thought = f"[3,4] | square | sum | report {marker}"
    request_id = f"obs-{uuid.uuid4().hex}"
    sent = call(
        server,
        token["alice"],
        "SendMessage",
        {"message": user_message(text(thought))},
        **{"X-Request-ID": request_id},
    )
    assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    streamed = requests.post(
        server.url("/a2a/rest/message:stream"),
        json={"message": user_message(data({"operation": "create", "thought": thought}))},
        headers={"A2A-Version": "1.0", "Authorization": f"Bearer {token['alice']}"},
        timeout=TIMEOUT,
    )
    assert streamed.status_code == 200 and marker in streamed.text
    wrong_token = f"qk_{marker}"
    refused = call(server, wrong_token, "SendMessage", {"message": user_message(text(thought))})
    assert refused.status_code == 401
    events = events_for(server, request_id)
    assert events["request"]["operation"] == "create" and events["request"]["outcome"] == "ok"
    time.sleep(0.3)  # the last access lines
    log = server.log_text()
    assert marker not in log and token["alice"] not in log and token["alice"][-16:] not in log
    log_lines(server)  # and every line is JSON


@REDIS_ONLY  # the metrics of exited workers are files of the master, not the store
def test_an_exited_worker_keeps_its_counts_and_drops_its_streams(
    server: LiveServer, token: dict[str, str]
) -> None:
    alice = token["alice"]
    waiting = call(server, alice, "SendMessage", {"message": user_message(text("[1,2] | sum"))}).json()
    task_id = waiting["result"]["task"]["id"]
    request_id = f"obs-{uuid.uuid4().hex}"
    stream = requests.get(
        server.url(f"/a2a/rest/tasks/{task_id}:subscribe"),
        headers={"A2A-Version": "1.0", "Authorization": f"Bearer {alice}", "X-Request-ID": request_id},
        stream=True,
        timeout=TIMEOUT,
    )
    try:
        assert stream.status_code == 200
        lines = stream.iter_lines()  # kept: a dropped iterator would close the connection
        # The opening frame's data (after its id: and retry: lines): the stream is open and holds its slot.
        assert any(line.startswith(b"data: ") for line in lines)
        before = scrape(server, alice)
        assert sample(before, "quineling_streams_open") == 1
        pid = events_for(server, request_id, wait=5)["request"]["pid"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 15
        while True:
            after = scrape(server, alice)
            if sample(after, "quineling_streams_open") == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        stream.close()
    assert sample(after, "quineling_streams_open") == 0, "the dead worker's stream is still counted"
    counted = [
        (key, value) for key, value in before.items() if key[0] == "quineling_requests_total" and value > 0
    ]
    assert counted and all(after.get(key, 0) >= value for key, value in counted), "counts were lost"
    # gunicorn replaced the worker, and the replacement serves (and counts) requests too.
    deadline = time.monotonic() + 30
    while sum(line["event"].startswith("Booting worker") for line in log_lines(server)) < 3:
        assert time.monotonic() < deadline, "no worker replaced the one that exited"
        time.sleep(0.2)
    replacement = [line["pid"] for line in log_lines(server) if line["event"].startswith("Booting worker")][
        -1
    ]
    served = set()
    while replacement not in served:
        assert time.monotonic() < deadline, "the replacement worker served nothing"
        request_id = f"obs-{uuid.uuid4().hex}"
        call(server, alice, "GetTask", {"id": task_id}, **{"X-Request-ID": request_id})
        served.add(events_for(server, request_id)["request"]["pid"])
