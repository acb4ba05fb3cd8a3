"""Principals are isolated on every path (docs/security.md, "Isolation"), on memory, fakeredis and real Redis,
over JSON-RPC 1.0, HTTP+JSON and v0.3 JSON-RPC.

* The runtime: another principal's artifact, record and world ids answer exactly what ids that never existed
  answer, for every one of the sixteen operations that takes one; and a principal that runs the whole
  sixteen-operation scenario after another gets exactly the results the first got (nothing it sees — replays,
  conflicts, lineage, capacity — comes from the other's state).
* Tasks: GetTask, CancelTask, a follow-up SendMessage and SubscribeToTask on another principal's task answer
  byte for byte what an unknown task id answers; ListTasks shows only one's own tasks, ``totalSize`` counts
  only them, and a page token made for one principal is refused for another exactly as a forged one is.
* Capacity: one principal filling its runtime and task capacity takes nothing from another.
* Tenants keep working inside a principal, as scopes of their own.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quineling.app import create_app
from quineling.runtime.ranch.offspring import candidate_id
from stores import RedisBackend
from tests.conftest import BACKENDS, store_url
from tests.runtime.test_ranch_support import ALLOCATE, SUM_CREDITS, offspring
from tests.runtime.test_transport_equivalence import masked, scenario
from tests.support.principals import FLAVOURS, Answer, Caller, keys_file, new_task_id
from tests.support.redis_keys import delete_under

PRINCIPALS = ("alice", "bob", "carol")


@pytest.fixture(params=list(BACKENDS.values()), ids=list(BACKENDS))
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Settings that put the app on the backend under test (fakeredis through the app's own factory)."""
    prefix = f"qiso-{uuid.uuid4().hex[:10]}"
    if request.param == "memory":
        yield {"store_url": "memory://"}
        return
    if request.param == "fakeredis":
        import fakeredis

        server = fakeredis.FakeServer()
        monkeypatch.setattr(
            "quineling.app.backend_from_url",
            # create_app also passes the network store's deadlines, which a fakeredis client has no use for.
            lambda url, prefix, **_deadlines: RedisBackend(
                url, client=fakeredis.FakeRedis(server=server), prefix=prefix
            ),
        )
        yield {"store_url": "redis://fake", "store_prefix": prefix}
        return
    url = store_url(request.param)  # Redis, or the cluster for the "cluster" backend
    yield {"store_url": url, "store_prefix": prefix}
    delete_under(url, prefix)


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return keys_file(tmp_path, *PRINCIPALS)


def make_client(store: dict[str, Any], keys: Path, **config: Any) -> Any:
    settings = {**store, "auth_keys_file": str(keys), "tenants": "*", "keepalive_seconds": 0.2,
                "subscribe_max_seconds": 3, **config}  # fmt: skip
    return create_app(config=settings).test_client()


def callers(client: Any, flavour: str, tokens: dict[str, str], tenant: str = "") -> dict[str, Caller]:
    return {name: Caller(client, flavour, token, tenant) for name, token in tokens.items()}


def found(answer: Answer) -> bool:
    """Whether the answer is a result, not an error (JSON-RPC answers errors with HTTP 200 too)."""
    status, body = answer
    return status == 200 and not (isinstance(body, dict) and "error" in body)


def swapped(answer: Answer, old: str, new: str) -> Answer:
    """``answer`` with every occurrence of id ``old`` written as ``new``."""
    status, body = answer
    return status, json.loads(json.dumps(body).replace(old, new))


# --- the runtime -------------------------------------------------------------------------------------


def populate(caller: Caller) -> dict[str, Any]:
    """Artifacts, a record, an admitted child, a recovered bare artifact and a world, in ``caller``'s scope."""

    def ok(request: dict[str, Any]) -> Any:
        kind, value = caller.op(request)
        assert kind == "ok", (request, value)
        return value["result"]

    a = ok({"operation": "create", "thought": SUM_CREDITS, "options": {"seed": 1}})["artifact"]
    b = ok({"operation": "create", "thought": ALLOCATE, "options": {"seed": 2}})["artifact"]
    record = ok({"operation": "run", "artifactId": b["id"]})
    value = offspring([a, b], "compose", nonce=7)
    candidate = ok({"operation": "offspringPreview", "input": value})["candidate"]
    ids = {"candidateId": candidate["candidateId"], "childSourceHash": candidate["childSourceHash"]}
    admit = {"operation": "offspringAdmit", "input": value, **ids, "target": {"kind": "library"},
             "requestId": "lib-1"}  # fmt: skip
    child = ok(admit)["artifactId"]
    world = ok({"operation": "worldCreate", "worldKey": "garden", "seed": 23, "affinity": "neutral"})
    return {"a": a, "b": b, "record": record["id"], "child": child, "world": world["id"],
            "offspring": value, "candidate": ids, "admit": admit}  # fmt: skip


