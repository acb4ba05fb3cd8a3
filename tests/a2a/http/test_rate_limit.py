"""Rate limits (docs/deployment.md, "Rate limits"), in process: one budget per principal and per anonymous
client address, X-Forwarded-For only from trusted proxies, the 429 and its headers in each binding's shape,
the exempt paths, a stream counted once, and a store that cannot count answered 503 (never a 500)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import limits
import pytest

from quineling.a2a.client_address import client_address, client_key
from quineling.a2a.http.rate_limit import parse_limits
from quineling.app import create_app
from quineling.settings import ConfigError, load_settings, rate_limit_items, trusted_networks
from stores.errors import StoreError
from stores.rate_counters import MemoryRateCounter
from tests.support.live import free_port
from tests.support.principals import keys_file

V1 = {"A2A-Version": "1.0"}
LIST = "/a2a/rest/tasks"
GET_RPC = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t-1"}}
GET_V03 = {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"id": "t-1"}}
INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def app(**config: Any) -> Any:
    return create_app(config={"tenants": "*", "keepalive_seconds": 0.2, **config}).test_client()


def statuses(client: Any, n: int, headers: dict[str, str] | None = None, **environ: str) -> list[int]:
    return [
        client.get(LIST, headers={**V1, **(headers or {})}, environ_base=environ).status_code
        for _ in range(n)
    ]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# --- whose budget ---------------------------------------------------------------------------------------


def test_one_principal_exhausting_its_budget_never_limits_another(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, "alice", "bob")
    client = app(rate_limit="3/minute", auth_keys_file=str(path))
    alice, bob = bearer(tokens["alice"]), bearer(tokens["bob"])
    assert statuses(client, 5, alice) == [200, 200, 200, 429, 429]
    # alice's budget is hers on every binding; bob's is untouched, from the same address.
    assert client.post("/a2a/jsonrpc", json=GET_RPC, headers={**V1, **alice}).status_code == 429
    assert statuses(client, 3, bob) == [200, 200, 200]
    assert statuses(client, 1, bob) == [429]


def test_unauthenticated_requests_are_refused_401_without_spending_a_budget(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, "alice")
    client = app(rate_limit="2/minute", auth_keys_file=str(path))
    assert statuses(client, 4) == [401] * 4
    assert statuses(client, 3, bearer(tokens["alice"])) == [200, 200, 429]


def test_anonymous_callers_are_counted_per_address() -> None:
    client = app(rate_limit="2/minute")
    assert statuses(client, 3, REMOTE_ADDR="192.0.2.1") == [200, 200, 429]
    assert statuses(client, 2, REMOTE_ADDR="192.0.2.2") == [200, 200]
    # IPv6 per /64: another address of the same /64 shares the budget, another /64 has its own.
    assert statuses(client, 2, REMOTE_ADDR="2001:db8:0:1::1") == [200, 200]
    assert statuses(client, 1, REMOTE_ADDR="2001:db8:0:1::ffff") == [429]
    assert statuses(client, 1, REMOTE_ADDR="2001:db8:0:2::1") == [200]


def test_x_forwarded_for_is_ignored_by_default() -> None:
    client = app(rate_limit="2/minute")
    spoofed = [{"X-Forwarded-For": f"198.51.100.{n}"} for n in range(3)]
    assert [statuses(client, 1, h, REMOTE_ADDR="10.0.0.5")[0] for h in spoofed] == [200, 200, 429]


def test_x_forwarded_for_counts_only_from_a_trusted_proxy() -> None:
    client = app(rate_limit="2/minute", trusted_proxies="10.0.0.0/8, fd00::/8")
    proxy = {"REMOTE_ADDR": "10.0.0.5"}
    # Through the trusted proxy, each forwarded client has its own budget.
    assert statuses(client, 2, {"X-Forwarded-For": "198.51.100.1"}, **proxy) == [200, 200]
    assert statuses(client, 1, {"X-Forwarded-For": "198.51.100.1"}, **proxy) == [429]
    assert statuses(client, 1, {"X-Forwarded-For": "198.51.100.2"}, **proxy) == [200]
    # What the client wrote left of the proxy's entry changes nothing: the right-most untrusted hop counts.
    assert statuses(client, 1, {"X-Forwarded-For": "203.0.113.9, 198.51.100.1"}, **proxy) == [429]
    # From an untrusted peer the header is not read: the peer is the client, whatever it claims.
    other = {"REMOTE_ADDR": "192.0.2.7"}
    assert statuses(client, 2, {"X-Forwarded-For": "198.51.100.3"}, **other) == [200, 200]
    assert statuses(client, 1, {"X-Forwarded-For": "198.51.100.4"}, **other) == [429]


@pytest.mark.parametrize(
    ("peer", "headers", "expected"),
    [
        ("192.0.2.1", ["203.0.113.1"], "192.0.2.1"),  # untrusted peer: header ignored
        ("10.0.0.1", ["203.0.113.1"], "203.0.113.1"),
        ("10.0.0.1", ["1.2.3.4, 203.0.113.1, 10.0.0.2"], "203.0.113.1"),  # trusted hops skipped
        ("10.0.0.1", ["1.2.3.4", "203.0.113.1"], "203.0.113.1"),  # several header lines, in order
        ("10.0.0.1", ["10.0.0.3, 10.0.0.2"], "10.0.0.3"),  # every hop trusted: the farthest one
        ("10.0.0.1", ["not-an-ip, 10.0.0.2"], "10.0.0.2"),  # garbage ends the walk at the last trusted hop
        ("10.0.0.1", ["garbage"], "10.0.0.1"),
        ("10.0.0.1", [], "10.0.0.1"),
        ("::ffff:10.0.0.1", ["[2001:db8::1]"], "2001:db8::1"),  # mapped IPv4 peer, bracketed IPv6 hop
        ("", ["203.0.113.1"], "unknown"),  # a Unix socket peer
    ],
)
def test_client_address(peer: str, headers: list[str], expected: str) -> None:
    assert client_address(peer, headers, trusted_networks("10.0.0.0/8")) == expected


def test_client_key_groups_ipv6_by_64() -> None:
    assert client_key("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
    assert client_key("192.0.2.1") == "192.0.2.1"


# --- the answer ------------------------------------------------------------------------------------------


def error_info(limit: str, retry: str) -> dict[str, Any]:
    metadata = {"retryable": "true", "retryAfterSeconds": retry, "limit": limit}
    return {"@type": INFO, "reason": "RATE_LIMIT_EXCEEDED", "domain": "quineling", "metadata": metadata}


def test_headers_on_every_counted_response_and_the_429_of_each_binding() -> None:
    client = app(rate_limit="2/minute;50/hour")
    first = client.get(LIST, headers=V1)
    assert first.status_code == 200
    assert first.headers["RateLimit-Limit"] == "2"  # the limit closest to exhaustion
    assert first.headers["RateLimit-Remaining"] == "1"
    assert 59 <= int(first.headers["RateLimit-Reset"]) <= 60
    assert first.headers["RateLimit-Policy"] == "2;w=60, 50;w=3600"
    assert "Retry-After" not in first.headers
    assert client.get(LIST, headers=V1).headers["RateLimit-Remaining"] == "0"

    rest = client.get(LIST, headers=V1)
    retry = rest.headers["Retry-After"]
    assert rest.status_code == 429 and 59 <= int(retry) <= 60
    assert rest.headers["RateLimit-Remaining"] == "0" and rest.headers["RateLimit-Limit"] == "2"
    assert rest.headers["RateLimit-Reset"] == retry
    assert rest.mimetype == "application/json" and rest.headers["Cache-Control"] == "no-store"
    message = f"Rate limit exceeded (2 per 1 minute); retry after {retry} seconds"
    assert rest.get_json() == {
        "error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": message,
                  "details": [error_info("2 per 1 minute", retry)]}
    }  # fmt: skip

    rpc = client.post("/a2a/jsonrpc", json=GET_RPC, headers=V1)
    assert rpc.status_code == 429 and rpc.headers["Retry-After"] == retry
    assert rpc.get_json() == {
        "jsonrpc": "2.0", "id": None,
        "error": {"code": -32000, "message": message, "data": [error_info("2 per 1 minute", retry)]},
    }  # fmt: skip

    v03 = client.post("/a2a/jsonrpc", json=GET_V03)  # no A2A-Version: how v0.3 clients call
    assert v03.status_code == 429 and v03.headers["Retry-After"] == retry
    assert v03.get_json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}


def test_retry_after_is_the_exceeded_window_that_ends_last() -> None:
    client = app(rate_limit="1/second;3/hour")
    assert statuses(client, 2) == [200, 429]  # the refused one counts in the hour too
    time.sleep(1.1)  # the per-second window is over; the hourly one holds 2 of 3
    assert statuses(client, 1) == [200]
    refused = client.get(LIST, headers=V1)  # now both are over: the hour decides
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) > 3500
    assert refused.headers["RateLimit-Limit"] == "3"


@pytest.mark.parametrize("path", ["/.well-known/agent-card.json", "/healthz", "/readyz", "/metrics"])
def test_exempt_paths_are_never_counted_nor_limited(path: str) -> None:
    client = app(rate_limit="1/minute")
    assert statuses(client, 2) == [200, 429]  # the budget is spent
    for _ in range(3):
        response = client.get(path)
        assert response.status_code != 429 and "RateLimit-Limit" not in response.headers
    assert client.get("/.well-known/agent-card.json").status_code == 200


def test_exempt_paths_leave_the_budget_alone() -> None:
    client = app(rate_limit="2/minute")
    for path in ("/.well-known/agent-card.json", "/healthz", "/readyz", "/metrics"):
        client.get(path)
    assert statuses(client, 3) == [200, 200, 429]


def test_a_stream_counts_once_when_it_opens() -> None:
    client = app(rate_limit="3/minute")
    message = {"messageId": "m-1", "role": "ROLE_USER",
               "parts": [{"data": {"operation": "create", "thought": "[1,2] | sum"}}]}  # fmt: skip
    sent = client.post("/a2a/rest/message:send", json={"message": message}, headers=V1)  # 1
    task_id = sent.get_json()["task"]["id"]
    stream = client.get(f"/a2a/rest/tasks/{task_id}:subscribe", headers=V1, buffered=False)  # 2
    assert stream.status_code == 200
    frames = iter(stream.response)
    deadline = time.monotonic() + 1.0
    seen = 0
    while time.monotonic() < deadline:  # keep-alives every 0.2 s: frames of one request, not requests
        next(frames)
        seen += 1
    assert seen >= 3
    assert statuses(client, 2) == [200, 429]  # 3, then over
    stream.close()


def test_a_store_that_cannot_count_is_the_retryable_503_not_a_500() -> None:
    client = app(
        rate_limit="5/minute",
        store_url=f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
        redis_connect_timeout_seconds=0.5,
    )
    rest = client.get(LIST, headers=V1)
    assert rest.status_code == 503 and rest.headers["Retry-After"] == "1"
    assert rest.get_json()["error"]["status"] == "UNAVAILABLE"
    assert rest.get_json()["error"]["details"][0]["metadata"]["retryable"] == "true"
    rpc = client.post("/a2a/jsonrpc", json=GET_RPC, headers=V1)
    assert rpc.status_code == 503
    body = rpc.get_json()
    assert body["id"] is None and body["error"]["code"] == -32603
    assert body["error"]["data"][0]["metadata"]["retryable"] == "true"
    v03 = client.post("/a2a/jsonrpc", json=GET_V03)
    assert v03.status_code == 503 and set(v03.get_json()["error"]) == {"code", "message"}
    assert client.get("/healthz").status_code == 200  # exempt: never asks the store


def test_no_limit_configured_means_no_headers_and_no_refusal() -> None:
    client = app()
    responses = [client.get(LIST, headers=V1) for _ in range(30)]
    assert {r.status_code for r in responses} == {200}
    assert all("RateLimit-Limit" not in r.headers for r in responses)


# --- settings ---------------------------------------------------------------------------------------------

VALID = [
    "20/second",
    "20/second;600/minute",
    "5 per 2 hours",
    "10/minute, 100/hour|1000/day",
    "1/year",
    " 3 / 5 seconds ",
]
INVALID = [
    "20",
    "20/fortnight",
    "/second",
    "20/second;",
    "abc",
    "20 / second / minute",
    "0/second",
    "-1/second",
]


@pytest.mark.parametrize("text", VALID)
def test_valid_limits_are_accepted_as_the_limits_library_reads_them(text: str) -> None:
    assert len(rate_limit_items(text)) == len(limits.parse_many(text))
    assert [(x.amount, x.seconds) for x in parse_limits(text)] == [
        (item.amount, item.get_expiry()) for item in limits.parse_many(text)
    ]
    assert load_settings({"rate_limit": text}).rate_limit == text.strip()


@pytest.mark.parametrize("text", INVALID)
def test_invalid_limits_stop_the_start_naming_the_variable(text: str) -> None:
    with pytest.raises(ConfigError, match="QUINELING_RATE_LIMIT"):
        load_settings({"rate_limit": text})


@pytest.mark.parametrize("text", ["10.0.0.0/33", "example.com", "10.0.0.1/8/8"])
def test_invalid_trusted_proxies_stop_the_start(text: str) -> None:
    with pytest.raises(ConfigError, match="QUINELING_TRUSTED_PROXIES"):
        load_settings({"trusted_proxies": text})


def test_rate_limit_bodies_are_json_everywhere() -> None:
    client = app(rate_limit="1/minute")
    client.get(LIST, headers=V1)
    for response in (client.get("/a2a/rest/openapi.json"), client.get("/nowhere")):
        assert response.status_code == 429
        assert json.loads(response.get_data())["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_a_refused_caller_is_logged_once_per_window(caplog: pytest.LogCaptureFixture) -> None:
    client = app(rate_limit="1/minute")
    with caplog.at_level(logging.INFO, logger="quineling.a2a.http.rate_limit"):
        assert statuses(client, 4, REMOTE_ADDR="192.0.2.9") == [200, 429, 429, 429]
    lines = [r.getMessage() for r in caplog.records if r.name == "quineling.a2a.http.rate_limit"]
    assert len(lines) == 1 and lines[0].startswith("rate limited: a:192.0.2.9 is over 1 per 1 minute")


def test_a_store_that_refuses_the_count_is_the_retryable_503_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, identity: str, windows: Any) -> Any:
        raise StoreError("Redis refused the call: ResponseError: WRONGTYPE")

    monkeypatch.setattr(MemoryRateCounter, "hit", refuse)
    client = app(rate_limit="5/minute")
    rest = client.get(LIST, headers=V1)
    assert rest.status_code == 503 and rest.headers["Retry-After"] == "1"
    error = rest.get_json()["error"]
    assert error["code"] == 503 and error["status"] == "UNAVAILABLE"
    assert error["message"] == "Rate limiting is unavailable; retry later"
