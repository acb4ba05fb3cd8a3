"""Every structured operation through the A2A transport gives what direct ``Runtime.dispatch`` gives.

One request sequence covering all sixteen operations (and a set of refusals) runs on a fresh ``Runtime`` and,
as SendMessage data parts, on a fresh ``create_app`` over JSON-RPC and over HTTP+JSON. Results must be equal
after masking only the explicitly fresh fields: execution record ids and ``createdAt``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from quineling.app import create_app
from quineling.runtime.errors import QuinelingError
from quineling.runtime.product_operations import ALL_OPERATIONS
from quineling.runtime.runtime import Runtime
from tests.a2a.conftest import data, user_message
from tests.runtime.test_ranch_support import (
    ALLOCATE,
    SQUARES,
    SUM_CREDITS,
    create,
    make_runtime,
    offspring,
    pairing_input,
)
from tests.support.bindings import JsonRpcBinding, RestBinding
from tests.support.messages import runtime_outcome

Outcome = tuple[str, Any]  # ("ok", {operation, result}) or ("error", {code, message, path})
Send = Callable[[dict[str, Any]], Outcome]
RECORD_ID = re.compile(r"rec_[0-9a-f]{32}")


def direct(runtime: Runtime) -> Send:
    def send(request: dict[str, Any]) -> Outcome:
        try:
            return "ok", runtime.dispatch(copy.deepcopy(request))
        except QuinelingError as exc:
            return "error", exc.to_dict()

    return send


def transported(binding: Any) -> Send:
    def send(request: dict[str, Any]) -> Outcome:
        outcome = binding.call("SendMessage", {"message": user_message(data(request))})
        assert outcome.ok, outcome.raw
        task = outcome.value["task"]
        if task["status"]["state"] == "TASK_STATE_FAILED":
            assert "artifacts" not in task or not task["artifacts"]
        return runtime_outcome(task)

    return send


def donor() -> tuple[str, dict[str, Any]]:
    """A source without companions and the intent that describes it (for recover, then annotate)."""
    artifact = create(make_runtime(), SQUARES, seed=5)
    return artifact["source"], artifact["companions"]["intent"]


def scenario(send: Send) -> list[tuple[str, Outcome]]:
    """The same request sequence for any transport; later requests use that transport's earlier results."""
    log: list[tuple[str, Outcome]] = []

    def step(request: dict[str, Any]) -> Outcome:
        outcome = send(request)
        log.append((request["operation"], outcome))
        return outcome

    def ok(request: dict[str, Any]) -> Any:
        kind, value = step(request)
        assert kind == "ok", (request, value)
        assert value["operation"] == request["operation"]
        return value["result"]

    ok({"operation": "parse", "thought": SUM_CREDITS})
    ok({"operation": "parse", "thought": "make it nice"})
    a = ok({"operation": "create", "thought": SUM_CREDITS, "options": {"seed": 1}})["artifact"]
    b = ok({"operation": "create", "thought": ALLOCATE, "options": {"seed": 2}})["artifact"]
    ok({"operation": "create", "thought": ""})
    ok({"operation": "compile", "intent": a["companions"]["intent"], "options": {"seed": 9, "repeats": 2}})
    ok({"operation": "inspect", "artifactId": b["id"]})
    record = ok({"operation": "run", "artifactId": b["id"]})
    ok({"operation": "reproduce", "artifactId": b["id"], "recordId": record["id"]})
    ok({"operation": "recover", "recovery": {"colors": a["genomes"]["colors"]}})
    ok({"operation": "recover", "recovery": {"harmonics": b["genomes"]["harmonics"]}})
    ok({"operation": "frame", "artifactId": a["id"], "phase": 0.25, "options": {"budget": 4000, "crests": 3}})

    value = offspring([a, b], "compose", nonce=7)
    candidate = ok({"operation": "offspringPreview", "input": value})["candidate"]
    stale = offspring([a, b], "compose")
    stale["parents"][0]["intentHash"] = "sha256:" + "1" * 64
    ok({"operation": "offspringPreview", "input": stale})  # a rejection is a result, not an error
    ids = {"candidateId": candidate["candidateId"], "childSourceHash": candidate["childSourceHash"]}
    ok({"operation": "offspringFrame", "input": value, **ids, "phase": 0.5})
    admit = {
        "operation": "offspringAdmit",
        "input": value,
        **ids,
        "target": {"kind": "library"},
        "requestId": "lib-1",
    }
    ack = ok(admit)
    ok(admit)  # exact replay
    ok({"operation": "lineage", "artifactId": ack["artifactId"]})
    ok({"operation": "run", "artifactId": ack["artifactId"]})
    source, intent = donor()
    bare = ok({"operation": "recover", "recovery": {"source": source}})
    ok({"operation": "annotate", "artifactId": bare["id"], "intent": intent})

    snap = ok({"operation": "worldCreate", "worldKey": "garden", "seed": 23, "affinity": "neutral"})
    ok({"operation": "worldCreate", "worldKey": "garden", "seed": 23, "affinity": "neutral"})
    commands = [
        {"kind": "import", "artifactId": a["id"]},
        {"kind": "import", "artifactId": b["id"]},
        {"kind": "participate", "residentId": "r1", "enabled": True},
        {"kind": "participate", "residentId": "r2", "enabled": True},
        {"kind": "advance", "ticks": 1},
    ]
    command = {"operation": "worldCommand", "worldId": snap["id"]}
    for n, body in enumerate(commands):
        ok({**command, "expectedRevision": n, "sequence": n + 1, "command": body})
    ok({**command, "expectedRevision": 4, "sequence": 5, "command": commands[-1]})  # exact replay
    snap = ok({"operation": "worldInspect", "worldId": snap["id"]})
    pairing = pairing_input(snap)
    born = ok({"operation": "offspringPreview", "input": pairing})["candidate"]
    target = {"kind": "world", "worldId": snap["id"], "expectedRevision": snap["revision"]}
    birth = {"operation": "offspringAdmit", "input": pairing, "candidateId": born["candidateId"],
             "childSourceHash": born["childSourceHash"], "target": target, "requestId": "birth-1"}  # fmt: skip
    ok(birth)
    ok({"operation": "lineage", "limit": 1})
    ok({"operation": "lineage", "cursor": 1, "limit": 1})
    ok(
        {
            **command,
            "expectedRevision": snap["revision"] + 1,
            "sequence": 6,
            "command": {"kind": "advance", "ticks": 4},
        }
    )
    ok({"operation": "worldInspect", "worldId": snap["id"]})

    # Refusals: the same {code, message, path} directly and as quinelingError metadata.
    zero = "sha256:" + "0" * 64
    corrupted = copy.deepcopy(a["genomes"]["colors"])
    corrupted["swatches"][0] = "#000000" if corrupted["swatches"][0] != "#000000" else "#000001"
    refusals = [
        ("not-found", {"operation": "inspect", "artifactId": zero}),
        ("invalid-request", {"operation": "create", "thought": SUM_CREDITS, "extra": 1}),
        (
            "invalid-request",
            {"operation": "frame", "artifactId": a["id"], "phase": 0, "options": {"budget": 1}},
        ),
        ("unknown-operation", {"operation": "launchRockets"}),
        ("invalid-request", {"operation": 7}),
        ("record-mismatch", {"operation": "reproduce", "artifactId": a["id"], "recordId": record["id"]}),
        ("invalid-genome", {"operation": "recover", "recovery": {"colors": corrupted}}),
        (
            "intent-mismatch",
            {"operation": "annotate", "artifactId": bare["id"], "intent": a["companions"]["intent"]},
        ),
        ("conflict", {**admit, "input": {**value, "nonce": 8}}),
        (
            "candidate-mismatch",
            {"operation": "offspringFrame", "input": value, **ids, "candidateId": zero, "phase": 0},
        ),
        ("conflict", {"operation": "worldCreate", "worldKey": "another", "seed": 1}),
        ("stale-revision", {**command, "expectedRevision": 0, "sequence": 7, "command": commands[-1]}),
        ("sequence-gap", {**command, "expectedRevision": 99, "sequence": 9, "command": commands[-1]}),
        ("conflict", {**command, "expectedRevision": 6, "sequence": 6, "command": commands[-1]}),
        ("stale-revision", {**birth, "requestId": "birth-2"}),
        ("not-found", {"operation": "worldInspect", "worldId": "wld_" + "0" * 32}),
    ]
    for code, request in refusals:
        kind, refusal = step(request)
        assert (kind, refusal["code"]) == ("error", code), (request, refusal)
        assert set(refusal) == {"code", "message", "path"}
    return log


