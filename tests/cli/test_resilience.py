"""The Quineling extras where the official CLI is silent, through the client's fault server: ``task subscribe``
resuming a cut stream (Last-Event-ID), and safe automatic retries (``--retries``, ``--no-retry``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.support import clean_env, cli_in_process
from tests.client.fault_server import Reply, Request, agent_server, rpc_result, sse, task

pytestmark = pytest.mark.slow


def _event(result: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 1, "result": result}


def _status(state: str) -> dict[str, object]:
    return _event({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}})


def test_subscribe_resumes_a_cut_stream_from_the_last_event(tmp_path: Path) -> None:
    """TASK_SUBSCRIBE_002."""
    subscriptions: list[Request] = []

    def handle(request: Request) -> Reply:
        if request.body["method"] == "GetTask":
            return rpc_result(request, task("t1", "TASK_STATE_WORKING"))
        subscriptions.append(request)
        if len(subscriptions) == 1:
            return Reply(events=[sse(_event({"task": task("t1", "TASK_STATE_WORKING")}), "1"),
                                 sse(_status("TASK_STATE_WORKING"), "2")], cut=True)  # fmt: skip
        return Reply(events=[sse(_status("TASK_STATE_COMPLETED"), "3")])

    with agent_server(handle) as live:
        followed = cli_in_process("task", "subscribe", "t1", "--stream", "-o", "json", "-a", live.base, cwd=tmp_path,
                       env=clean_env(tmp_path))  # fmt: skip
    lines = [json.loads(line) for line in followed.out.splitlines()]
    assert followed.code == 0, followed.err
    assert [next(iter(line)) for line in lines] == ["task", "statusUpdate", "statusUpdate"]
    assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(subscriptions) == 2 and subscriptions[1].header("Last-Event-ID") == "2"


@pytest.mark.parametrize(
    ("flags", "attempts", "code"), [([], 3, 0), (["--retries", "1"], 2, 3), (["--no-retry"], 1, 3)]
)
def test_get_task_is_retried_on_503_as_configured(
    tmp_path: Path, flags: list[str], attempts: int, code: int
) -> None:
    """Safe retries: GetTask (repeatable) after 503s, with Retry-After honoured; --no-retry / --retries N."""
    calls: list[Request] = []

    def handle(request: Request) -> Reply:
        calls.append(request)
        if len(calls) < 3:
            return Reply(status=503, headers={"Retry-After": "0"}, body={"error": "busy"})
        return rpc_result(request, task("t1", "TASK_STATE_COMPLETED"))

    with agent_server(handle) as live:
        got = cli_in_process(
            "task", "get", "t1", "-o", "json", "-a", live.base, *flags, cwd=tmp_path, env=clean_env(tmp_path)
        )
    assert got.code == code and len(calls) == attempts
    if code == 0:
        assert got.json()["id"] == "t1"
    else:
        assert got.json()["error"]["code"] == "A2ACLI_ERR_UNREACHABLE"


def test_push_config_create_get_list_delete(tmp_path: Path) -> None:
    """PUSH_001 on an agent whose card declares push notifications (the fault server answers each call)."""
    seen: list[tuple[str, object]] = []
    config = {"taskId": "t1", "id": "cfg-1", "url": "https://example.com/hook", "token": "tok"}

    def handle(request: Request) -> Reply:
        method = request.body["method"]
        seen.append((method, request.body["params"]))
        if method == "ListTaskPushNotificationConfigs":
            return rpc_result(request, {"configs": [config]})
        if method == "DeleteTaskPushNotificationConfig":
            return rpc_result(request, {})
        return rpc_result(request, config)

    with agent_server(handle, push=True) as live:
        env, a = clean_env(tmp_path), ["-a", live.base]
        created = cli_in_process("task", "push-config", "create", "t1", "--url", config["url"], "--token", "tok",
                      "--config-id", "cfg-1", *a, cwd=tmp_path, env=env)  # fmt: skip
        got = cli_in_process(
            "task", "push-config", "get", "t1", "cfg-1", "-o", "json", *a, cwd=tmp_path, env=env
        )
        listed = cli_in_process("task", "push-config", "list", "t1", "-o", "json", *a, cwd=tmp_path, env=env)
        deleted = cli_in_process("task", "push-config", "delete", "t1", "cfg-1", *a, cwd=tmp_path, env=env)
    assert created.code == 0 and created.fields()["Config-Id"] == "cfg-1" and "tok" not in created.out
    assert got.code == 0 and got.json() == config
    assert listed.code == 0 and listed.json() == {"configs": [config]}
    assert deleted.code == 0 and deleted.fields()["Deleted"] == "cfg-1"
    assert [method for method, _ in seen] == [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ]
    assert seen[0][1] == {"taskId": "t1", "url": "https://example.com/hook", "id": "cfg-1", "token": "tok"}
