"""Authentication and isolation through real gunicorn workers on real Redis (docs/security.md).

Three workers, every request on a fresh connection (so consecutive requests land on different processes):
principals see only their own tasks and runtime state on every path; a key added to or revoked from the
keys file while the workers run takes effect on every worker within seconds, and a malformed edit keeps
the last good set; JWTs with RSA and EC keys; an open stream ends after its key is revoked; tokens never
reach the server log, the access log included.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from quineling.auth.keyfile import add_key, revoke_keys
from quineling.auth.watch import ParseError
from tests.conftest import REDIS_ONLY
from tests.e2e.client import traced_server
from tests.support.http_bindings import BINDINGS, Binding, CallFailed, expect_not_found, headers
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM, data, result_of, text, user_message
from tests.support.tokens import AUDIENCE, ISSUER, SigningKey, jwks

pytestmark = pytest.mark.slow
WORKERS = 3
RSA, EC = SigningKey.rsa(), SigningKey.ec()
SWEEP = 12  # fresh-connection requests that must all agree, so every worker has answered


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("auth")
    keys = folder / "keys"
    tokens = {name: add_key(keys, name) for name in ("alice", "bob")}
    (folder / "jwks.json").write_text(json.dumps(jwks(RSA, EC)))
    return {"keys": keys, "tokens": tokens, "jwks": folder / "jwks.json"}


def auth_settings(credentials: dict[str, Any]) -> dict[str, str | int]:
    """Both masters' credentials: the keys file and the JWT issuer's keys."""
    return {
        "auth_keys_file": str(credentials["keys"]),
        "auth_jwks": str(credentials["jwks"]),
        "auth_jwt_issuer": ISSUER,
        "auth_jwt_audience": AUDIENCE,
    }


@pytest.fixture(scope="module")
def server(credentials: dict[str, Any], redis_store_url: str) -> Iterator[LiveServer]:
    with traced_server(
        store_url=redis_store_url,
        workers=WORKERS,
        threads=4,
        keepalive_seconds=0.5,
        **auth_settings(credentials),
    ) as live:
        yield live


@pytest.fixture(scope="module")
def other(server: LiveServer, credentials: dict[str, Any]) -> Iterator[LiveServer]:
    """A second gunicorn master on the same store prefix and credentials: what is sent to it is served by another
    process by construction (which worker of one master takes a fresh connection is the kernel's choice)."""
    with live_server(share_with=server, keepalive_seconds=0.5, **auth_settings(credentials)) as live:
        yield live


def status_of(server: LiveServer, token: str | None) -> int:
    """HTTP status of one ListTasks on a fresh connection."""
    extra = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(server.url("/a2a/rest/tasks"), headers=headers(**extra), timeout=10).status_code


def every_worker_answers(server: LiveServer, token: str | None, status: int, within: float = 30.0) -> float:
    """Waits for ``SWEEP`` consecutive fresh-connection requests all answering ``status``; returns the seconds
    until the streak began (when the last other answer came), so a loaded box's slow requests do not count
    as the change being slow to take effect. ``within`` only bounds the wait."""
    started = time.monotonic()
    streak, effective = 0, 0.0
    while streak < SWEEP:
        assert time.monotonic() - started < within, f"workers did not all answer {status} in {within} s"
        if status_of(server, token) == status:
            streak += 1
        else:
            streak, effective = 0, time.monotonic() - started
        time.sleep(0.02)
    return effective


def all_answer(server: LiveServer, token: str | None, status: int) -> None:
    """``SWEEP`` fresh-connection requests in a row, every one answering ``status``."""
    answers = [status_of(server, token) for _ in range(SWEEP)]
    assert answers == [status] * SWEEP


@pytest.mark.parametrize("kind", list(BINDINGS))
def test_principals_are_isolated_across_workers(
    server: LiveServer, other: LiveServer, credentials: dict[str, Any], kind: str
) -> None:
    """Alice's requests go to one server, Bob's to another process on the same store."""
    tenant = f"live-{uuid.uuid4().hex[:8]}"
    alice = BINDINGS[kind](server, tenant=tenant, token=credentials["tokens"]["alice"])
    bob = BINDINGS[kind](other, tenant=tenant, token=credentials["tokens"]["bob"])
    created = result_of(alice.send(user_message(text(SQUARE_SUM))))["result"]["artifact"]["id"]
    waiting = alice.send(user_message(text("[1,2] | sum")))
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    for attempt in (
        lambda: bob.get_task(waiting["id"]),
        lambda: bob.cancel(waiting["id"]),
        lambda: bob.send(user_message(text(SQUARE_SUM), task_id=waiting["id"])),
        lambda: bob.subscribe(waiting["id"]),
    ):
        with pytest.raises(CallFailed) as refused:
            attempt()
        expect_not_found(bob, refused.value)
    inspected = bob.send(user_message(data({"operation": "inspect", "artifactId": created})))
    assert inspected["status"]["message"]["metadata"]["quinelingError"]["code"] == "not-found"
    assert alice.list_tasks(10)["totalSize"] == 2 and bob.list_tasks(10)["totalSize"] == 1
    assert alice.get_task(waiting["id"])["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


def test_jwts_signed_with_rsa_and_ec_keys(server: LiveServer) -> None:
    for key in (RSA, EC):
        assert status_of(server, key.token("jwt-user")) == 200
        assert status_of(server, key.token("jwt-user", exp=int(time.time()) - 120)) == 401
        assert status_of(server, key.token("jwt-user", aud="someone-else")) == 401
    rest = BINDINGS["rest"](server, token=RSA.token("dana"))
    mine = rest.send(user_message(text("[1,2] | sum")))
    other = BINDINGS["rest"](server, token=EC.token("erin"))
    with pytest.raises(CallFailed) as refused:
        other.get_task(mine["id"])
    expect_not_found(other, refused.value)
    assert BINDINGS["rest"](server, token=EC.token("dana")).get_task(mine["id"])["id"] == mine["id"]


@REDIS_ONLY  # every worker watches the keys file itself: the store plays no part
def test_keys_added_and_revoked_while_the_workers_run(
    server: LiveServer, credentials: dict[str, Any]
) -> None:
    keys: Path = credentials["keys"]
    carol = add_key(keys, "carol")
    added = every_worker_answers(server, carol, 200)
    revoke_keys(keys, "carol")
    revoked = every_worker_answers(server, carol, 401)
    assert added < 5 and revoked < 5, (added, revoked)
    dave = add_key(keys, "dave")
    every_worker_answers(server, dave, 200)
    keys.write_text(keys.read_text() + "not a key line\n")  # a malformed edit: the last good set stays
    time.sleep(1.5)  # past the watcher's check interval: the next request on each worker reads the bad file
    all_answer(server, dave, 200)  # not one refusal: no worker dropped the last good set
    all_answer(server, credentials["tokens"]["alice"], 200)
    assert "keys file" in server.log_text() and "not reloaded, keeping the last good one" in server.log_text()
    with pytest.raises(ParseError, match="line 4"):  # quineling keys edits only a file the server accepts
        revoke_keys(keys, "dave")
    assert status_of(server, dave) == 200
    keys.write_text("".join(line for line in keys.read_text().splitlines(True) if "not a key" not in line))
    revoke_keys(keys, "dave")
    every_worker_answers(server, dave, 401)


@REDIS_ONLY  # the same per-worker keys-file check ends the stream
def test_an_open_stream_ends_when_its_key_is_revoked(server: LiveServer, credentials: dict[str, Any]) -> None:
    keys: Path = credentials["keys"]
    frank = add_key(keys, "frank")
    every_worker_answers(server, frank, 200)
    binding: Binding = BINDINGS["jsonrpc"](server, token=frank)
    waiting = binding.send(user_message(text("[1,2] | sum")))
    with binding.subscribe(waiting["id"]) as stream:
        first = next(stream)
        assert first["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        revoke_keys(keys, "frank")
        started = time.monotonic()
        assert list(stream) == []  # keep-alives only, then the end: no further event
        assert time.monotonic() - started < 5
    assert status_of(server, frank) == 401


def test_tokens_never_reach_the_server_log(server: LiveServer, credentials: dict[str, Any]) -> None:
    tokens = [*credentials["tokens"].values(), RSA.token("gina"), "qk_definitely-wrong"]
    for token in tokens:
        status_of(server, token)
        requests.post(
            server.url("/a2a/jsonrpc"),
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
            headers=headers(Authorization=f"Bearer {token}"),
            timeout=10,
        )
    log = server.log_text()
    assert log, "the access log is on in this server"
    for token in tokens:
        assert token not in log and token[-20:] not in log
