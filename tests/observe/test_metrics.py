"""The metrics, in process (single-process mode: the values live in this process's registry, so each test
reads how much a value grew): labels from closed sets, JSON-RPC errors under their reason, outages apart from
bugs, the runtime's operations and the task states, stores' round trips and errors, open streams, rate-limit
refusals, and who may scrape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask, Response, request
from redis import exceptions as rex

from quineling.a2a.http.streams import StreamSlots
from quineling.app import create_app
from quineling.observe import metrics
from quineling.runtime.errors import QuinelingError
from stores.errors import StoreUnavailable
from stores.redis.connection import Connection
from tests.support.messages import SQUARE_SUM, data, text, user_message
from tests.support.principals import keys_file

V1 = {"A2A-Version": "1.0"}


def value(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


class Growth:
    """How much each named sample grew since this was made."""

    def __init__(self, *samples: tuple[str, dict[str, str]]) -> None:
        self.samples = samples
        self.before = [value(name, **labels) for name, labels in samples]

    def __call__(self) -> list[float]:
        return [value(n, **labels) - b for (n, labels), b in zip(self.samples, self.before, strict=True)]


def rpc(method: str, params: Any, rpc_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


@pytest.fixture
def client() -> Any:
    return create_app().test_client()


def requests_total(binding: str, method: str, outcome: str) -> tuple[str, dict[str, str]]:
    return "quineling_requests_total", {"binding": binding, "method": method, "outcome": outcome}


def test_a_jsonrpc_error_answered_with_http_200_counts_under_its_reason(client: Any) -> None:
    grew = Growth(
        requests_total("jsonrpc", "GetTask", "TASK_NOT_FOUND"),
        requests_total("jsonrpc", "GetTask", "ok"),
        ("quineling_request_duration_seconds_count", {"binding": "jsonrpc", "method": "GetTask"}),
    )
    answer = client.post("/a2a/jsonrpc", json=rpc("GetTask", {"id": "nope"}), headers=V1)
    assert answer.status_code == 200 and answer.json["error"]["code"] == -32001
    assert grew() == [1, 0, 1]


def test_every_binding_and_outcome_is_labelled(client: Any) -> None:
    grew = Growth(
        requests_total("rest", "SendMessage", "ok"),
        requests_total("rest", "GetTask", "TASK_NOT_FOUND"),
        requests_total("v03", "tasks/get", "TASK_NOT_FOUND"),
        requests_total("discovery", "GetAgentCard", "ok"),
        requests_total("jsonrpc", "none", "INVALID_REQUEST"),
        requests_total("rest", "none", "METHOD_NOT_FOUND"),
        requests_total("other", "none", "HTTP_404"),
    )
    sent = client.post("/a2a/rest/message:send", json={"message": user_message(text(SQUARE_SUM))}, headers=V1)
    assert sent.status_code == 200
    assert client.get("/a2a/rest/tasks/nope", headers=V1).status_code == 404
    legacy = client.post("/a2a/jsonrpc", json=rpc("tasks/get", {"id": "nope"}))
    assert legacy.json["error"]["code"] == -32001
    assert client.get("/.well-known/agent-card.json").status_code == 200
    assert (
        client.post("/a2a/jsonrpc", json={"jsonrpc": "1.0", "id": 1, "method": "GetTask"}).status_code == 200
    )
    assert client.get("/a2a/rest/no-such-route", headers=V1).status_code == 404
    assert client.get("/nowhere").status_code == 404
    assert grew() == [1, 1, 1, 1, 1, 1, 1]


def test_a_method_the_caller_makes_up_is_never_a_label(client: Any) -> None:
    invented = "Invented<script>" + "x" * 200
    grew = Growth(requests_total("jsonrpc", "unknown", "METHOD_NOT_FOUND"))
    client.post("/a2a/jsonrpc", json=rpc(invented, {}), headers=V1)
    assert grew() == [1]
    body, _ = metrics.exposition()
    assert b"Invented" not in body


def test_a_store_outage_is_unavailable_not_an_internal_error() -> None:
    app = create_app(config={"store_url": "redis://127.0.0.1:1/0"})  # nothing listens on port 1
    grew = Growth(
        requests_total("jsonrpc", "GetTask", "UNAVAILABLE"),
        requests_total("jsonrpc", "GetTask", "INTERNAL_ERROR"),
        ("quineling_store_errors_total", {"kind": "ConnectionError"}),
        ("quineling_store_round_trips_total", {}),
    )
    answer = app.test_client().post("/a2a/jsonrpc", json=rpc("GetTask", {"id": "x"}), headers=V1)
    assert answer.json["error"]["code"] == -32603
    unavailable, internal, errors, round_trips = grew()
    assert (unavailable, internal) == (1, 0)
    assert errors >= 1 and round_trips >= errors


def test_runtime_operations_and_task_transitions(client: Any) -> None:
    op = "quineling_runtime_operations_total"
    states = "quineling_task_transitions_total"
    grew = Growth(
        (op, {"operation": "create", "outcome": "ok"}),
        (op, {"operation": "create", "outcome": "clarify"}),
        (op, {"operation": "run", "outcome": "not-found"}),
        (op, {"operation": "unknown", "outcome": "unknown-operation"}),
        (states, {"state": "TASK_STATE_SUBMITTED"}),
        (states, {"state": "TASK_STATE_COMPLETED"}),
        (states, {"state": "TASK_STATE_INPUT_REQUIRED"}),
        (states, {"state": "TASK_STATE_FAILED"}),
        (states, {"state": "TASK_STATE_CANCELED"}),
    )
    send = "/a2a/rest/message:send"
    client.post(send, json={"message": user_message(text(SQUARE_SUM))}, headers=V1)
    waiting = client.post(send, json={"message": user_message(text("[1,2] | sum"))}, headers=V1).json["task"]
    client.post(
        send,
        json={"message": user_message(data({"operation": "run", "artifactId": "sha256:" + "0" * 64}))},
        headers=V1,
    )
    client.post(send, json={"message": user_message(data({"operation": "made-up-op"}))}, headers=V1)
    assert client.post(f"/a2a/rest/tasks/{waiting['id']}:cancel", headers=V1).status_code == 200
    assert grew() == [1, 1, 1, 1, 4, 1, 1, 2, 1]


def test_the_observed_dispatcher_counts_what_the_runtime_raises() -> None:
    class Failing:
        store = None

        def __init__(self, error: Exception) -> None:
            self.error = error

        def dispatch(self, request: Any, *, scope: str, attach: Any) -> Any:
            raise self.error

    op = "quineling_runtime_operations_total"
    grew = Growth(
        (op, {"operation": "run", "outcome": "store-unavailable"}),
        (op, {"operation": "run", "outcome": "busy"}),
    )
    for error in (StoreUnavailable("down"), QuinelingError("busy", "try again")):
        with pytest.raises(type(error)):
            metrics.ObservedDispatcher(Failing(error)).dispatch({"operation": "run"}, scope="s", attach=None)
    assert grew() == [1, 1]


def test_the_redis_connection_reports_round_trips_and_errors() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.trips, self.errors = 0, []

        def round_trip(self) -> None:
            self.trips += 1

        def error(self, kind: str) -> None:
            self.errors.append(kind)

    class Client:
        connection_pool = None

        def ping(self) -> bool:
            raise rex.TimeoutError("stalled")

    recorder = Recorder()
    connection = Connection(Client(), observer=recorder)
    with pytest.raises(StoreUnavailable):
        connection._guard(Client().ping, repeatable=False)
    with pytest.raises(StoreUnavailable):  # a read is repeated once after a connection error: two trips
        connection._guard(lambda: (_ for _ in ()).throw(rex.ConnectionError("reset")), repeatable=True)
    assert recorder.trips == 3 and recorder.errors == ["TimeoutError", "ConnectionError"]


def test_open_streams_follow_the_slots() -> None:
    slots = StreamSlots(2, watch=metrics.streams_open)
    first = slots.acquire()
    second = slots.acquire()
    assert value("quineling_streams_open") == 2 and slots.acquire() is None
    assert first is not None and second is not None
    first()
    first()  # a second release changes nothing
    assert value("quineling_streams_open") == 1
    second()
    assert value("quineling_streams_open") == 0


def test_rate_limit_refusals_of_the_a2a_endpoints_are_counted() -> None:
    """Any HTTP 429 an A2A endpoint answers counts, whatever refused it (here a stand-in limiter). A hook added
    after create_app is Flask's alone: the lean JSON-RPC path in front of Flask would not run it, so it is off."""
    app = create_app(config={"lean_jsonrpc": False})

    @app.before_request
    def limiter() -> Response | None:
        return Response("{}", status=429) if request.headers.get("X-Over") else None

    grew = Growth(
        ("quineling_rate_limited_total", {"binding": "jsonrpc"}),
        ("quineling_rate_limited_total", {"binding": "rest"}),
        requests_total("jsonrpc", "none", "HTTP_429"),
    )
    client = app.test_client()
    client.post("/a2a/jsonrpc", json=rpc("GetTask", {"id": "x"}), headers={**V1, "X-Over": "1"})
    client.get("/a2a/rest/tasks/x", headers={**V1, "X-Over": "1"})
    client.get("/a2a/rest/tasks/x", headers=V1)
    client.get("/.well-known/agent-card.json", headers={"X-Over": "1"})  # not an A2A endpoint: not counted
    assert grew() == [1, 1, 1]


