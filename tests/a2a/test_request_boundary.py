"""What a request may carry, checked once at the boundary for every binding (docs/decisions/0007-request-limits.md):
nesting depth, lone surrogates, non-finite numbers — plus the unhashable enum values, ``metadata``
shapes and out-of-range timestamps that used to reach a lookup, a copy or a store and fail there with -32603.

Each case is sent as raw JSON text (``json.dumps`` can write neither ``1e400`` nor an unescaped surrogate),
over JSON-RPC 1.0, HTTP+JSON and v0.3, to the real runtime on every store backend, and must be refused in the
binding's own error shape with nothing stored — or, for what is under the limits, served and stored intact.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from quineling.a2a.json_text import MAX_DEPTH
from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from tests.a2a.conftest import FakeRuntime, data, make_app, user_message
from tests.conftest import BackendMaker
from tests.support.bindings import V1
from tests.support.sse import parse_sse

RPC = "/a2a/jsonrpc"
REST = "/a2a/rest"
JSON_TYPE = {"Content-Type": "application/json"}


@pytest.fixture
def client(make_backend: BackendMaker) -> Iterator[Any]:
    backend = make_backend()
    app = create_app(
        runtime=Runtime(store=backend.state_store()),
        task_store=backend.task_store(describe=describe_task),
        config={"tenants": "*", "keepalive_seconds": 0.2, "subscribe_max_seconds": 2},
    )
    yield app.test_client()


def nested(levels: int, leaf: str = "1") -> str:
    """JSON text of ``levels`` nested objects and arrays (alternating, an object outermost) around ``leaf``."""
    opening = "".join("[" if i % 2 else '{"k":' for i in range(levels))
    closing = "".join("]" if i % 2 else "}" for i in reversed(range(levels)))
    return opening + leaf + closing


def obj(**members: str) -> str:
    """A JSON object as text whose member values are JSON text already (``obj(n="1e400")``)."""
    return "{" + ", ".join(f"{json.dumps(name)}: {value}" for name, value in members.items()) + "}"


def q(value: str) -> str:
    return json.dumps(value)


PARSE = obj(operation=q("parse"), thought=q("[1] | sum | report t"))


def message_text(*, data: str = PARSE, part_metadata: str | None = None, **extra: str) -> str:
    """A 1.0 user message as JSON text; ``extra`` members are JSON text too (``metadata='{…}'``)."""
    part = {"data": data, "mediaType": q("application/json")}
    if part_metadata is not None:
        part["metadata"] = part_metadata
    return obj(messageId=q("m-boundary"), role=q("ROLE_USER"), parts=f"[{obj(**part)}]", **extra)


def v03_message_text(**extra: str) -> str:
    members = {"kind": q("message"), "messageId": q("m-v03"), "role": q("user"), **extra}
    members.setdefault("parts", "[" + obj(kind=q("text"), text=q("x")) + "]")
    return obj(**members)


def rpc(
    client: Any, method: str, params: str, *, version: dict[str, str] | None = V1, echo_id: bool = True
) -> dict[str, Any]:
    raw = f'{{"jsonrpc": "2.0", "id": "b-1", "method": "{method}", "params": {params}}}'
    response = client.post(RPC, data=raw, headers={**(version or {}), **JSON_TYPE})
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    assert response.mimetype == "application/json"
    envelope: dict[str, Any] = response.get_json()
    assert envelope["jsonrpc"] == "2.0" and envelope["id"] == ("b-1" if echo_id else None)
    return envelope


def rpc_error(client: Any, method: str, params: str, code: int = -32602, **kwargs: Any) -> str:
    envelope = rpc(client, method, params, **kwargs)
    assert set(envelope) == {"jsonrpc", "id", "error"}, envelope
    assert envelope["error"]["code"] == code, envelope["error"]
    message: str = envelope["error"]["message"]
    message.encode("utf-8")  # the answer itself is valid Unicode
    return message


def rest_error(response: Any, status: int = 400, reason: str = "INVALID_PARAMS") -> str:
    assert response.status_code == status, response.get_data(as_text=True)[:300]
    error = response.get_json()["error"]
    assert error["code"] == status and error["details"][0]["reason"] == reason
    message: str = error["message"]
    message.encode("utf-8")
    return message


def rest_post(client: Any, path: str, body: str) -> Any:
    return client.post(REST + path, data=body, headers={**V1, **JSON_TYPE})


def stored_tasks(client: Any) -> int:
    listing = client.get(REST + "/tasks", headers=V1).get_json()
    total: int = listing["totalSize"]
    return total


# --- nesting depth --------------------------------------------------------------------------------------

# Levels the request object (REST body, JSON-RPC params) spends before each place: body, message, parts,
# part -> data at level 5; body, message -> message metadata at 3; body -> request metadata at 2.
DATA_LEVEL, MESSAGE_METADATA_LEVEL, REQUEST_METADATA_LEVEL = 5, 3, 2


WHERE = {
    "data": "params.message.parts[0].data",
    "message.metadata": "params.message.metadata",
    "part.metadata": "params.message.parts[0].metadata",
    "metadata": "params.metadata",
}


def deep_params(case: str, excess: int) -> str:
    """SendMessage params whose ``case`` member nests to level ``MAX_DEPTH + excess``."""

    def at(level: int) -> str:
        return nested(MAX_DEPTH + excess - level + 1)

    if case == "data":
        return obj(message=message_text(data=at(DATA_LEVEL)))
    if case == "message.metadata":
        return obj(message=message_text(metadata=at(MESSAGE_METADATA_LEVEL)))
    if case == "part.metadata":
        return obj(message=message_text(part_metadata=at(DATA_LEVEL)))
    return obj(message=message_text(), metadata=at(REQUEST_METADATA_LEVEL))


@pytest.mark.parametrize("excess", [1, 400, 5000], ids=["limit+1", "orjson-parses", "beyond-any-parser"])
@pytest.mark.parametrize("case", ["data", "message.metadata", "part.metadata", "metadata"])
def test_nesting_beyond_the_limit_is_invalid_params_on_every_binding(
    client: Any, case: str, excess: int
) -> None:
    params = deep_params(case, excess)
    parsed = excess < 1000  # the parser read it, so the answer says where and echoes the id
    message = rpc_error(client, "SendMessage", params, echo_id=parsed)
    assert f"more than {MAX_DEPTH} levels deep" in message
    assert message.startswith(WHERE[case]) or not parsed
    message = rest_error(rest_post(client, "/message:send", params))
    assert f"more than {MAX_DEPTH} levels deep" in message
    rest_error(rest_post(client, "/message:stream", params))
    assert stored_tasks(client) == 0


@pytest.mark.parametrize("case", ["data", "message.metadata", "part.metadata", "metadata"])
def test_nesting_at_the_limit_is_accepted_in_every_place(client: Any, case: str) -> None:
    params = deep_params(case, 0)
    assert "result" in rpc(client, "SendMessage", params)
    assert rest_post(client, "/message:send", params).status_code == 200
    assert stored_tasks(client) == 2


@pytest.mark.parametrize("excess", [1, 5000])
def test_v03_nesting_beyond_the_limit_is_invalid_params(client: Any, excess: int) -> None:
    deep = nested(MAX_DEPTH - DATA_LEVEL + 1 + excess)
    params = (
        '{"message": {"kind": "message", "messageId": "m3", "role": "user", '
        f'"parts": [{{"kind": "data", "data": {{"x": {deep}}}}}]}}}}'
    )
    rpc_error(client, "message/send", params, version=None, echo_id=excess < 1000)
    assert stored_tasks(client) == 0


def test_nesting_at_the_limit_is_served_and_stored_intact(client: Any) -> None:
    """Everything under the limit goes through normalising, copying, the runtime's checks, storage, the
    v0.3 translation and streaming without a recursion limit in the way."""
    data = {"operation": "parse", "thought": "t", "deep": json.loads(nested(MAX_DEPTH - DATA_LEVEL))}
    metadata = {"m": json.loads(nested(MAX_DEPTH - MESSAGE_METADATA_LEVEL))}
    message = {"messageId": "m-deep", "role": "ROLE_USER", "parts": [{"data": data}], "metadata": metadata}
    task = rpc(client, "SendMessage", json.dumps({"message": message}))["result"]["task"]
    # The runtime looked at all of it, then refused the unknown member.
    assert task["status"]["message"]["metadata"]["quinelingError"]["path"] == "deep"
    stored = client.get(f"{REST}/tasks/{task['id']}", headers=V1).get_json()
    assert stored["history"][0]["parts"][0]["data"] == data
    assert stored["history"][0]["metadata"] == metadata
    v03 = {"kind": "message", "messageId": "m-deep-3", "role": "user", "metadata": metadata,
           "parts": [{"kind": "data", "data": data}]}  # fmt: skip
    legacy = rpc(client, "message/send", json.dumps({"message": v03}), version=None)["result"]
    assert legacy["history"][0]["parts"][0]["data"] == data
    legacy = rpc(client, "tasks/get", json.dumps({"id": task["id"]}), version=None)["result"]
    assert legacy["history"][0]["metadata"] == metadata
    events = list(parse_sse(rest_post(client, "/message:stream", json.dumps({"message": message})).response))
    assert events[0][1]["task"]["history"][0]["metadata"] == metadata
    assert stored_tasks(client) == 3


# --- lone surrogates ------------------------------------------------------------------------------------

LONE = '"\\ud800"'


def world_create(key: str) -> str:
    return obj(operation=q("worldCreate"), worldKey=key, seed="1")


@pytest.mark.parametrize(
    ("method", "params", "where"),
    [
        ("GetTask", obj(id=LONE), "params.id"),
        ("CancelTask", obj(id=LONE), "params.id"),
        ("SubscribeToTask", obj(id=LONE), "params.id"),
        ("ListTasks", obj(contextId=LONE), "params.contextId"),
        ("SendMessage", obj(message=message_text(taskId=LONE)), "params.message.taskId"),
        ("SendMessage", obj(message=message_text(contextId=LONE)), "params.message.contextId"),
        (
            "SendMessage",
            obj(message=message_text(data=world_create(LONE))),
            "params.message.parts[0].data.worldKey",
        ),
        (
            "SendMessage",
            obj(message=message_text(data=obj(operation=q("worldInspect"), worldId=LONE))),
            "params.message.parts[0].data.worldId",
        ),
        (
            "SendMessage",
            obj(message=message_text(metadata='{"\\udc00": 1}')),
            'params.message.metadata["\\udc00"]',
        ),
        ("SendMessage", obj(message=message_text(), tenant=LONE), "params.tenant"),
    ],
    ids=[
        "get",
        "cancel",
        "subscribe",
        "list",
        "follow-up",
        "context",
        "worldKey",
        "worldId",
        "member-name",
        "tenant",
    ],
)
def test_lone_surrogates_are_refused_at_the_boundary(
    client: Any, method: str, params: str, where: str
) -> None:
    message = rpc_error(client, method, params)
    assert message.startswith(where + ":") and "lone surrogate" in message
    assert stored_tasks(client) == 0


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", obj(id=LONE)),
        ("tasks/cancel", obj(id=LONE)),
        ("tasks/resubscribe", obj(id=LONE)),
        ("message/send", obj(message=v03_message_text(taskId=LONE))),
    ],
)
def test_v03_lone_surrogates_are_refused_at_the_boundary(client: Any, method: str, params: str) -> None:
    assert "lone surrogate" in rpc_error(client, method, params, version=None)


def test_rest_lone_surrogates_are_400(client: Any) -> None:
    body = obj(message=message_text(data=world_create(LONE)))
    assert "lone surrogate" in rest_error(rest_post(client, "/message:send", body))
    assert "lone surrogate" in rest_error(rest_post(client, "/tasks/t1:cancel", obj(metadata=obj(a=LONE))))
    assert "lone surrogate" in rest_error(rest_post(client, "/tasks/t1:subscribe", obj(x=LONE)))
    assert stored_tasks(client) == 0


def test_surrogate_pairs_are_ordinary_text(client: Any) -> None:
    envelope = rpc(client, "SendMessage", obj(message=message_text(data=world_create('"\\ud83e\\udd8e"'))))
    task = envelope["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["data"]["result"]["worldKey"] == "\U0001f98e"


def test_a_lone_surrogate_in_the_envelope_is_invalid_request(client: Any) -> None:
    raw = '{"jsonrpc": "2.0", "id": "\\ud800", "method": "GetTask", "params": {"id": "t"}}'
    body = client.post(RPC, data=raw, headers={**V1, **JSON_TYPE}).get_json()
    assert body["id"] is None and body["error"]["code"] == -32600
    raw = '{"jsonrpc": "2.0", "id": 7, "method": "Get\\ud800Task", "params": {"id": "t"}}'
    body = client.post(RPC, data=raw, headers={**V1, **JSON_TYPE}).get_json()
    assert body["id"] == 7 and body["error"]["code"] == -32600


# --- non-finite numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1E+999"])
@pytest.mark.parametrize(
    "place",
    ["message.metadata", "data", "part.metadata", "metadata"],
)
def test_non_finite_numbers_are_refused_wherever_they_appear(client: Any, place: str, number: str) -> None:
    if place == "message.metadata":
        params = obj(message=message_text(metadata=obj(n=number)))
    elif place == "data":
        params = obj(message=message_text(data=obj(operation=q("parse"), thought=q("x"), n=number)))
    elif place == "part.metadata":
        params = obj(message=message_text(part_metadata=obj(n=number)))
    else:
        params = obj(message=message_text(), metadata=obj(n=f"[{number}]"))
    assert "numbers must be finite" in rpc_error(client, "SendMessage", params)
    assert "numbers must be finite" in rest_error(rest_post(client, "/message:send", params))
    assert stored_tasks(client) == 0


def test_non_finite_beside_a_lone_surrogate_is_refused(client: Any) -> None:
    params = obj(message=message_text(metadata=obj(n="1e400", s=LONE)))
    assert "numbers must be finite" in rpc_error(client, "SendMessage", params)
    params = obj(message=message_text(metadata=obj(s=LONE, n="1e400")))
    assert "lone surrogate" in rpc_error(client, "SendMessage", params)
    assert stored_tasks(client) == 0


def test_v03_non_finite_is_refused(client: Any) -> None:
    params = (
        '{"message": {"kind": "message", "messageId": "m", "role": "user", '
        '"parts": [{"kind": "text", "text": "x"}], "metadata": {"n": 1e400}}}'
    )
    assert "numbers must be finite" in rpc_error(client, "message/send", params, version=None)


def test_huge_integers_are_refused_clearly(client: Any) -> None:
    params = obj(message=message_text(metadata=obj(n="9" * 5000)))
    assert "digits" in rpc_error(client, "SendMessage", params)


# --- unhashable values where an enum string is expected -------------------------------------------------


@pytest.mark.parametrize("role", ["[]", "{}", '["user"]'])
def test_v03_role_that_is_not_a_string_is_invalid_params(client: Any, role: str) -> None:
    params = obj(message=v03_message_text(role=role))
    assert "message.role" in rpc_error(client, "message/send", params, version=None)


@pytest.mark.parametrize("value", ["[]", "{}", '["ROLE_USER"]'])
def test_enum_fields_that_are_not_strings_are_invalid_params(client: Any, value: str) -> None:
    assert "message.role" in rpc_error(
        client, "SendMessage", obj(message=message_text().replace('"ROLE_USER"', value))
    )
    assert "status" in rpc_error(client, "ListTasks", obj(status=value))


@pytest.mark.parametrize("kind", ["[]", "{}", '["advance"]'])
def test_world_command_kind_that_is_not_a_string_fails_the_task(client: Any, kind: str) -> None:
    request = obj(
        operation=q("worldCommand"),
        worldId=q("w"),
        expectedRevision="0",
        sequence="1",
        command=obj(kind=kind),
    )
    task = rpc(client, "SendMessage", obj(message=message_text(data=request)))["result"]["task"]
    error = task["status"]["message"]["metadata"]["quinelingError"]
    assert error["code"] == "invalid-request" and error["path"] == "command.kind"


# --- metadata must be an object, on every binding -------------------------------------------------------


@pytest.mark.parametrize("value", ['"x"', '""', "1", "[]", "true"])
def test_request_metadata_must_be_an_object_on_every_binding(client: Any, value: str) -> None:
    params = obj(message=message_text(), metadata=value)
    assert "metadata" in rpc_error(client, "SendMessage", params)
    assert "metadata" in rest_error(rest_post(client, "/message:send", params))
    v03 = obj(message=v03_message_text(), metadata=value)
    assert "metadata" in rpc_error(client, "message/send", v03, version=None)
    v03 = obj(message=v03_message_text(metadata=value))
    assert "metadata" in rpc_error(client, "message/send", v03, version=None)
    task_id = rpc(client, "SendMessage", obj(message=message_text()))["result"]["task"]["id"]
    assert "metadata" in rpc_error(client, "CancelTask", obj(id=q(task_id), metadata=value))
    assert "metadata" in rest_error(rest_post(client, f"/tasks/{task_id}:cancel", obj(metadata=value)))
    assert "metadata" in rpc_error(client, "tasks/cancel", obj(id=q(task_id), metadata=value), version=None)


# --- timestamps outside the representable range ---------------------------------------------------------


@pytest.mark.parametrize("instant", ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"])
def test_timestamps_beyond_the_range_are_invalid_params(client: Any, instant: str) -> None:
    assert "statusTimestampAfter" in rpc_error(client, "ListTasks", obj(statusTimestampAfter=q(instant)))
    response = client.get(REST + "/tasks", query_string={"statusTimestampAfter": instant}, headers=V1)
    assert "statusTimestampAfter" in rest_error(response)


@pytest.mark.parametrize(
    ("instant", "listed"),
    [
        ("0001-01-01T23:59:00+23:59", 1),
        ("0001-01-01T00:00:00Z", 1),
        ("9999-12-31T23:59:59.999999Z", 0),
        ("9999-12-31T00:00:00-23:59", 0),
    ],
)
def test_timestamps_at_the_ends_of_the_range_are_served(client: Any, instant: str, listed: int) -> None:
    rpc(client, "SendMessage", obj(message=message_text()))
    listing = rpc(client, "ListTasks", obj(statusTimestampAfter=q(instant)))["result"]
    assert listing["totalSize"] == listed


def test_a_runtime_status_that_is_not_a_string_completes_the_task() -> None:
    """The executor looks the runtime's ``result.status`` up in a set: a value that is no string (say, a
    runtime echoing a request value) must not make that lookup raise."""

    class EchoingRuntime(FakeRuntime):
        @staticmethod
        def _outcome(request: Any) -> dict[str, Any]:
            return {"operation": "echo", "result": {"status": request.get("status")}}

    app = make_app()
    store = app.extensions["quineling"].extras["task_store"]
    app.extensions["quineling"].service.runtime = EchoingRuntime(
        app.extensions["quineling"].service.runtime.store
    )
    assert store is not None
    client = app.test_client()
    for status in ([], {}, "clarify"):
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {"message": user_message(data({"status": status}))},
        }
        task = client.post(RPC, json=body, headers=V1).get_json()["result"]["task"]
        expected = "TASK_STATE_INPUT_REQUIRED" if status == "clarify" else "TASK_STATE_COMPLETED"
        assert task["status"]["state"] == expected
