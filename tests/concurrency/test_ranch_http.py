"""Exactly-once ranch effects over the wire: through gunicorn with 4 workers on one real Redis.

Many client threads fire SendMessage requests together, each on a fresh connection, at a live server; the
outcome is read from the task exactly as a client sees it: the ``quineling-result`` artifact on success, the
failed task's ``status.message.metadata.quinelingError`` on refusal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from quineling.runtime.errors import QuinelingError
from tests.concurrency.support import fire_threads, one_acknowledgement, one_winner, stored, wipe_state
from tests.runtime.test_ranch_support import (
    SUM_CREDITS,
    admission,
    call,
    command,
    command_request,
    courting_pair,
    create,
    garden,
    inspect_world,
    pairing_input,
    ready,
    world,
    world_target,
)
from tests.support.http_bindings import JsonRpc
from tests.support.live import LiveServer, live_server
from tests.support.messages import data, runtime_outcome, user_message

pytestmark = pytest.mark.slow

CLIENTS = 12
WORKERS = 4


@pytest.fixture(scope="module")
def server(redis_store_url: str) -> Iterator[LiveServer]:
    """One 4-worker server for the module; its access log names the worker pid of every request."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GUNICORN_CMD_ARGS", "--access-logformat 'pid=%(p)s %(r)s'")
        with live_server(store_url=redis_store_url, workers=WORKERS, access_log=1, log_format="text") as live:
            yield live


class HttpRuntime:
    """``dispatch`` over JSON-RPC SendMessage, one fresh connection per request (a client's view)."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.client = JsonRpc(server, timeout=60)

    def send(self, request: dict[str, Any]) -> tuple[str, Any]:
        """``("ok", raw {operation, result} JSON)`` or ``("error", quinelingError)`` for one request."""
        task = self.client.send(user_message(data(request)))
        kind, value = runtime_outcome(task)
        assert kind == "error" or task["status"]["state"] == "TASK_STATE_COMPLETED", task
        return kind, value

    def dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        kind, value = self.send(request)
        if kind == "error":
            raise QuinelingError(value["code"], value["message"], value["path"])
        return value


@pytest.fixture
def rt(server: LiveServer) -> HttpRuntime:
    wipe_state(
        server.prefix, url=server.store_url
    )  # one world per runtime: every test starts from an empty scope
    return HttpRuntime(server)


def fire(rt: HttpRuntime, requests_: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return fire_threads(len(requests_), lambda n: rt.send(requests_[n]))


def test_same_world_command_over_http_advances_once(rt: HttpRuntime) -> None:
    """12 clients send one advance-4 command to 4 workers: one advance, 12 byte-identical acknowledgements."""
    before = inspect_world(rt, garden(rt))
    request = command_request(rt, before["id"], {"kind": "advance", "ticks": 4})
    one_acknowledgement(fire(rt, [request] * CLIENTS), CLIENTS)
    after = inspect_world(rt, before["id"])
    assert (after["revision"], after["tick"], after["nextSequence"]) == (
        before["revision"] + 1,
        before["tick"] + 4,
        before["nextSequence"] + 1,
    )
    assert len(after["proposals"]) == 1


def test_same_proposal_over_http_births_once(rt: HttpRuntime) -> None:
    """12 clients admit one live proposal under 12 requestIds: one child, 11 failed tasks (stale-revision)."""
    snap, parents = courting_pair(rt)
    value = pairing_input(snap)
    candidate = ready(rt, value)
    outcomes = fire(
        rt, [admission(value, candidate, f"http-birth-{n}", world_target(snap)) for n in range(CLIENTS)]
    )
    # All carried the pre-birth revision; the admission checks the revision before the proposal.
    ack = one_winner(outcomes, ("stale-revision", "target.expectedRevision"))["result"]
    after = inspect_world(rt, snap["id"])
    assert after["revision"] == ack["worldRevision"] == snap["revision"] + 1
    assert [r["artifactId"] for r in after["residents"] if r["stage"] == "nursery"] == [ack["artifactId"]]
    held = {r["residentId"]: r["energy"] for r in snap["residents"]}
    assert {r["residentId"]: r["energy"] for r in after["residents"] if r["residentId"] in held} == {
        rid: energy - 30 for rid, energy in held.items()
    }
    assert call(rt, operation="lineage")["derivations"] == [ack["derivation"]]
    assert list(stored(rt.server.prefix, "receipt", url=rt.server.store_url)) == [ack["requestId"]]
    late = admission(
        value, candidate, "http-late", {**world_target(snap), "expectedRevision": after["revision"]}
    )
    assert rt.send(late)[1]["code"] == "ineligible"  # the consumed proposal itself is refused, too
    assert len(parents) == 2


def test_fresh_commands_over_http_one_success_rest_conflict(rt: HttpRuntime) -> None:
    """9 different commands race for one fresh sequence over HTTP: one success, 8 `conflict` failures."""
    snap = world(rt)
    artifact = create(rt, SUM_CREDITS, seed=1)
    command(rt, snap["id"], {"kind": "import", "artifactId": artifact["id"]})
    commands = [
        *({"kind": "advance", "ticks": t} for t in (1, 2, 3, 4)),
        {"kind": "participate", "residentId": "r1", "enabled": True},
        {"kind": "participate", "residentId": "r1", "enabled": False},
        {"kind": "withdraw", "residentId": "r1"},
        {"kind": "retire", "residentId": "r1"},
        {"kind": "import", "artifactId": artifact["id"]},
    ]
    requests_ = [command_request(rt, snap["id"], c) for c in commands]
    outcomes = fire(rt, requests_)
    # The sequence check (retained sequence, other payload → conflict) precedes the revision check.
    winner = one_winner(outcomes, ("conflict", "sequence"))
    after = inspect_world(rt, snap["id"])
    assert (after["revision"], after["nextSequence"]) == (snap["revision"] + 2, snap["nextSequence"] + 2)
    index = next(i for i, outcome in enumerate(outcomes) if outcome[0] == "ok")
    assert rt.send(requests_[index]) == ("ok", winner)  # the winner's retry replays its acknowledgement


def test_replayed_world_admission_over_http_births_once(rt: HttpRuntime) -> None:
    """12 clients send one world admission (same requestId and payload): one birth, identical acknowledgements."""
    snap, _ = courting_pair(rt)
    value = pairing_input(snap)
    request = admission(value, ready(rt, value), "http-world-birth", world_target(snap))
    ack = one_acknowledgement(fire(rt, [request] * CLIENTS), CLIENTS)
    after = inspect_world(rt, snap["id"])
    assert after["revision"] == ack["worldRevision"] == snap["revision"] + 1
    assert call(rt, operation="lineage")["derivations"] == [ack["derivation"]]


def test_the_races_were_served_by_several_workers(server: LiveServer) -> None:
    """Runs last: the access log shows the racing requests above spread over more than one worker process."""
    workers = set(re.findall(r"pid=<(\d+)> POST /a2a/jsonrpc", server.log_text()))
    assert len(workers) >= 2, server.log_text()[-2000:]
