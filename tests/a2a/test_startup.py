"""The start banner and the start-up store probe (quineling/startup.py), without a server."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from quineling.config import load_settings
from quineling.startup import banner, redacted_url, store_unreachable
from tests.support.live import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://user:p%40ss@h/1", "redis://user:***@h/1"),
        (
            "rediss://h:6380/0?password=s3cret&ssl_cert_reqs=none",
            "rediss://h:6380/0?password=***&ssl_cert_reqs=none",
        ),
        ("unix://:s3cret@/run/redis.sock?db=2", "unix://:***@/run/redis.sock?db=2"),
        ("unix:///run/redis.sock?db=2&password=s3cret", "unix:///run/redis.sock?db=2&password=***"),
        ("redis://user@h:6379/0", "redis://user@h:6379/0"),  # a name alone is no secret
        ("memory://", "memory://"),
    ],
)
def test_the_store_url_is_shown_without_its_password(url: str, shown: str) -> None:
    assert redacted_url(url) == shown


def test_the_banner_names_every_fact(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("")
    settings = load_settings(
        {"store_url": "redis://:s3cret@redis:6379/0", "workers": 3, "worker_class": "gthread", "threads": 16,
         "auth_keys_file": str(keys), "base_url": "https://agent.example.com", "rate_limit": "20/second"},
        env={},
    )  # fmt: skip
    line = banner(settings, ["0.0.0.0:8049"])
    assert "s3cret" not in line and "\n" not in line
    assert line.startswith("quineling ")
    assert " serving https://agent.example.com on 0.0.0.0:8049 | store redis://:***@redis:6379/0 |" in line
    assert line.endswith("| workers 3×gthread (16 threads/worker) | auth api-keys | rate limit 20/second")
    anonymous = banner(load_settings({"allow_anonymous": True}, env={}), ["127.0.0.1:8049"])
    assert anonymous.endswith("| auth anonymous (allowed on any address) | rate limit off")


def test_the_store_probe_tells_a_listener_from_nothing() -> None:
    assert store_unreachable("memory://", 1) is None
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        assert store_unreachable(f"redis://:pw@127.0.0.1:{listener.getsockname()[1]}/0", 1) is None
    problem = store_unreachable(f"redis://127.0.0.1:{free_port()}/0", 1)
    assert problem is not None and problem.startswith("ConnectionRefusedError")
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/redis.sock"
        assert (store_unreachable(f"unix://{path}", 1) or "").startswith("FileNotFoundError")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(path)
            listener.listen()
            assert store_unreachable(f"unix://{path}?db=1", 1) is None


def test_a_cluster_is_reachable_while_any_listed_node_listens() -> None:
    dead = [free_port(), free_port()]
    problem = store_unreachable(f"redis+cluster://127.0.0.1:{dead[0]},127.0.0.1:{dead[1]}", 1)
    assert problem is not None and problem.startswith("ConnectionRefusedError")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        alive = listener.getsockname()[1]
        assert store_unreachable(f"rediss+cluster://u:pw@127.0.0.1:{dead[0]},127.0.0.1:{alive}", 1) is None


def test_serve_refuses_a_port_in_use_at_once() -> None:
    """Instead of gunicorn's bind retries: one line naming the port, exit 2, before any worker starts."""
    from quineling.startup import port_taken

    port = free_port()
    assert port_taken("127.0.0.1", port) is None
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "QUINELING_STORE_URL": "memory://"}
        started = time.monotonic()
        refused = subprocess.run(
            [sys.executable, "-m", "quineling.cli", "serve", "--port", str(port)],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
    assert refused.returncode == 2 and time.monotonic() - started < 10
    assert refused.stderr.startswith(f"quineling: port {port} on 127.0.0.1 is in use (")
    assert "--port" in refused.stderr and "Traceback" not in refused.stderr


def test_serve_help_names_the_settings_that_matter(capsys: pytest.CaptureFixture[str]) -> None:
    from quineling.cli import main

    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    shown = capsys.readouterr().out
    assert done.value.code == 0 and 'README.md, "Configuration"' in shown
    named = set(re.findall(r"QUINELING_[A-Z0-9_]+", shown))
    documented = set(
        re.findall(r"^\| `(QUINELING_[A-Z0-9_]+)`", (ROOT / "README.md").read_text(), re.MULTILINE)
    )
    assert {"QUINELING_A2A_PORT", "QUINELING_STORE_URL", "QUINELING_AUTH_KEYS_FILE"} <= named <= documented
