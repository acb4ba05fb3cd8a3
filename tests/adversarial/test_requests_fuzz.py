"""Fuzzing from valid A2A requests: each example takes a request every binding serves (JSON-RPC 1.0, v0.3 and
HTTP+JSON, on the target's real tasks) and puts a hostile value somewhere inside it — a lone surrogate in an
id that becomes a Redis key, ``1e400`` or 700 levels of nesting in metadata, a list where an enum name goes,
``"x"`` where an object goes, an instant outside the datetime range. The oracle is the suite's
(tests/adversarial/support.py): never a 5xx, never -32603, every error in the binding's shape."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from quineling.a2a.compat_v03.methods import V03_METHODS
from tests.adversarial.conftest import DOCS_TENANT, Target
from tests.adversarial.support import check_jsonrpc, check_rest, fuzz, mutated, to_text
from tests.support.bindings import rest_route

STREAMS = {"SendStreamingMessage", "message/stream"}
SUBSCRIPTIONS = {"SubscribeToTask", "tasks/resubscribe"}


def seeds(target: Target) -> list[Any]:
    """``[method, params]`` pairs, each a valid request on the target's state."""
    if "a2a" in target.seeds:
        return target.seeds["a2a"]
    completed, waiting, failed, _rejected, canceled = target.task_ids
    request = sorted(target.corpus.values(), key=repr)[0]
    message = {
        "messageId": "m-seed",
        "role": "ROLE_USER",
        "parts": [{"data": request, "mediaType": "application/json", "metadata": {"p": 1}}],
        "metadata": {"trace": {"span": "s1", "tags": ["a", "b"]}},
        "extensions": [],
        "referenceTaskIds": [completed],
    }
    follow_up = {
        "messageId": "m-seed-2",
        "role": "ROLE_USER",
        "taskId": waiting,
        "parts": [{"text": "[1] | sum | report t"}],
    }
    send = {
        "message": message,
        "configuration": {"historyLength": 2, "returnImmediately": False},
        "metadata": {"k": "v"},
    }
    v03_message = {
        "kind": "message",
        "messageId": "m-seed-3",
        "role": "user",
        "parts": [{"kind": "data", "data": request, "metadata": {"p": 1}}, {"kind": "text", "text": "x"}],
        "metadata": {"trace": "t"},
    }
    pairs = [
        ("SendMessage", send),
        ("SendMessage", {**send, "tenant": DOCS_TENANT}),
        ("SendMessage", {"message": follow_up}),
        ("SendStreamingMessage", send),
        ("GetTask", {"id": completed, "historyLength": 1}),
        ("ListTasks", {"contextId": target.context_ids[0], "status": "TASK_STATE_COMPLETED", "pageSize": 2,
                       "statusTimestampAfter": "2020-01-01T00:00:00Z", "includeArtifacts": True, "historyLength": 0}),
        ("CancelTask", {"id": canceled, "metadata": {"why": "x"}}),
        ("CancelTask", {"id": failed}),
        ("SubscribeToTask", {"id": waiting}),
        ("CreateTaskPushNotificationConfig", {"taskId": completed, "url": "https://example.invalid/hook"}),
        ("message/send", {"message": v03_message, "configuration": {"blocking": True, "historyLength": 1}, "metadata": {"m": 1}}),
        ("message/stream", {"message": v03_message}),
        ("tasks/get", {"id": completed, "historyLength": 1}),
        ("tasks/cancel", {"id": canceled, "metadata": {"why": "x"}}),
        ("tasks/resubscribe", {"id": waiting}),
    ]  # fmt: skip
    target.seeds["a2a"] = [[method, params] for method, params in pairs]  # lists: the mutator walks into them
    return target.seeds["a2a"]


METHODS = frozenset(
    {"SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
     "CreateTaskPushNotificationConfig", "message/send", "message/stream", "tasks/get", "tasks/cancel",
     "tasks/resubscribe"}
)  # fmt: skip


def _query(params: dict[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else to_text(v) for k, v in params.items()}


@fuzz(250)
@given(data=st.data())
def test_valid_requests_with_hostile_values(target: Target, data: st.DataObject) -> None:
    pair = data.draw(mutated(seeds(target)), label="request")
    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)) or pair[0] not in METHODS:
        return  # the mutation hit the method name: the envelope fuzzers cover that
    method, params = pair
    legacy = method in V03_METHODS
    binding = "jsonrpc" if legacy else data.draw(st.sampled_from(["jsonrpc", "rest"]), label="binding")
    events = 1 if method in SUBSCRIPTIONS else 8
    if binding == "jsonrpc":
        text = to_text({"jsonrpc": "2.0", "id": 3, "method": method, "params": params})
        headers = {"Content-Type": "application/json", **({} if legacy else {"A2A-Version": "1.0"})}
        response = target.client.post("/a2a/jsonrpc", data=text, headers=headers)
        where = f"POST /a2a/jsonrpc {text[:500]}"
        check_jsonrpc(response, 3, legacy=legacy, where=where, max_events=events)
    else:
        needs = {"GetTask": "id", "CancelTask": "id", "SubscribeToTask": "id"}.get(method)
        if "PushNotificationConfig" in method:
            needs = "taskId"
        if not isinstance(params, dict) or (
            needs and not (isinstance(params.get(needs), str) and params[needs])
        ):
            return  # no path segment to carry the id: the route fuzzer covers odd paths
        verb, path, body, query = rest_route(method, {k: v for k, v in params.items()})
        text = to_text(body) if body is not None else None
        url = "/a2a/rest" + path
        response = target.client.open(
            url, method=verb, data=text, query_string=_query(query),
            headers={"A2A-Version": "1.0", **({"Content-Type": "application/json"} if text is not None else {})},
        )  # fmt: skip
        where = f"{verb} {url} {query} {(text or '')[:500]}"
        check_rest(response, where=where, max_events=events)
    target.guard.check(where)
