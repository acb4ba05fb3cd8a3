"""The official JavaScript SDK (@a2a-js/sdk, pinned in tests/interop/js) against a real server, unmodified.

Each test runs ``node tests/interop/js/client.mjs <base-url> <scenario> <transport>`` and asserts on the JSON
it prints. Install the client with ``bash tests/interop/js/install.sh`` (CI does).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.interop.conftest import sdk_unavailable
from tests.support.live import LiveServer
from tests.support.tools import NODE_HOW_TO_GET, REQUIRE_INTEROP, require_tool

pytestmark = [pytest.mark.interop, pytest.mark.slow]

JS_DIR = Path(__file__).resolve().parent / "js"
SDK_VERSION = json.loads((JS_DIR / "package.json").read_text())["dependencies"]["@a2a-js/sdk"]
TRANSPORTS = ["jsonrpc", "rest"]
BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON"}
COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture(scope="module")
def node() -> str:
    node = require_tool("node", NODE_HOW_TO_GET, REQUIRE_INTEROP)
    require_tool("npm", NODE_HOW_TO_GET, REQUIRE_INTEROP)
    installed = JS_DIR / "node_modules" / "@a2a-js" / "sdk" / "package.json"
    if not installed.exists():
        sdk_unavailable("@a2a-js/sdk is not installed (run: bash tests/interop/js/install.sh)")
    version = json.loads(installed.read_text())["version"]
    assert version == SDK_VERSION, f"installed @a2a-js/sdk {version}, pinned {SDK_VERSION}: rerun install.sh"
    return node


@pytest.fixture
def js(node: str, server: LiveServer) -> Any:
    def run(scenario: str, transport: str = "jsonrpc") -> dict[str, Any]:
        proc = subprocess.run(
            [node, "client.mjs", server.base_url, scenario, transport],
            cwd=JS_DIR,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (
            f"client.mjs {scenario} {transport} failed:\n{proc.stderr}\n{proc.stdout}"
        )
        return json.loads(proc.stdout)

    return run


def created_id(summary: dict[str, Any]) -> str:
    assert summary["state"] == COMPLETED, summary
    assert summary["result"]["operation"] == "create"
    assert summary["result"]["result"]["status"] == "created"
    return summary["result"]["result"]["artifact"]["id"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_discovers_the_card_and_picks_the_transport(js: Any, server: LiveServer, transport: str) -> None:
    card = js("card", transport)
    assert card["transport"] == BINDINGS[transport]
    assert card["protocolVersion"] == "1.0"
    assert card["interfaces"][:2] == [
        {"url": server.url("/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": server.url("/a2a/rest"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]
    assert {
        "url": server.url("/a2a/jsonrpc"),
        "protocolBinding": "JSONRPC",
        "protocolVersion": "0.3",
    } in card["interfaces"]
    assert card["version"] == "0.0.0-experimental"
    assert card["streaming"] is True and card["pushNotifications"] is False
    assert "application/json" in card["defaultInputModes"]
    assert [skill["id"] for skill in card["skills"]] == ["build", "ranch", "execute"]
    assert all(skill["examples"] for skill in card["skills"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_create_inspect_run_reproduce(js: Any, transport: str) -> None:
    out = js("lifecycle", transport)
    artifact_id = created_id(out["create"])
    assert out["create"]["artifactIds"] == ["quineling-result"]

    inspected = out["inspect"]
    assert inspected["state"] == COMPLETED and inspected["result"]["operation"] == "inspect"
    assert inspected["result"]["result"]["id"] == artifact_id
    assert inspected["result"]["result"]["source"] == out["create"]["result"]["result"]["artifact"]["source"]

    ran = out["run"]["result"]
    assert out["run"]["state"] == COMPLETED and ran["operation"] == "run"
    assert ran["result"]["outputs"]["total"] == 29
    assert ran["result"]["artifactId"] == artifact_id

    child = out["reproduce"]["result"]["result"]
    assert out["reproduce"]["state"] == COMPLETED
    assert child["artifact"]["id"] == artifact_id
    assert child["record"]["parentRecordId"] == ran["result"]["id"]
    assert child["record"]["id"] != ran["result"]["id"]
    assert child["record"]["outputs"]["total"] == 29


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_streamed_create_sends_task_first_and_artifact_before_terminal_status(
    js: Any, transport: str
) -> None:
    events = js("stream", transport)["events"]
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "task"
    assert kinds[-1] == "statusUpdate" and events[-1]["state"] == COMPLETED
    assert kinds.index("artifactUpdate") < len(kinds) - 1
    artifact = next(event for event in events if event["kind"] == "artifactUpdate")
    assert artifact["artifactId"] == "quineling-result"
    assert artifact["result"]["result"]["status"] == "created"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_get_task_polls_with_history_length(js: Any, transport: str) -> None:
    out = js("poll", transport)
    created_id(out["created"])
    assert out["full"]["id"] == out["created"]["id"] and out["full"]["state"] == COMPLETED
    assert out["full"]["historyLength"] >= 1
    assert out["historyZero"]["historyLength"] == 0
    assert out["full"]["result"] == out["created"]["result"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_tasks_filters_by_context(js: Any, transport: str) -> None:
    out = js("list", transport)
    assert [task["id"] for task in out["tasks"]] == [out["taskId"]]
    assert out["tasks"][0]["artifactIds"] == ["quineling-result"]
    assert out["totalSize"] == 1 and out["pageSize"] == 10 and out["nextPageToken"] == ""


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_clarification_then_follow_up_on_the_same_task(js: Any, transport: str) -> None:
    out = js("clarify", transport)
    asked, follow = out["asked"], out["followUp"]
    assert asked["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert asked["result"]["result"]["status"] == "clarify"
    assert (follow["id"], follow["contextId"]) == (asked["id"], asked["contextId"])
    created_id(follow)
    assert follow["artifactIds"] == ["quineling-result"]  # the result replaced the clarification
    assert follow["historyLength"] > asked["historyLength"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_cancel_input_required_then_completed_raises_typed_error(js: Any, transport: str) -> None:
    out = js("cancel", transport)
    assert out["waiting"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert out["canceled"]["id"] == out["waiting"]["id"]
    assert out["canceled"]["state"] == "TASK_STATE_CANCELED"
    terminal = out["terminalCancel"]
    assert terminal["raised"] and terminal["isTaskNotCancelable"], terminal
    assert terminal["reason"] == "TASK_NOT_CANCELABLE"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unknown_task_raises_task_not_found(js: Any, transport: str) -> None:
    out = js("errors", transport)
    for call in ("getTask", "cancelTask", "followUp", "subscribe"):
        assert out[call]["raised"] and out[call]["isTaskNotFound"], (call, out[call])
        assert out[call]["reason"] == "TASK_NOT_FOUND"


def test_v03_compat_client_over_json_rpc(js: Any) -> None:
    out = js("v03")
    assert out["protocolVersion"] == "0.3" and out["legacyInterfaces"] == 1
    created_id(out["create"])
    assert out["run"]["state"] == COMPLETED
    assert out["run"]["result"]["result"]["outputs"]["total"] == 29
    assert out["polled"]["id"] == out["run"]["id"] and out["polled"]["result"] == out["run"]["result"]
    assert out["streamKinds"][0] == "task" and "artifactUpdate" in out["streamKinds"]
    assert out["streamKinds"][-1] == "statusUpdate"
    assert out["missing"]["raised"] and out["missing"]["isTaskNotFound"], out["missing"]
    assert out["subscribeMissing"]["isTaskNotFound"], out["subscribeMissing"]
    assert out["terminalCancel"]["isTaskNotCancelable"], out["terminalCancel"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_subscribe_to_interrupted_task_sees_the_follow_up_complete_it(js: Any, transport: str) -> None:
    out = js("subscribe", transport)
    assert out["asked"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert out["done"]["id"] == out["asked"]["id"] and out["done"]["state"] == COMPLETED
    events = out["events"]
    assert events[0] == {"kind": "task", "state": "TASK_STATE_INPUT_REQUIRED"}
    assert {"kind": "artifactUpdate", "artifactId": "quineling-result"} in events
    assert events[-1] == {"kind": "statusUpdate", "state": COMPLETED}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_streamed_follow_up_ends_at_input_required(js: Any, transport: str) -> None:
    events = js("streamFollowUp", transport)["events"]
    assert events[0]["kind"] == "task"
    assert events[-1] == {"kind": "statusUpdate", "state": "TASK_STATE_INPUT_REQUIRED"}
    assert events.index({"kind": "artifactUpdate", "artifactId": "quineling-result"}) < len(events) - 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_list_tasks_pages_newest_first_with_page_tokens(js: Any, transport: str) -> None:
    out = js("pages", transport)
    assert [len(page["ids"]) for page in out["pages"]] == [2, 1]
    assert [i for page in out["pages"] for i in page["ids"]] == out["created"][::-1]
    assert all(page["totalSize"] == 3 for page in out["pages"])
    assert all(count == 0 for page in out["pages"] for count in page["artifacts"])  # includeArtifacts unset


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_runtime_failure_and_message_to_terminal_task(js: Any, transport: str) -> None:
    out = js("failures", transport)
    assert out["failed"]["state"] == "TASK_STATE_FAILED" and out["failed"]["artifactIds"] == []
    assert set(out["statusMetadata"]["quinelingError"]) == {"code", "message", "path"}
    terminal = out["terminalSend"]
    assert terminal["raised"] and terminal["isUnsupportedOperation"], terminal
    assert terminal["reason"] == "UNSUPPORTED_OPERATION"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ranch_walk_through_and_compose_example(js: Any, transport: str) -> None:
    """The ranch requests of docs/ranch-guide.md from the JS client: a retried world command with a new
    messageId acknowledges once,
    an admission retried under its requestId is the same birth, and only an explicit run executes the
    composed child."""
    out = js("ranch", transport)
    assert out["advanced"] == out["sameAcknowledgement"]
    assert out["revisionAfter"] == out["revisionBefore"] + 1 and out["tickAdvance"] == 4
    assert out["previewStatus"] == "ready" and out["frameCandidate"] and 0 < out["framePoints"] <= 4000
    assert out["sameBirth"] == out["admitted"]
    assert out["admitted"]["artifactId"] in out["lineageChildren"]
    assert out["childOutputs"] == {"allocated": 12, "remaining": 8}
