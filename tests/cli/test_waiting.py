"""Waiting and polling against a scripted agent (tests/cli/scripted_agent.py), whose tasks stay in flight as
long as the script says: timeouts (exit 5), the poll interval and its bounded backoff, UNSPECIFIED, Ctrl-C, and
the A2A-Version header on every request."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.scripted_agent import scripted_agent
from tests.cli.support import clean_env, cli_in_process, spawn

pytestmark = pytest.mark.slow
WORKING = "TASK_STATE_WORKING"


def test_send_waits_through_unspecified_and_polls_with_backoff(tmp_path: Path) -> None:
    """TASK_POLL_001, TASK_POLL_002, TASK_POLL_003 (UNSPECIFIED keeps polling), VER_001, SEND_002."""
    script = [WORKING, "TASK_STATE_UNSPECIFIED", WORKING, WORKING, "TASK_STATE_COMPLETED"]
    with scripted_agent(script) as agent:
        done = cli_in_process(
            "send",
            "hi",
            "-a",
            agent.url,
            "--poll-interval",
            "200ms",
            "-o",
            "json",
            cwd=tmp_path,
            env=clean_env(tmp_path),
        )
    assert done.code == 0 and done.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done.json()["task"]["artifacts"][0]["parts"] == [{"text": "done"}]
    assert "waiting: task task-1" in done.err  # the id is on stderr before the first wait
    polls = agent.methods("GetTask")
    assert len(polls) == 4
    gaps = [b["at"] - a["at"] for a, b in zip(polls, polls[1:], strict=False)]
    assert all(gap >= 0.2 for gap in gaps) and gaps[-1] > gaps[0]  # never a busy loop; backs off
    assert {r["version"] for r in agent.requests} == {"1.0"}  # every request, the card's included


def test_timeout_exits_5_with_the_envelope(tmp_path: Path) -> None:
    """TASK_POLL_002, EXIT_001 (5 is a timeout, and only that)."""
    with scripted_agent([WORKING]) as agent:
        started = time.monotonic()
        timed_out = cli_in_process(
            "task",
            "get",
            "--wait",
            "task-1",
            "-a",
            agent.url,
            "--poll-interval",
            "0.2",
            "--timeout",
            "1.5s",
            "-o",
            "json",
            cwd=tmp_path,
            env=clean_env(tmp_path),
        )
        took = time.monotonic() - started
    error = timed_out.json()["error"]
    assert timed_out.code == 5 and error["code"] == "A2ACLI_ERR_TIMEOUT" and "task-1" in error["message"]
    assert "task get --wait task-1" in error["hint"] and took < 15
    assert len(agent.methods("GetTask")) >= 3


def test_async_returns_a_working_task_at_once(tmp_path: Path) -> None:
    """SEND_002, OUT_006."""
    with scripted_agent([WORKING]) as agent:
        started = cli_in_process(
            "send", "hi", "--async", "-a", agent.url, cwd=tmp_path, env=clean_env(tmp_path)
        )
    fields = started.fields()
    assert started.code == 0 and fields["Task-Id"] == "task-1" and fields["Context-Id"] == "ctx-1"
    assert fields["State"] == WORKING and "task get --wait task-1" in fields["Resume"]
    assert (
        agent.methods("GetTask") == []
        and agent.methods("SendMessage")[0]["params"]["configuration"]["returnImmediately"] is True
    )


def test_interrupt_keeps_the_task_id(tmp_path: Path) -> None:
    """TASK_POLL_002 (interruptible without losing the id)."""
    with scripted_agent([WORKING]) as agent:
        command = ["send", "hi", "-a", agent.url, "--poll-interval", "0.2"]
        with spawn(*command, cwd=tmp_path, env=clean_env(tmp_path)) as proc:
            deadline = time.monotonic() + 30
            while not agent.methods("GetTask") and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()  # or leaving the `with` waits for it for ever
                raise
    assert proc.returncode == 130 and "waiting: task task-1 (context ctx-1)" in err and out == ""


def test_parts_travel_in_order_with_their_media_types(tmp_path: Path) -> None:
    """SEND_005, SEND_006, INTERACT_003 (no invented ids), AUTH_001 (an API key where the card's scheme says)."""
    blob = tmp_path / "notes.bin"
    blob.write_bytes(b"\x00\x01")
    scheme = {
        "securitySchemes": {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Agent-Key"}}}
    }
    with scripted_agent(["TASK_STATE_COMPLETED"], **scheme) as agent:
        sent = cli_in_process("send", "first", "--text", "second", "--media-type", "text/markdown", "--file", str(blob),
                   "--media-type", "application/x-notes", "--data", "-", "--file", "https://example.com/a.pdf",
                   "-a", agent.url, cwd=tmp_path, env={**clean_env(tmp_path), "A2ACLI_API_KEY": "k-123"},
                   stdin='{"n": 1}')  # fmt: skip
    assert sent.code == 0, sent.err
    (request,) = agent.methods("SendMessage")
    message = request["params"]["message"]
    assert message["parts"] == [
        {"text": "first"},
        {"text": "second", "mediaType": "text/markdown"},
        {"raw": "AAE=", "filename": "notes.bin", "mediaType": "application/x-notes"},
        {"data": {"n": 1}},
        {"url": "https://example.com/a.pdf", "filename": "a.pdf", "mediaType": "application/pdf"},
    ]
    assert "taskId" not in message and "contextId" not in message and message["role"] == "ROLE_USER"
    assert request["headers"].get("X-Agent-Key") == "k-123"


def test_a_message_reply_and_a_card_without_streaming(tmp_path: Path) -> None:
    """SEND_003: a direct Message exits 0 (also under --stream, as one JSONL line); no streaming on the card
    falls back to a blocking send rather than hanging."""
    with scripted_agent(["MESSAGE"]) as agent:
        reply = cli_in_process("send", "hi", "-a", agent.url, cwd=tmp_path, env=clean_env(tmp_path))
        streamed = cli_in_process(
            "send", "hi", "--stream", "-o", "json", "-a", agent.url, cwd=tmp_path, env=clean_env(tmp_path)
        )
    assert reply.code == 0 and reply.fields()["Message-Id"] == "m-1" and "hello back" in reply.out
    assert streamed.code == 0 and streamed.lines() == [
        {"message": {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": "hello back"}]}}
    ]
    assert "declares no streaming" in streamed.err
    with scripted_agent(["TASK_STATE_COMPLETED"]) as agent:
        one = cli_in_process(
            "send", "hi", "--stream", "-o", "json", "-a", agent.url, cwd=tmp_path, env=clean_env(tmp_path)
        )
    assert one.code == 0 and [next(iter(line)) for line in one.lines()] == ["task"]
    assert list(tmp_path.iterdir()) == []  # INTERACT_005: nothing written, no state kept between runs
