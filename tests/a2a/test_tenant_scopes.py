"""A tenant named ``default`` is a tenant of its own, not the tenant-less default tenant (whose tasks and
runtime state stay where they have always been stored), on memory, fakeredis and real Redis."""

from __future__ import annotations

from typing import Any

import pytest

from quineling.a2a.context import CallContext, tenant_scope
from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from stores.redis import keys
from tests.a2a.conftest import data, text, user_message
from tests.conftest import BACKENDS
from tests.support.bindings import V1
from tests.support.redis_keys import keys_under

SQUARE_SUM = "[2,3,4] | square | sum | report total"


def served(backend: Any) -> tuple[Any, Runtime]:
    runtime = Runtime(store=backend.state_store())
    app = create_app(
        runtime=runtime, task_store=backend.task_store(describe=describe_task), config={"tenants": "*"}
    )
    return app.test_client(), runtime


def under(tenant: str, path: str) -> str:
    return f"/a2a/rest{'/' + tenant if tenant else ''}{path}"


def send(client: Any, tenant: str, part: dict[str, Any]) -> dict[str, Any]:
    body = {"message": user_message(part)}
    answer = client.post(under(tenant, "/message:send"), json=body, headers=V1)
    assert answer.status_code == 200, answer.get_json()
    task: dict[str, Any] = answer.get_json()["task"]
    return task


def listed(client: Any, tenant: str) -> set[str]:
    page = client.get(under(tenant, "/tasks"), headers=V1).get_json()
    return {task["id"] for task in page["tasks"]}


def inspect_state(client: Any, tenant: str, artifact_id: str) -> str:
    task = send(client, tenant, data({"operation": "inspect", "artifactId": artifact_id}))
    state: str = task["status"]["state"]
    return state


def test_scopes_of_distinct_tenants_are_distinct() -> None:
    names = ["", "default", "%64efault", "Default", "a/b", "a%2Fb", "acme"]
    scopes = [CallContext(tenant=name).scope for name in names]
    assert len(set(scopes)) == len(names), scopes
    assert len({CallContext(tenant=name).partition for name in names}) == len(names)
    # The tenant-less scope is the one every earlier version used.
    assert CallContext().scope == "default/anonymous" and CallContext().partition == "default"
    assert tenant_scope("acme") == "acme"  # other named tenants are where they were, too


def test_a_tenant_named_default_sees_nothing_of_the_default_tenant(make_backend: Any) -> None:
    client, _ = served(make_backend())
    artifact = send(client, "", text(SQUARE_SUM))["artifacts"][0]["parts"][0]["data"]["result"]["artifact"]
    waiting = send(client, "", text("[1,2,3] | sum"))["id"]

    assert listed(client, "default") == set()
    assert client.get(under("default", f"/tasks/{waiting}"), headers=V1).status_code == 404
    cancel = client.post(under("default", f"/tasks/{waiting}:cancel"), headers=V1)
    assert cancel.status_code == 404
    assert inspect_state(client, "default", artifact["id"]) == "TASK_STATE_FAILED"  # not its artifact
    jsonrpc = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"tenant": "default"}}
    own = client.post("/a2a/jsonrpc", json=jsonrpc, headers=V1).get_json()["result"]["tasks"]
    assert len(own) == 1 and own[0]["id"] not in listed(client, "")  # the failed inspect only

    # …and the other way round: the default tenant sees nothing of the tenant named "default".
    named = send(client, "default", text("[4] | sum"))["id"]
    assert named not in listed(client, "")
    assert client.get(under("", f"/tasks/{named}"), headers=V1).status_code == 404
    assert inspect_state(client, "", artifact["id"]) == "TASK_STATE_COMPLETED"
    assert client.get(under("", f"/tasks/{waiting}"), headers=V1).get_json()["status"]["state"] == (
        "TASK_STATE_INPUT_REQUIRED"
    )


def test_the_default_tenant_keeps_what_earlier_versions_stored(make_backend: Any) -> None:
    """Runtime state in scope ``default`` and tasks in ``default/anonymous`` — where the tenant-less default
    tenant has always kept them — are still its own, and not the tenant named ``default``'s."""
    backend = make_backend()
    client, runtime = served(backend)
    created = runtime.dispatch({"operation": "create", "thought": SQUARE_SUM}, scope="default")
    artifact_id = created["result"]["artifact"]["id"]
    old = {"id": "task-from-before", "contextId": "ctx-before", "status": {"state": "TASK_STATE_COMPLETED"}}
    backend.task_store(describe=describe_task).save("default/anonymous", old, expect_version=0)

    assert client.get(under("", "/tasks/task-from-before"), headers=V1).status_code == 200
    assert inspect_state(client, "", artifact_id) == "TASK_STATE_COMPLETED"
    assert client.get(under("default", "/tasks/task-from-before"), headers=V1).status_code == 404
    assert inspect_state(client, "default", artifact_id) == "TASK_STATE_FAILED"


@pytest.mark.parametrize("make_backend", [BACKENDS["fakeredis"], BACKENDS["redis"]], indirect=True)
def test_on_redis_the_two_tenants_have_keys_of_their_own(make_backend: Any) -> None:
    backend = make_backend()
    client, _ = served(backend)
    send(client, "", text(SQUARE_SUM))
    send(client, "default", text("[4] | sum | report t"))
    redis = backend.connection.shared
    # Every key but the deployment's scope registry (one per prefix) is a scope's.
    found = {key.decode() for key in keys_under(redis, backend.prefix)} - {
        keys.scope_registry(backend.prefix)
    }
    tenant_less, named = (
        keys.scope_tag(backend.prefix, "default"),
        keys.scope_tag(backend.prefix, "%64efault"),
    )
    assert {key.split("}", 1)[0] + "}" for key in found} == {tenant_less, named}
    for tag in (tenant_less, named):
        assert redis.hlen(f"{tag}:task:data") == 1 and redis.hlen(f"{tag}:doc") >= 1
