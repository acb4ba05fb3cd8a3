"""Issue 26, item 5: a bare IPv6 ``QUINELING_A2A_HOST`` (``::1``) starts the server, bound in brackets, and
the card names the agent at a bracketed URL a client can use."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from tests.attacks.wire import get_task
from tests.support.live import ROOT, free_port

pytestmark = pytest.mark.slow


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_a_bare_ipv6_host_starts_and_is_served() -> None:
    port = free_port()
    env = {
        **os.environ,
        "QUINELING_A2A_HOST": "::1",
        "QUINELING_A2A_PORT": str(port),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("QUINELING_BASE_URL", None)
    log = Path(tempfile.mkstemp(prefix="quineling-v6-", suffix=".log")[1])
    base = f"http://[::1]:{port}"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy/gunicorn.conf.py"), "wsgi:app"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text(errors="replace")
            try:
                if requests.get(base + "/readyz", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.1)
        card = requests.get(
            base + "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}, timeout=5
        ).json()
        urls = [interface["url"] for interface in card["supportedInterfaces"]]
        assert all(url.startswith(base + "/") for url in urls), urls
        call = requests.post(
            base + "/a2a/jsonrpc",
            data=get_task(),
            headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
            timeout=5,
        )
        assert call.status_code == 200 and call.json()["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.unlink(missing_ok=True)
