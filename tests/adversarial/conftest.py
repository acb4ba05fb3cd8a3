"""The app the adversarial suite attacks: the real runtime on a real store, with state to aim at.

``target`` is built once per module and backend (memory; real Redis when ``QUINELING_TEST_REDIS_URL`` is set,
and the Redis Cluster, where ids become keys): the examples of docs/runtime-operations.md have been run on it, so it holds
artifacts, records, a world with residents, an admitted child (in the tenant ``docs``) — and, in the default
tenant, tasks in every state, whose ids the strategies use as well as made-up ones. ``corpus`` is those examples' runtime requests, each valid, for the
operation fuzzer to mutate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from stores import MemoryBackend, RedisBackend
from tests.adversarial.support import LogGuard
from tests.conftest import ON_CLUSTER, REDIS_URL, cluster_url, needs_redis
from tests.docs.examples import Document, JsonRpcSender, run_examples
from tests.support.bindings import V1
from tests.support.redis_keys import delete_under


@dataclass
class Target:
    client: Any
    runtime: Runtime
    guard: LogGuard
    corpus: dict[str, dict[str, Any]]  # runtime requests by example name, all valid
    task_ids: list[str] = field(default_factory=list)  # one per task state the service can reach
    context_ids: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # every id-like string the state holds
    seeds: dict[str, list[Any]] = field(default_factory=dict)  # valid requests per kind, for the mutator

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # hypothesis prints the fixture with every falsifying example: the backend is what tells them apart
        printer.text(f"Target({self.client.application.extensions['quineling'].extras['task_store']!r})")


DOCS_TENANT = "docs"  # where the documentation's examples ran: the runtime state the operation fuzzer aims at


class _TenantSender(JsonRpcSender):
    """Runs the documentation's examples in their own tenant, so the default tenant holds only the few
    seeded tasks (listing fifty tasks with frame artifacts would make every ListTasks slow)."""

    def post(self, body: Any) -> Any:
        return super().post({**body, "params": {**body["params"], "tenant": DOCS_TENANT}})


def _seed_tasks(client: Any, target: Target) -> None:
    def send(message: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        task: dict[str, Any] = client.post("/a2a/jsonrpc", json=body, headers=V1).get_json()["result"]["task"]
        return task

    def message(n: int, part: dict[str, Any]) -> dict[str, Any]:
        return {"messageId": f"seed-{n}", "role": "ROLE_USER", "parts": [part]}

    completed = send(message(1, {"text": "[2,3,4] | square | sum | report total"}))
    waiting = send(message(2, {"text": "[2,3,4] | square | sum"}))  # INPUT_REQUIRED
    failed = send(message(3, {"data": {"operation": "explode"}}))
    rejected = send(message(4, {"text": "[1,2] | sum | sum | report x"}))
    canceled = send(message(5, {"text": "[1] | sum"}))
    body = {"jsonrpc": "2.0", "id": 2, "method": "CancelTask", "params": {"id": canceled["id"]}}
    client.post("/a2a/jsonrpc", json=body, headers=V1)
    for task in (completed, waiting, failed, rejected, canceled):
        target.task_ids.append(task["id"])
        target.context_ids.append(task["contextId"])


def _ids_in(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and (key.endswith("Id") or key == "id"):
                found.add(item)
            _ids_in(item, found)
    elif isinstance(value, list):
        for item in value:
            _ids_in(item, found)


@contextmanager
def _target(kind: str, name: str) -> Iterator[Target]:
    prefix = "qfuzz-" + "".join(c if c.isalnum() else "-" for c in name)[:40]
    url = {"memory": "", "redis": REDIS_URL, "cluster": cluster_url() if kind == "cluster" else ""}[kind]
    backend = MemoryBackend() if kind == "memory" else RedisBackend(url, prefix=prefix)
    runtime = Runtime(store=backend.state_store())
    app = create_app(
        runtime=runtime,
        task_store=backend.task_store(describe=describe_task),
        config={"tenants": "*", "keepalive_seconds": 0.2, "subscribe_max_seconds": 1},
    )
    app.config["TESTING"] = True
    client = app.test_client()
    run = run_examples(Document.load("docs/runtime-operations.md"), _TenantSender(client))
    corpus = {name: req for name, req in run.requests.items() if isinstance(req, dict) and "operation" in req}
    guard = LogGuard()
    target = Target(client, runtime, guard, corpus)
    _seed_tasks(client, target)
    found: set[str] = set(target.task_ids) | set(target.context_ids)
    _ids_in(run.answers, found)
    target.ids = sorted(found)
    loggers = [logging.getLogger(name) for name in ("quineling", "stores")]
    for logger in loggers:
        logger.addHandler(guard)
    try:
        yield target
    finally:
        for logger in loggers:
            logger.removeHandler(guard)
        if url:
            delete_under(url, prefix)
        backend.close()


@pytest.fixture(
    scope="module",
    params=[
        "memory",
        pytest.param("redis", marks=[pytest.mark.redis, needs_redis]),
        pytest.param("cluster", marks=ON_CLUSTER),
    ],
)
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """On every backend: for what reaches the store (ids become Redis keys)."""
    with _target(request.param, request.node.name) as made:
        yield made


@pytest.fixture(scope="module")
def memory_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """On the in-process store only: for what never depends on the backend (envelopes, the runtime)."""
    with _target("memory", request.node.name) as made:
        yield made
