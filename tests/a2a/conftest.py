"""Shared A2A fixtures: an app over a fake runtime, and a ``binding`` fixture that runs each scenario over
JSON-RPC and over HTTP+JSON through small client adapters."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from quineling.a2a.errors import ERRORS_BY_CODE, ERRORS_BY_REASON, A2AError
from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.errors import QuinelingError
from stores import ChangeSet, StateStore, TaskWrite, backend_from_url

V1 = {"A2A-Version": "1.0"}


class FakeRuntime:
    """A runtime with deterministic outcomes for lifecycle tests that honours the real contract
    (:class:`quineling.a2a.executor.Dispatcher`): it commits each outcome's task write in one state commit on
    ``store`` — an empty change set, so the task is what is committed — exactly as the real Runtime commits
    its change set with it. ``calls`` lists every dispatch; ``committed`` the requests whose outcome (result
    or error) was committed, which is what a client can observe."""

    def __init__(self, store: StateStore) -> None:
        self.store = store
        self.calls: list[Any] = []
        self.committed: list[Any] = []

    def dispatch(self, request: Any, *, scope: str, attach: Callable[[Any], TaskWrite]) -> dict[str, Any]:
        self.calls.append(request)
        try:
            outcome = self._outcome(request)
        except QuinelingError as exc:
            self.store.commit(scope, ChangeSet(), task=attach(exc))
            self.committed.append(request)
            raise
        self.store.commit(scope, ChangeSet(), task=attach(outcome))
        self.committed.append(request)
        return outcome

    @staticmethod
    def _outcome(request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("operation"), str):
            raise QuinelingError(
                "invalid-request", "a request must be an object with an operation", "operation"
            )
        operation = request["operation"]
        if operation == "create":
            thought = request.get("thought", "")
            if not thought.strip():
                return {
                    "operation": operation,
                    "result": {"status": "clarify", "diagnostics": ["empty thought"]},
                }
            if thought.startswith("unsupported"):
                return {"operation": operation, "result": {"status": "unsupported", "diagnostics": ["nope"]}}
            if thought.startswith("inconsistent"):
                return {"operation": operation, "result": {"status": "inconsistent", "diagnostics": ["x"]}}
            return {"operation": operation, "result": {"status": "created", "artifact": {"id": "sha256:abc"}}}
        if operation == "inspect":
            raise QuinelingError("not-found", f"unknown artifact {request.get('artifactId')!r}", "artifactId")
        raise QuinelingError("unknown-operation", f"unknown operation {operation!r}", "operation")


_ids = itertools.count(1)


def user_message(*parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"messageId": f"msg-{next(_ids)}", "role": "ROLE_USER", "parts": list(parts), **extra}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def data(value: Any, media_type: str | None = "application/json") -> dict[str, Any]:
    part: dict[str, Any] = {"data": value}
    if media_type:
        part["mediaType"] = media_type
    return part


def make_app(**overrides: Any) -> Any:
    # Protocol tests isolate scenarios by tenant, so this app serves any (the product default serves none).
    config = {
        "keepalive_seconds": 0.2,
        "subscribe_max_seconds": 5,
        "tenants": "*",
        **overrides.pop("config", {}),
    }
    backend = backend_from_url("memory://")
    runtime = FakeRuntime(backend.state_store())
    task_store = backend.task_store(describe=describe_task)
    kwargs = {"runtime": runtime, "task_store": task_store, "config": config, **overrides}
    app = create_app(**kwargs)
    app.config["TESTING"] = True
    return app


@pytest.fixture
def app() -> Any:
    return make_app()


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


# --- binding adapters ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    value: Any = None
    error: type[A2AError] | None = None
    raw: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_sse(chunks: Iterator[bytes]) -> Iterator[tuple[str, Any]]:
    """Yield ``(event type, data JSON)`` per SSE event; comment lines are skipped."""
    buffer = ""
    for chunk in chunks:
        buffer += chunk.decode("utf-8") if isinstance(chunk, bytes) else chunk
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            kind, lines = "message", []
            for line in block.split("\n"):
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    lines.append(line[5:].removeprefix(" "))
            if lines:
                yield kind, json.loads("\n".join(lines))


class JsonRpcBinding:
    name = "jsonrpc"

    def __init__(self, client: Any) -> None:
        self.client = client

    def call(self, method: str, params: Any) -> Outcome:
        body = {"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params}
        response = self.client.post("/a2a/jsonrpc", json=body, headers=V1)
        payload = response.get_json()
        assert payload["id"] == "req-1"
        if "error" in payload:
            return Outcome(error=ERRORS_BY_CODE[payload["error"]["code"]], raw=payload)
        return Outcome(payload["result"], raw=payload)

    def stream(self, method: str, params: Any) -> Outcome:
        body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
        response = self.client.post("/a2a/jsonrpc", json=body, headers={**V1, "Accept": "text/event-stream"})
        if not response.mimetype == "text/event-stream":
            return Outcome(
                error=ERRORS_BY_CODE[response.get_json()["error"]["code"]], raw=response.get_json()
            )
        return Outcome(self._events(response), raw=response)

    @staticmethod
    def _events(response: Any) -> Iterator[Any]:
        for kind, envelope in parse_sse(response.response):
            assert kind == "message" and envelope["id"] == 9
            yield envelope["result"]


class RestBinding:
    name = "rest"

    def __init__(self, client: Any) -> None:
        self.client = client

    def _route(
        self, method: str, params: dict[str, Any]
    ) -> tuple[str, str, dict[str, Any] | None, dict[str, Any]]:
        params = dict(params)
        if method in ("SendMessage", "SendStreamingMessage"):
            path = "/message:send" if method == "SendMessage" else "/message:stream"
            return "POST", path, params, {}
        if method == "GetTask":
            return "GET", f"/tasks/{params.pop('id')}", None, params
        if method == "ListTasks":
            return "GET", "/tasks", None, params
        if method == "CancelTask":
            return "POST", f"/tasks/{params.pop('id')}:cancel", params, {}
        if method == "SubscribeToTask":
            return "POST", f"/tasks/{params.pop('id')}:subscribe", None, {}
        if method == "CreateTaskPushNotificationConfig":
            return "POST", f"/tasks/{params.pop('taskId')}/pushNotificationConfigs", params, {}
        if method == "ListTaskPushNotificationConfigs":
            return "GET", f"/tasks/{params.pop('taskId')}/pushNotificationConfigs", None, params
        if method == "GetTaskPushNotificationConfig":
            return "GET", f"/tasks/{params['taskId']}/pushNotificationConfigs/{params['id']}", None, {}
        if method == "DeleteTaskPushNotificationConfig":
            return "DELETE", f"/tasks/{params['taskId']}/pushNotificationConfigs/{params['id']}", None, {}
        if method == "GetExtendedAgentCard":
            return "GET", "/extendedAgentCard", None, {}
        raise AssertionError(method)

    def _request(self, method: str, params: dict[str, Any]) -> Any:
        verb, path, body, query = self._route(method, params)
        query = {k: (json.dumps(v) if isinstance(v, bool) else v) for k, v in query.items()}
        return self.client.open("/a2a/rest" + path, method=verb, json=body, query_string=query, headers=V1)

    @staticmethod
    def _error(response: Any) -> Outcome:
        assert response.mimetype == "application/json"
        error = response.get_json()["error"]
        assert error["code"] == response.status_code
        return Outcome(
            error=ERRORS_BY_REASON.get(error["details"][0]["reason"]) or _standard(error), raw=error
        )

    def call(self, method: str, params: Any) -> Outcome:
        response = self._request(method, params)
        if response.status_code >= 400:
            return self._error(response)
        return Outcome(response.get_json(), raw=response.get_json())

    def stream(self, method: str, params: Any) -> Outcome:
        response = self._request(method, params)
        if response.status_code >= 400:
            return self._error(response)
        assert response.mimetype == "text/event-stream"
        return Outcome((event for _kind, event in parse_sse(response.response)), raw=response)


def _standard(error: dict[str, Any]) -> type[A2AError]:
    from quineling.a2a import errors

    reason = error["details"][0]["reason"]
    return {"INVALID_PARAMS": errors.InvalidParamsError, "INVALID_REQUEST": errors.InvalidRequestError}.get(
        reason, errors.InternalError
    )


@pytest.fixture(params=["jsonrpc", "rest"])
def binding(request: Any, client: Any) -> Any:
    return JsonRpcBinding(client) if request.param == "jsonrpc" else RestBinding(client)
