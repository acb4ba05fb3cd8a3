"""``quineling store usage`` and ``quineling store reset``: in-process over fakeredis (the command's backend
swapped in) and as a real process over real Redis; the memory store is refused with a reason."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from quineling import store_admin
from quineling.a2a.context import CallContext
from quineling.a2a.task_facts import describe_task
from quineling.cli import main
from quineling.runtime.context import Env, RuntimeLimits
from quineling.runtime.runtime import Runtime
from stores import Backend, RedisBackend, TaskWrite
from tests.support.redis_keys import delete_under

SQUARES = "[2,3,4] | square | sum | report total"
ALICE = "anonymous"  # the one principal there is before authentication: every caller
PRINCIPALS = (ALICE, "carol", "jwt~dave%40example.com")  # anonymous, a key's principal, a JWT's


def context(tenant: str, principal: str = ALICE) -> CallContext:
    """The call context the binding makes for ``principal`` (quineling.a2a.http.binding.call_context)."""
    if principal == ALICE:
        return CallContext(tenant=tenant)
    return CallContext(tenant=tenant, principal=principal, user=principal)


def populate(backend: Backend, tenant: str, runs: int = 2, principal: str = ALICE) -> str:
    """A create and ``runs`` runs in one tenant's scope, each with its task, as the service commits them."""
    scope = store_admin.scope_of(principal, tenant)
    backend.scope_registry().admit(scope)  # as the service does before it writes
    runtime = Runtime(store=backend.state_store(), env=Env(limits=RuntimeLimits(max_records=10)))
    tasks = backend.task_store(describe=describe_task)
    task_scope = context(tenant, principal).scope

    def attach(_outcome: Any) -> TaskWrite:
        body = {"id": uuid.uuid4().hex, "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        return TaskWrite(tasks, task_scope, body)

    created = runtime.dispatch({"operation": "create", "thought": SQUARES}, scope=scope, attach=attach)
    artifact_id = created["result"]["artifact"]["id"]
    for _ in range(runs):
        runtime.dispatch({"operation": "run", "artifactId": artifact_id}, scope=scope, attach=attach)
    return scope


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """The backend the commands open: one fakeredis server behind every backend they make."""
    import fakeredis

    server = fakeredis.FakeServer()
    prefix = f"qt-{uuid.uuid4().hex[:8]}"

    def open_backend(url: str, **options: Any) -> Backend:
        return RedisBackend("redis://fake", client=fakeredis.FakeRedis(server=server), prefix=prefix)

    monkeypatch.setattr(store_admin, "backend_from_url", open_backend)
    monkeypatch.setenv("QUINELING_STORE_URL", "redis://fake:6379/0")
    monkeypatch.setenv("QUINELING_MAX_RECORDS", "10")
    yield open_backend("")


def held(backend: Backend) -> list[str]:
    """The scopes the commands act on: registered and holding something."""
    return store_admin.select(backend, None, None)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(argv))
    finally:
        sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


def test_scope_of_and_its_inverse_follow_the_call_context() -> None:
    """What the commands select is exactly the scope the service commits a caller's requests in."""
    for principal in PRINCIPALS:
        for tenant in ("", "default", "acme", "a/b", "ünï", "%41", "carol:x"):
            scope = store_admin.scope_of(principal, tenant)
            assert scope == context(tenant, principal).partition
            assert store_admin.tenant_in(scope, principal) == tenant
            for other in PRINCIPALS:  # nobody else's
                assert other == principal or store_admin.tenant_in(scope, other) is None, (scope, other)


def test_a_principal_is_selected_and_reset_alone(fake: Backend) -> None:
    """With authentication each principal's scopes are its own: reset drops carol's and leaves the rest."""
    anonymous, carols = populate(fake, "acme"), populate(fake, "acme", principal="carol")
    jwt = populate(fake, "", principal=PRINCIPALS[2])
    assert carols == "carol:acme" and len({anonymous, carols, jwt}) == 3
    code, out, _ = run("store", "usage", "--principal", "carol")
    assert code == 0 and out.startswith(f"scope {carols}\n") and out.count("scope ") == 1
    code, out, _ = run("store", "reset", "--principal", "carol", "--yes")
    assert code == 0 and out == f"reset scope {carols}: dropped 3 documents and 3 tasks\n"
    assert held(fake) == sorted([anonymous, jwt])