def test_a_rate_limit_refusal_counts_under_its_reason() -> None:
    """docs/deployment.md: `outcome` is the A2A error reason the answer carries, RATE_LIMIT_EXCEEDED for a 429
    of the rate limiter (not HTTP_429), on both bindings."""
    client = create_app(config={"rate_limit": "1/minute"}).test_client()
    grew = Growth(
        requests_total("rest", "GetTask", "RATE_LIMIT_EXCEEDED"),
        requests_total("jsonrpc", "none", "RATE_LIMIT_EXCEEDED"),
    )
    client.get("/a2a/rest/tasks/x", headers=V1)
    refused = client.get("/a2a/rest/tasks/x", headers=V1)
    again = client.post("/a2a/jsonrpc", json=rpc("GetTask", {"id": "x"}), headers=V1)
    assert refused.status_code == again.status_code == 429
    assert grew() == [1, 1]


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[Flask, str]]:
    path, tokens = keys_file(tmp_path, "alice")
    yield create_app(config={"auth_keys_file": str(path)}), tokens["alice"]


def test_metrics_need_a_valid_token_when_authentication_is_on(secured: tuple[Flask, str]) -> None:
    app, token = secured
    client = app.test_client()
    missing = client.get("/metrics")
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/metrics", headers={"Authorization": "Bearer qk_wrong"}).status_code == 401
    scraped = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert scraped.status_code == 200 and b"quineling_requests_total" in scraped.data
    assert scraped.content_type.startswith("text/plain")


def test_metrics_public_opens_the_scrape_but_not_the_bindings(tmp_path: Path) -> None:
    path, _ = keys_file(tmp_path, "alice")
    client = create_app(config={"auth_keys_file": str(path), "metrics_public": True}).test_client()
    assert client.get("/metrics").status_code == 200
    assert client.post("/a2a/jsonrpc", json=rpc("GetTask", {"id": "x"}), headers=V1).status_code == 401


def test_without_authentication_the_scrape_is_open(client: Any) -> None:
    assert client.get("/metrics").status_code == 200
