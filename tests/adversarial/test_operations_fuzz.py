"""Fuzzing the arguments of all sixteen runtime operations (docs/runtime-operations.md).

Each example takes a valid request of the documentation's (``target.corpus``: every operation, run against the
target's state, so its ids name real artifacts, records, worlds and residents) and mutates it a few times:
a value replaced by hostile JSON, a field dropped or added, a number nudged, a type changed, one operation's
fields given to another. The request then travels as the data part of a SendMessage over either binding —
and must come back as a task whose state follows from the runtime's answer, never as a 5xx or -32603 — and is
also handed to ``Runtime.dispatch`` directly, where only a result or a :class:`QuinelingError` may come out.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from quineling.runtime.errors import ERROR_CODES, QuinelingError
from quineling.runtime.product_operations import ALL_OPERATIONS
from stores import codec
from tests.adversarial.conftest import DOCS_TENANT, Target
from tests.adversarial.support import RAW_TOKENS, Raw, check_jsonrpc, check_rest, fuzz, mutated, to_text

STATES = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED"}


def runtime_corpus(target: Target) -> list[Any]:
    """The target's valid runtime requests, as one list per target (the mutator keys its tables by it)."""
    if "runtime" not in target.seeds:
        target.seeds["runtime"] = sorted(target.corpus.values(), key=repr)
    return target.seeds["runtime"]


def test_the_corpus_holds_every_operation(target: Target) -> None:
    assert {request["operation"] for request in target.corpus.values()} >= set(ALL_OPERATIONS)


def _send(target: Target, request: Any, binding: str) -> dict[str, Any] | None:
    """SendMessage with ``request`` as the data part; the task, or None when the request was refused before
    it reached the runtime (a boundary error in the binding's shape, checked by the oracle)."""
    part = {"data": request, "mediaType": "application/json"}
    params = {"message": {"messageId": "fuzz", "role": "ROLE_USER", "parts": [part]}, "tenant": DOCS_TENANT}
    if binding == "jsonrpc":
        text = to_text({"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": params})
        response = target.client.post(
            "/a2a/jsonrpc", data=text, headers={"A2A-Version": "1.0", "Content-Type": "application/json"}
        )
        envelope = check_jsonrpc(response, 5, legacy=False, where=f"SendMessage {text[:400]}")
        if "error" in envelope:
            assert envelope["error"]["code"] == -32602, envelope  # only the boundary may refuse it
            return None
        task: dict[str, Any] = envelope["result"]["task"]
        return task
    text = to_text(params)
    response = target.client.post(
        "/a2a/rest/message:send",
        data=text,
        headers={"A2A-Version": "1.0", "Content-Type": "application/json"},
    )
    body = check_rest(response, where=f"POST /message:send {text[:400]}")
    if response.status_code >= 400:
        assert response.status_code == 400, body
        return None
    task = body["task"]
    return task


def _check_task(task: dict[str, Any], where: str) -> None:
    state = task["status"]["state"]
    assert state in STATES, (where, state)
    if state == "TASK_STATE_FAILED":
        error = task["status"]["message"]["metadata"]["quinelingError"]
        assert error["code"] in ERROR_CODES and isinstance(error["message"], str), (where, error)
        assert error["path"] is None or isinstance(error["path"], str), (where, error)
    else:
        (artifact,) = [a for a in task["artifacts"] if a["artifactId"] == "quineling-result"]
        assert artifact["parts"][0]["data"]["operation"] in ALL_OPERATIONS, where


@fuzz(200)
@given(data=st.data())
def test_operation_arguments_over_a2a(target: Target, data: st.DataObject) -> None:
    request = data.draw(mutated(runtime_corpus(target), operations=ALL_OPERATIONS), label="request")
    binding = data.draw(st.sampled_from(["jsonrpc", "rest"]), label="binding")
    task = _send(target, request, binding)
    where = f"{binding} {to_text(request)[:400]}"
    if task is not None:
        _check_task(task, where)
    target.guard.check(where)


def _python(value: Any) -> Any:
    """``value`` with every :class:`Raw` leaf turned into the Python value it stands for (an infinite float,
    a lone surrogate, 5,000 nested lists…), for calling the runtime directly."""
    if isinstance(value, Raw):
        return RAW_VALUES[value]
    if isinstance(value, dict):
        return {(_python(k) if isinstance(k, Raw) else k): _python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    return value


def _raw_value(token: Raw) -> Any:
    text = token.text
    if set(text) <= set("[]"):
        nested: list[Any] = []
        for _ in range(text.count("[") - 1):
            nested = [nested]
        return nested
    if text.isdigit() and len(text) > 4000:
        return 10 ** len(text) - 1  # no str -> int conversion of that size is allowed
    return json.loads(text)


RAW_VALUES = {token: _raw_value(token) for token in RAW_TOKENS} | {Raw('"\\udc00"'): "\udc00"}
PYTHON_EXTRAS = [math.inf, -math.inf, math.nan, "\ud800", 10**400, (1, 2)]


@fuzz(300)
@given(data=st.data())
def test_operation_arguments_on_the_runtime_directly(memory_target: Target, data: st.DataObject) -> None:
    """``Runtime.dispatch`` is a library API too: whatever a caller hands it, the answer is a result or a
    QuinelingError (and a result is always encodable JSON)."""
    target = memory_target
    request = _python(data.draw(mutated(runtime_corpus(target), operations=ALL_OPERATIONS), label="request"))
    if data.draw(st.integers(0, 4), label="python extra?") == 0 and isinstance(request, dict):
        request[data.draw(st.sampled_from(sorted(request) or ["x"]))] = data.draw(
            st.sampled_from(PYTHON_EXTRAS)
        )
    try:
        outcome = target.runtime.dispatch(request, scope=DOCS_TENANT)
    except QuinelingError as exc:
        assert exc.code in ERROR_CODES
        return
    json.dumps(outcome, allow_nan=False)
    codec.dumps(outcome).encode("utf-8")
