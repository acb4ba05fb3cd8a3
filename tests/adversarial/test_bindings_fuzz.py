"""Fuzzing both bindings' envelopes through the app's test client: JSON-RPC 1.0 and v0.3 methods, raw bodies,
every HTTP+JSON route. Never a 5xx, never -32603 for client input, every error in the binding's own shape
(the oracle: tests/adversarial/support.py); and the two bindings give the same verdict on the same request."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from hypothesis import given
from hypothesis import strategies as st

from quineling.a2a.errors import ERRORS_BY_CODE, ERRORS_BY_REASON, InvalidParamsError, InvalidRequestError
from tests.adversarial.conftest import Target
from tests.adversarial.strategies import V03, V1_METHODS, ids, v03_params, v1_params
from tests.adversarial.support import (
    RAW_TOKENS,
    SPECIAL_STRINGS,
    check_jsonrpc,
    check_rest,
    fuzz,
    json_trees,
    leaf_values,
    to_text,
)

RPC = "/a2a/jsonrpc"
STREAMS = {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}
SUBSCRIPTIONS = {"SubscribeToTask", "tasks/resubscribe"}
CONTENT_TYPES = [
    "application/json", "application/json", "application/a2a+json", "application/json; charset=utf-8",
    "text/plain", "application/x-www-form-urlencoded", "", "application/jsonx",
]  # fmt: skip
VERSIONS = [None, "1.0", "1.0", "0.3", "1", "2.0", "", "1.0.5", "x"]


def expected_id(value: Any) -> Any:
    """The id the server must echo for the ``id`` member sent, ``None`` when that member is no valid id."""
    try:
        parsed = json.loads(to_text(value))
    except ValueError:
        return None
    if isinstance(parsed, bool) or not isinstance(parsed, str | int):
        return None
    if isinstance(parsed, str):
        try:
            parsed.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return parsed


def post_rpc(target: Target, text: str, version: str | None, content_type: str | None) -> Any:
    headers = {} if version is None else {"A2A-Version": version}
    if content_type:
        headers["Content-Type"] = content_type
    return target.client.post(RPC, data=text.encode("utf-8", "surrogatepass"), headers=headers)


@fuzz(200)
@given(data=st.data())
def test_jsonrpc_envelopes(target: Target, data: st.DataObject) -> None:
    family = data.draw(st.sampled_from(["1.0", "1.0", "v0.3", "v0.3", "unknown"]), label="family")
    if family == "1.0":
        method: Any = data.draw(st.sampled_from(V1_METHODS), label="method")
        params = data.draw(v1_params(method, target.ids, target.corpus), label="params")
        version = data.draw(st.sampled_from(["1.0"] * 6 + VERSIONS), label="version")
    elif family == "v0.3":
        method = data.draw(st.sampled_from(V03), label="method")
        params = data.draw(v03_params(method, target.ids, target.corpus), label="params")
        version = data.draw(st.sampled_from([None] * 6 + VERSIONS), label="version")
    else:
        method = data.draw(
            leaf_values | st.sampled_from(["tasks/list", "sendMessage", "a/b", "SendMessage "])
        )
        params = data.draw(json_trees(), label="params")
        version = data.draw(st.sampled_from(VERSIONS), label="version")
    rpc_id = data.draw(
        st.one_of(st.integers(-5, 2**63), st.text(max_size=6), st.none(), leaf_values), label="id"
    )
    envelope: dict[Any, Any] = {
        "jsonrpc": data.draw(st.sampled_from(["2.0"] * 8) | leaf_values),
        "id": rpc_id,
    }
    envelope["method"] = method
    if data.draw(st.integers(0, 9), label="params?"):
        envelope["params"] = params
    for name in data.draw(st.sets(st.sampled_from(["jsonrpc", "id", "method"]), max_size=1), label="drop"):
        del envelope[name]
    content_type = data.draw(st.sampled_from(CONTENT_TYPES), label="content type")
    text = to_text(envelope)
    response = post_rpc(target, text, version, content_type)
    where = f"POST {RPC} {text[:300]}"
    legacy = isinstance(method, str) and method in V03
    check_jsonrpc(
        response,
        expected_id(rpc_id) if "id" in envelope else None,
        legacy=legacy,
        where=where,
        max_events=1 if method in SUBSCRIPTIONS else 8,
    )
    target.guard.check(where)


@fuzz(150)
@given(
    body=st.one_of(
        st.binary(max_size=64),
        st.text(max_size=64).map(lambda t: t.encode("utf-8", "surrogatepass")),
        json_trees().map(lambda v: to_text(v).encode()),
        st.sampled_from(RAW_TOKENS).map(lambda r: r.text.encode()),
        st.sampled_from(
            [
                b'{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": ',
                b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}garbage',
                b'\xef\xbb\xbf{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}',
                b'[{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}]',
                b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x\\u0000"}}',
                b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "\xed\xa0\x80"}}',
            ]
        ),
    ),
    version=st.sampled_from(VERSIONS),
)
def test_jsonrpc_raw_bodies(memory_target: Target, body: bytes, version: str | None) -> None:
    target = memory_target
    headers = {
        "Content-Type": "application/json",
        **({"A2A-Version": version} if version is not None else {}),
    }
    response = target.client.post(RPC, data=body, headers=headers)
    where = f"POST {RPC} {body[:200]!r}"
    check_jsonrpc(response, _id_of(body), legacy=True, where=where)
    target.guard.check(where)


def _id_of(body: bytes) -> Any:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    return expected_id(document.get("id")) if isinstance(document, dict) else None


# --- HTTP+JSON ----------------------------------------------------------------------------------------

# (verb, path under /a2a/rest with {id} and {config} placeholders, body method for the strategies)
ROUTES = [
    ("POST", "/message:send", "SendMessage"),
    ("POST", "/message:stream", "SendStreamingMessage"),
    ("GET", "/tasks", None),
    ("GET", "/tasks/{id}", None),
    ("POST", "/tasks/{id}:cancel", "CancelTask"),
    ("GET", "/tasks/{id}:subscribe", None),
    ("POST", "/tasks/{id}:subscribe", "SubscribeToTask"),
    ("POST", "/tasks/{id}/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    ("GET", "/tasks/{id}/pushNotificationConfigs", None),
    ("GET", "/tasks/{id}/pushNotificationConfigs/{config}", None),
    ("DELETE", "/tasks/{id}/pushNotificationConfigs/{config}", None),
    ("GET", "/extendedAgentCard", None),
    ("PUT", "/tasks/{id}", None),  # no such verb: 405
    ("HEAD", "/tasks/{id}", None),
    ("OPTIONS", "/message:send", None),
    ("GET", "/tasks/{id}/{config}/x", None),  # no such route: 404
]
QUERY_NAMES = [
    "historyLength", "history_length", "pageSize", "pageToken", "status", "contextId", "statusTimestampAfter",
    "includeArtifacts", "tenant", "A2A-Version", "x",
]  # fmt: skip
PATH_SEGMENTS = st.one_of(
    st.text(max_size=10).map(lambda t: quote(t.encode("utf-8", "surrogatepass"), safe="")),
    st.sampled_from(["%ED%A0%80", "%FF", "%00", "%2F", "a%2Fb", "..", "%", "%zz", "t:cancel", "x" * 300]),
)


@fuzz(200)
@given(data=st.data())
def test_rest_routes(target: Target, data: st.DataObject) -> None:
    verb, template, body_method = data.draw(st.sampled_from(ROUTES), label="route")
    segment = PATH_SEGMENTS | ids(target.ids).map(lambda t: quote(t, safe=""))
    path = template.replace("{id}", data.draw(segment, label="id")).replace(
        "{config}", data.draw(segment, label="config")
    )
    tenant = data.draw(st.sampled_from([None, None, "t1", "default"]) | PATH_SEGMENTS, label="tenant")
    if tenant is not None:
        path = f"/{tenant}{path}"
    query = data.draw(
        st.dictionaries(
            st.sampled_from(QUERY_NAMES), st.text(max_size=8) | st.sampled_from(SPECIAL_STRINGS), max_size=3
        ),
        label="query",
    )
    headers: dict[str, str] = {}
    version = data.draw(st.sampled_from(["1.0"] * 8 + VERSIONS), label="version")
    if version is not None:
        headers["A2A-Version"] = version
    if data.draw(st.booleans(), label="accept"):
        headers["Accept"] = data.draw(st.sampled_from(["application/a2a+json", "text/event-stream", "*/*"]))
    body: bytes | None = None
    if verb in ("POST", "PUT") and data.draw(st.integers(0, 5), label="body?"):
        value = data.draw(v1_params(body_method or "", target.ids, target.corpus), label="body")
        body = to_text(value).encode()
        headers["Content-Type"] = data.draw(st.sampled_from(CONTENT_TYPES), label="content type")
    url = "/a2a/rest" + path
    response = target.client.open(url, method=verb, data=body, query_string=query, headers=headers)
    where = f"{verb} {url} {query} {body[:300] if body else b''!r}"
    subscription = template.endswith(":subscribe")
    check_rest(response, where=where, max_events=1 if subscription else 8)
    target.guard.check(where)


# --- both bindings, one verdict -----------------------------------------------------------------------


def verdict_rpc(target: Target, method: str, params: Any) -> Any:
    text = to_text({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    response = post_rpc(target, text, "1.0", "application/json")
    envelope = check_jsonrpc(response, 1, legacy=False, where=f"{method} {text[:300]}")
    if isinstance(envelope, list):
        return "ok"
    return "ok" if "result" in envelope else ERRORS_BY_CODE[envelope["error"]["code"]]


def verdict_rest(target: Target, path: str, params: Any) -> Any:
    body = to_text(params)
    response = target.client.post(
        "/a2a/rest" + path, data=body, headers={"A2A-Version": "1.0", "Content-Type": "application/json"}
    )
    result = check_rest(response, where=f"POST {path} {body[:300]}")
    if response.status_code < 400:
        return "ok"
    reason = result["error"]["details"][0]["reason"]
    standard = {"INVALID_PARAMS": InvalidParamsError, "INVALID_REQUEST": InvalidRequestError}
    return ERRORS_BY_REASON.get(reason) or standard[reason]


def same_class(rpc: Any, rest: Any) -> bool:
    """A JSON parse error and an invalid request are both 'not a request' on HTTP+JSON (one 400 reason)."""
    loose = {ERRORS_BY_CODE[-32700], InvalidRequestError}
    return rpc == rest or (rpc in loose and rest in loose)


@fuzz(100)
@given(data=st.data())
def test_both_bindings_give_the_same_verdict(memory_target: Target, data: st.DataObject) -> None:
    """SendMessage and CancelTask carry the same request object over both bindings (the REST body is the
    JSON-RPC params), so each must be accepted by both or refused by both with the same error. Ids are made
    up or finished tasks', so the first send cannot change what the second one meets."""
    target = memory_target
    finished = target.task_ids[:1] + target.task_ids[2:]  # not the INPUT_REQUIRED one
    # No "/" in made-up ids: an HTTP+JSON path cannot carry one (werkzeug decodes %2F before routing), so
    # that route would not be found at all, which JSON-RPC cannot mirror.
    made_up = st.text(min_size=1, max_size=8).map(lambda t: "fuzz-" + t.replace("/", "")) | st.sampled_from(
        finished
    )
    method = data.draw(st.sampled_from(["SendMessage", "CancelTask"]), label="method")
    params = data.draw(v1_params(method, [], target.corpus), label="params")
    if not isinstance(params, dict):
        return  # no request object: each binding says so in its own terms (-32602 params / 400 body)
    params.pop("tenant", None)
    message = params.get("message")
    if isinstance(message, dict) and "taskId" in message:
        message["taskId"] = data.draw(made_up, label="taskId")
    if method == "CancelTask":
        params["id"] = data.draw(made_up, label="id")
    rpc = verdict_rpc(target, method, params)
    path = "/message:send"
    if method == "CancelTask":
        task_id = params.get("id")
        if not isinstance(task_id, str) or not task_id:
            return  # no path to put it in: the REST route itself differs
        path = f"/tasks/{quote(task_id, safe='')}:cancel"
        params = {k: v for k, v in params.items() if k != "id"}
    rest = verdict_rest(target, path, params)
    assert same_class(rpc, rest), f"{method} {to_text(params)[:400]}: JSON-RPC {rpc}, HTTP+JSON {rest}"
    target.guard.check(method)
