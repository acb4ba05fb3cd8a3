"""At the open-files limit the server refuses to start and says so (issue 27): what the configured bounds need
in descriptors per worker is checked against ``RLIMIT_NOFILE`` before gunicorn starts (quineling/open_files.py).
A soft limit below it is raised up to the hard one; a hard limit below it stops the start with exit status 3
and one JSON line naming what is needed and how to fix it — instead of workers whose ``accept()`` fails with
EMFILE and clients that hang."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from quineling.config import load_settings
from quineling.open_files import OTHER_FILES, need
from tests.support.live import ROOT, free_port

pytestmark = pytest.mark.slow
SOFT = 200  # the issue's `ulimit -n 200`


def gunicorn(limit: tuple[int, int], **settings: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {
        **os.environ,
        "QUINELING_STORE_URL": "memory://",
        "QUINELING_A2A_PORT": str(port),
        "QUINELING_LOG_FORMAT": "json",
        "PYTHONPATH": str(ROOT),
        **{f"QUINELING_{name.upper()}": value for name, value in settings.items()},
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy/gunicorn.conf.py"), "wsgi:app"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, limit),
    )
    return proc, port


def test_what_the_bounds_need() -> None:
    memory = load_settings(env={})
    assert need(memory).total == 1000 + OTHER_FILES  # the default: 1,000 connections, no store socket
    redis = load_settings(env={"QUINELING_STORE_URL": "redis://r:6379/0"})
    assert need(redis).store == 64 + 500 + 250  # calls, and a blocking read per stream and long poll
    cluster = load_settings(
        env={"QUINELING_STORE_URL": "redis+cluster://a:1,b:2,c:3", "QUINELING_MAX_STREAMS": "100"}
    )
    assert need(cluster).store == 3 * (64 + 100 + 50 + 1)  # per node


def test_a_hard_limit_below_the_bounds_refuses_the_start_with_one_json_line() -> None:
    proc, _ = gunicorn((SOFT, SOFT))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, (out, err)
    (line,) = [text for text in (out + err).decode().splitlines() if text.strip()]
    refusal = json.loads(line)
    assert refusal["level"] == "ERROR" and refusal["needed"] == 1000 + OTHER_FILES
    assert (refusal["soft_limit"], refusal["hard_limit"]) == (SOFT, SOFT)
    assert "ulimit -n 1064" in refusal["event"] and "QUINELING_WORKER_CONNECTIONS" in refusal["event"]
    # Bounds the limit holds start.
    proc, port = gunicorn((SOFT, SOFT), worker_connections="100")
    try:
        wait_ready(proc, port)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_a_soft_limit_below_the_bounds_is_raised_to_them() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1000 + OTHER_FILES:
        pytest.skip(f"the hard open-files limit here ({hard}) is below the default bounds' need")
    proc, port = gunicorn((SOFT, hard))
    try:
        wait_ready(proc, port)
        workers = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        for pid in [proc.pid, *workers]:
            limits = Path(f"/proc/{pid}/limits").read_text().splitlines()
            (row,) = [row for row in limits if row.startswith("Max open files")]
            assert int(row.split()[3]) == 1000 + OTHER_FILES, row
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            if requests.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                time.sleep(0.3)  # the worker has booted
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise AssertionError(f"not ready within {timeout} s")
