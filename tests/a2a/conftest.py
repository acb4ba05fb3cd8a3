"""Shared A2A fixtures: an app over a fake runtime, and a ``binding`` fixture that runs each scenario over
JSON-RPC and over HTTP+JSON through the client adapters of ``tests/support/bindings.py``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.errors import QuinelingError
from stores import ChangeSet, StateStore, TaskWrite, backend_from_url
from tests.support.bindings import JsonRpcBinding, RestBinding


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


@pytest.fixture(params=["jsonrpc", "rest"])
def binding(request: Any, client: Any) -> Any:
    return JsonRpcBinding(client) if request.param == "jsonrpc" else RestBinding(client)