def referencing(ids: dict[str, Any]) -> list[dict[str, Any]]:
    """A request of every operation that names an artifact, record, world or candidate."""
    a, b = ids["a"], ids["b"]
    world = {"operation": "worldCommand", "worldId": ids["world"], "expectedRevision": 0, "sequence": 1}
    return [
        {"operation": "inspect", "artifactId": a["id"]},
        {"operation": "run", "artifactId": a["id"]},
        {"operation": "reproduce", "artifactId": b["id"], "recordId": ids["record"]},
        {"operation": "frame", "artifactId": a["id"], "phase": 0.25, "options": {"budget": 4000}},
        {"operation": "lineage", "artifactId": ids["child"]},
        {"operation": "annotate", "artifactId": a["id"], "intent": a["companions"]["intent"]},
        {"operation": "offspringPreview", "input": ids["offspring"]},
        {"operation": "offspringFrame", "input": ids["offspring"], **ids["candidate"], "phase": 0.5},
        {**ids["admit"], "requestId": "lib-2"},
        {"operation": "worldInspect", "worldId": ids["world"]},
        {**world, "command": {"kind": "advance", "ticks": 1}},
        {**world, "command": {"kind": "import", "artifactId": a["id"]}},
    ]


def unknown_ids(ids: dict[str, Any]) -> dict[str, str]:
    """For each id of ``ids`` the other principal lacks, an id of the same shape that exists nowhere (``b``
    the other principal creates too: it is the same content, so the same id, in its own scope)."""
    fresh = {
        ids["a"]["id"]: "sha256:" + secrets.token_hex(32),
        ids["child"]: "sha256:" + secrets.token_hex(32),
        ids["record"]: "rec_" + secrets.token_hex(16),
        ids["world"]: "wld_" + secrets.token_hex(16),
    }
    assert all(len(old) == len(new) for old, new in fresh.items())
    return fresh


def never_existed(request: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    """``request`` naming unknown ids instead, still self-consistent: a candidate id is the hash of the input
    it names, so it is recomputed for the rewritten input."""
    fresh: dict[str, Any] = rewrite(request, mapping)
    if "candidateId" in fresh:
        fresh["candidateId"] = candidate_id(fresh["input"])
    return fresh


def rewrite(value: Any, mapping: dict[str, str]) -> Any:
    text = json.dumps(value)
    for old, new in mapping.items():
        text = text.replace(old, new)
    return json.loads(text)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_another_principals_runtime_ids_answer_as_unknown_ones(
    store: dict[str, Any], tokens: tuple[Path, dict[str, str]], flavour: str
) -> None:
    path, by_name = tokens
    who = callers(make_client(store, path), flavour, by_name)
    ids = populate(who["alice"])
    # carol holds b too (ids are content hashes), so reproduce finds the artifact and must miss the record.
    assert who["carol"].op({"operation": "create", "thought": ALLOCATE, "options": {"seed": 2}})[0] == "ok"
    mapping = unknown_ids(ids)
    back = {new: old for old, new in mapping.items()}
    for request in referencing(ids):
        theirs = who["carol"].op(request)
        unknown = tuple(rewrite(who["carol"].op(never_existed(request, mapping)), back))
        assert theirs == unknown, request["operation"]
        # A refusal, or (preview, lineage) a result that finds nothing: a rejection, no derivations.
        assert theirs[0] == "error" or request["operation"] in ("offspringPreview", "lineage"), theirs
        if request["operation"] == "lineage":
            assert theirs[1]["result"]["derivations"] == []
    # Alice still has everything, untouched by carol's attempts.
    assert (
        who["alice"].op({"operation": "worldInspect", "worldId": ids["world"]})[1]["result"]["revision"] == 0
    )
    assert who["alice"].op(referencing(ids)[2])[0] == "ok"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_principal_sees_none_of_anothers_runtime_state(
    store: dict[str, Any], tokens: tuple[Path, dict[str, str]], flavour: str
) -> None:
    """All sixteen operations, run by alice and then by bob on one server: bob's results are exactly alice's
    (bar record ids and timestamps) — his world is new, his admission no replay, his lineage his own."""
    path, by_name = tokens
    who = callers(make_client(store, path), flavour, by_name)
    first = scenario(who["alice"].op)
    second = scenario(who["bob"].op)
    assert len(first) == len(second)
    for (name, got), (_, want) in zip(second, first, strict=True):
        assert masked(got) == masked(want), name


# --- tasks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_another_principals_task_answers_as_an_unknown_one_on_every_task_path(
    store: dict[str, Any], tokens: tuple[Path, dict[str, str]], flavour: str
) -> None:
    path, by_name = tokens
    who = callers(make_client(store, path), flavour, by_name)
    waiting = who["alice"].waiting()
    done = str(who["alice"].task({"text": "[1,2] | sum | report total"})["id"])
    bob = who["bob"]
    paths = [bob.get, bob.cancel, bob.follow_up, bob.subscribe]
    if flavour == "rest":
        paths.append(lambda task_id: bob.subscribe(task_id, verb="GET"))
    for task_id in (waiting, done):
        for call in paths:
            unknown = new_task_id()
            assert call(task_id) == swapped(call(unknown), unknown, task_id)
            assert call(task_id)[0] in (200, 404)  # JSON-RPC answers errors with HTTP 200
    # Nothing bob tried changed alice's tasks.
    status, body = who["alice"].get(waiting)
    task = body if flavour == "rest" else body["result"]
    assert status == 200 and task["status"]["state"] in ("TASK_STATE_INPUT_REQUIRED", "input-required")
    assert found(who["alice"].cancel(waiting))


