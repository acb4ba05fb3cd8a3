"""The command line against agents built on the official SDKs (JS @a2a-js/sdk 1.3.0 and Python a2a-sdk 1.3.0;
tests/support/sdk_agents.py): scripts written for the official CLI work the same on an agent that is not
Quineling. Their executor answers every message with one text artifact, ``fixture-result``; a message
starting with ``slow`` stays WORKING for a moment first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.cli.support import Run, clean_env, cli
from tests.support.sdk_agents import js_agent, python_agent

# tests/support/sdk_agents.py leaves the agent's stdout pipe open at teardown (reported to its owner).
pytestmark = [
    pytest.mark.interop,
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(params=["js", "python"], scope="module")
def agent(request: pytest.FixtureRequest) -> Iterator[str]:
    start: Callable[[], AbstractContextManager[str]] = js_agent if request.param == "js" else python_agent
    with start() as base:
        yield base


def test_official_cli_scripts_run_against_sdk_agents(agent: str, tmp_path: Path) -> None:
    """CARD_GET_001, SEND_001, SEND_002, SEND_003, TASK_POLL_001, TASK_CANCEL_001, TX_004 on foreign agents."""
    env = clean_env(tmp_path)

    def q(*args: str) -> Run:
        return cli(*args, "-a", agent, cwd=tmp_path, env=env)

    card = q("card", "get")
    assert card.code == 0 and card.fields()["Selected-Interface"].split()[1] == "1.0"
    for binding in ("JSONRPC", "HTTP+JSON"):
        done = q("send", "hello", "--transport", binding, "-o", "json")
        task = done.json()["task"]
        assert done.code == 0 and task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"][0]["text"] == "fixture-result"
    started = q("send", "slow job", "--async", "-o", "json").json()["task"]
    waited = q("task", "get", "--wait", started["id"], "--poll-interval", "0.2", "-o", "json")
    assert waited.code == 0 and waited.json()["status"]["state"] == "TASK_STATE_COMPLETED"
    streamed = q("send", "hello", "--stream", "-o", "json")
    lines = streamed.lines()
    assert streamed.code == 0 and "task" in lines[0] or "statusUpdate" in lines[0]
    assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    missing = q("task", "get", "no-such-task", "-o", "json")
    assert missing.code == 1 and missing.json()["error"]["code"] == "TaskNotFoundError"