def masked(value: Any, key: str | None = None) -> Any:
    """Record ids and ``createdAt`` are fresh per run by design; everything else must match exactly."""
    if key == "createdAt":
        return "<createdAt>"
    if isinstance(value, dict):
        return {k: masked(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [masked(v) for v in value]
    if isinstance(value, str):
        return RECORD_ID.sub("<rec>", value)
    return value


@pytest.fixture(scope="module")
def expected() -> list[tuple[str, Outcome]]:
    return scenario(direct(Runtime()))


def test_scenario_covers_all_sixteen_operations(expected: list[tuple[str, Outcome]]) -> None:
    assert {name for name, (kind, _) in expected if kind == "ok"} == set(ALL_OPERATIONS)
    codes = {value["code"] for _, (kind, value) in expected if kind == "error"}
    assert codes == {
        "not-found", "invalid-request", "unknown-operation", "record-mismatch", "invalid-genome",
        "intent-mismatch", "conflict", "candidate-mismatch", "stale-revision", "sequence-gap",
    }  # fmt: skip


@pytest.mark.parametrize("binding", [JsonRpcBinding, RestBinding], ids=["jsonrpc", "rest"])
def test_transport_results_equal_direct_dispatch(binding: Any, expected: list[tuple[str, Outcome]]) -> None:
    client = create_app(config={"store_url": "memory://"}).test_client()
    actual = scenario(transported(binding(client)))
    assert len(actual) == len(expected)
    for (name, got), (_, want) in zip(actual, expected, strict=True):
        assert masked(got) == masked(want), name


def test_masking_hides_only_fresh_fields(expected: list[tuple[str, Outcome]]) -> None:
    """Two direct runs differ only in record ids and timestamps, so the mask cannot hide a real difference."""
    again = scenario(direct(Runtime()))
    differing = {name for (name, got), (_, want) in zip(again, expected, strict=True) if got != want}
    assert differing == {"run", "reproduce"}
    assert [masked(o) for _, o in again] == [masked(o) for _, o in expected]