@pytest.mark.parametrize("flavour", ["jsonrpc", "rest"])
def test_list_tasks_pages_count_and_cursors_are_per_principal(
    store: dict[str, Any], tokens: tuple[Path, dict[str, str]], flavour: str
) -> None:
    path, by_name = tokens
    who = callers(make_client(store, path), flavour, by_name)
    mine = [who["alice"].waiting() for _ in range(3)]
    theirs = [who["bob"].waiting() for _ in range(2)]

    def page(caller: Caller, **query: Any) -> dict[str, Any]:
        status, body = caller.list(**query)
        assert status == 200, body
        return body if flavour == "rest" else body["result"]  # type: ignore[no-any-return]

    alice_first = page(who["alice"], pageSize=2)
    assert alice_first["totalSize"] == 3 and len(alice_first["tasks"]) == 2 and alice_first["nextPageToken"]
    alice_rest = page(who["alice"], pageSize=2, pageToken=alice_first["nextPageToken"])
    assert sorted(t["id"] for t in alice_first["tasks"] + alice_rest["tasks"]) == sorted(mine)
    bob_all = page(who["bob"], pageSize=10)
    assert bob_all["totalSize"] == 2 and sorted(t["id"] for t in bob_all["tasks"]) == sorted(theirs)
    assert page(who["carol"], pageSize=10) == {
        "tasks": [],
        "nextPageToken": "",
        "pageSize": 10,
        "totalSize": 0,
    }
    # Alice's cursor is refused for bob exactly as a forged one is; filtering by alice's context finds nothing.
    forged = alice_first["nextPageToken"][:-4] + (
        "AAAA" if not alice_first["nextPageToken"].endswith("AAAA") else "BBBB"
    )
    assert who["bob"].list(pageSize=2, pageToken=alice_first["nextPageToken"]) == swapped(
        who["bob"].list(pageSize=2, pageToken=forged), forged, alice_first["nextPageToken"]
    )
    assert who["bob"].list(pageSize=2, pageToken=forged)[0] in (200, 400)
    context = alice_first["tasks"][0]["contextId"]
    assert page(who["bob"], pageSize=10, contextId=context)["totalSize"] == 0
    assert page(who["alice"], pageSize=10, contextId=context)["totalSize"] == 1


# --- capacity and tenants ------------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_capacity_is_per_principal(
    store: dict[str, Any], tokens: tuple[Path, dict[str, str]], flavour: str
) -> None:
    path, by_name = tokens
    client = make_client(store, path, max_artifacts=2, task_max=3)
    who = callers(client, flavour, by_name)
    bobs_task = who["bob"].waiting()
    thoughts = [f"[{n}] | sum | report t" for n in range(3)]
    outcomes = [who["alice"].op({"operation": "create", "thought": t}) for t in thoughts]
    assert [kind for kind, _ in outcomes] == ["ok", "ok", "error"]
    assert outcomes[2][1]["code"] == "resource-limit"
    # Different thoughts: bob's creates need slots of their own (a retained artifact would need none).
    assert all(who["bob"].op({"operation": "create", "thought": f"[{n}] | square | sum | report s"})[0] == "ok"
               for n in range(2))  # fmt: skip
    for _ in range(5):  # alice's saves evict only her own finished or waiting tasks
        who["alice"].waiting()
    assert found(who["bob"].get(bobs_task))


@pytest.mark.parametrize("flavour", ["jsonrpc", "rest"])
def test_tenants_are_scopes_inside_a_principal(
    store: dict[str, Any], tokens: tuple[Path, dict[str, str]], flavour: str
) -> None:
    path, by_name = tokens
    client = make_client(store, path)
    alice, alice_acme = (
        Caller(client, flavour, by_name["alice"]),
        Caller(client, flavour, by_name["alice"], "acme"),
    )
    bob_acme = Caller(client, flavour, by_name["bob"], "acme")
    kind, created = alice_acme.op({"operation": "create", "thought": SUM_CREDITS})
    artifact = created["result"]["artifact"]["id"]
    assert alice_acme.op({"operation": "inspect", "artifactId": artifact})[0] == "ok"
    for other in (alice, bob_acme):
        assert other.op({"operation": "inspect", "artifactId": artifact})[1]["code"] == "not-found"
    task = alice_acme.waiting()
    assert found(alice_acme.get(task))
    unknown = new_task_id()
    for other in (alice, bob_acme):
        assert other.get(task) == swapped(other.get(unknown), unknown, task)
