"""Shared A2A fixtures: an app over a fake runtime, and a ``binding`` fixture that runs each scenario over
JSON-RPC and over HTTP+JSON through the client adapters of ``tests/support/bindings.py``."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from quineling.app import create_app
from quineling.runtime.errors import QuinelingError
from stores.base import backend_from_url
from tests.support.bindings import JsonRpcBinding, RestBinding


class FakeRuntime:
    """Same ``dispatch`` signature as the real Runtime, with deterministic outcomes for lifecycle tests."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def dispatch(self, request: Any) -> dict[str, Any]:
        self.calls.append(request)
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
    kwargs = {"runtime": FakeRuntime(), "task_store": backend.task_store(), "config": config, **overrides}
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