def test_usage_prints_every_scope_against_every_limit(fake: Backend) -> None:
    default, acme = populate(fake, ""), populate(fake, "acme", runs=3)
    code, out, _ = run("store", "usage")
    assert code == 0
    blocks = {block.splitlines()[0]: block for block in out.split("scope ")[1:]}
    assert set(blocks) == {default, acme}
    rows = {line.split()[0]: line.split() for line in blocks[acme].splitlines()[2:]}
    assert rows["artifacts"][1:3] == ["1", "128"]
    assert rows["records"][1:3] == ["3", "10"]  # QUINELING_MAX_RECORDS
    assert rows["records"][4:] == ["(in", "900", "s)"]  # the oldest record lapses 900 s after it was made
    assert rows["tasks"][1:3] == ["4", "128"] and rows["admission-receipts"][1:] == ["0", "128", "-"]
    assert int(rows["task-bytes"][1]) == fake.usage(acme).task_bytes
    assert "documents 4 (" in blocks[acme]  # the artifact and three records
    code, out, _ = run("store", "usage", "--principal", ALICE, "--tenant", "acme")
    assert code == 0 and out.startswith(f"scope {acme}\n") and out.count("scope ") == 1


def test_reset_needs_yes_and_drops_one_scope_whole(fake: Backend) -> None:
    default, acme = populate(fake, ""), populate(fake, "acme")
    code, out, err = run("store", "reset", "--principal", ALICE, "--tenant", "acme")
    assert code == 2 and "add --yes" in err and out.startswith(f"scope {acme}")
    assert not fake.usage(acme).is_empty  # nothing dropped without --yes
    code, out, _ = run("store", "reset", "--principal", ALICE, "--tenant", "acme", "--yes")
    assert code == 0 and out == f"reset scope {acme}: dropped 3 documents and 3 tasks\n"
    assert fake.usage(acme).is_empty and held(fake) == [default]
    assert fake.usage(default).counters == {
        "artifacts": 1,
        "artifact-bytes": fake.usage(default).counters["artifact-bytes"],
        "records": 2,
    }
    code, out, _ = run("store", "reset", "--principal", ALICE, "--yes")  # every scope of the principal
    assert code == 0 and out.startswith(f"reset scope {default}") and held(fake) == []
    code, out, _ = run("store", "reset", "--principal", ALICE, "--yes")
    assert code == 0 and "nothing to reset" in out


def test_the_memory_store_is_refused_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUINELING_STORE_URL", "memory://")
    for argv in (("store", "usage"), ("store", "reset", "--principal", ALICE, "--yes")):
        code, out, err = run(*argv)
        assert code == 2 and out == ""
        assert "lives inside the serving process" in err and "restarting the server empties it" in err
    code, out, err = run("store", "usage", "-o", "json")
    assert code == 2 and err == "" and json.loads(out)["error"]["code"] == "QUINELING_STORE_UNREACHABLE"


def test_store_commands_speak_json_and_fail_in_the_cli_envelope(fake: Backend) -> None:
    acme = populate(fake, "acme")
    code, out, _ = run("store", "usage", "-o", "json")
    (scope,) = json.loads(out)["scopes"]
    assert code == 0 and scope["scope"] == acme and scope["counters"]["records"]["used"] == 2
    assert scope["counters"]["records"]["limit"] == 10 and scope["documents"] == 3
    code, out, _ = run("store", "reset", "--principal", ALICE, "-o", "json")  # without --yes: the envelope
    error = json.loads(out)["error"]
    assert code == 2 and error["code"] == "A2ACLI_ERR_USAGE" and "add --yes" in error["message"]
    code, out, _ = run("store", "reset", "--principal", ALICE, "--yes", "-o", "json")
    assert code == 0 and json.loads(out) == {"reset": [{"scope": acme, "documents": 3, "tasks": 3}]}


def test_usage_tenant_needs_a_principal(fake: Backend) -> None:
    code, _, err = run("store", "usage", "--tenant", "acme")
    assert code == 2 and "--tenant needs --principal" in err


def test_the_commands_as_processes_on_real_redis(redis_store_url: str) -> None:
    prefix = f"qt-cli-{uuid.uuid4().hex[:8]}"
    backend = RedisBackend(redis_store_url, prefix=prefix)
    try:
        scope = populate(backend, "acme")
        env = {**os.environ, "QUINELING_STORE_URL": redis_store_url, "QUINELING_STORE_PREFIX": prefix}

        def command(*argv: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "quineling.cli", "store", *argv],
                env=env, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip

        usage = command("usage")
        assert usage.returncode == 0 and usage.stdout.startswith(f"scope {scope}\n"), usage
        reset = command("reset", "--principal", ALICE, "--tenant", "acme", "--yes")
        assert (
            reset.returncode == 0
            and reset.stdout == f"reset scope {scope}: dropped 3 documents and 3 tasks\n"
        )
        assert held(backend) == [] and backend.usage(scope).is_empty
    finally:
        backend.close()
        delete_under(redis_store_url, prefix)


def test_the_command_line_describes_principals_as_the_store_commands_read_them() -> None:
    from quineling import cli

    assert cli.PRINCIPAL_HELP == store_admin.PRINCIPAL_HELP
