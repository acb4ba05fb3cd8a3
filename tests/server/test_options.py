"""The gunicorn process the settings start (quineling/server/options.py, quineling/server/hooks.py): its options
per worker class, its hooks, a master that imports nothing of the app, and ``quineling serve`` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from quineling.server.options import gunicorn_options
from quineling.settings import load_settings
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_gunicorn_options_per_worker_class() -> None:
    gevent = gunicorn_options(load_settings(env={}))
    assert (
        gevent["worker_class"] == "quineling.server.lean_worker.LeanGeventWorker" and "threads" not in gevent
    )
    assert gevent["worker_connections"] == 1000
    assert gevent["keepalive"] == 5  # with gevent also the deadline for a request's headers
    assert gevent["post_worker_init"].__name__ == "_watch_worker"
    gthread = gunicorn_options(
        load_settings(env={"QUINELING_WORKER_CLASS": "gthread", "QUINELING_THREADS": "32"})
    )
    assert gthread["worker_class"] == "gthread" and gthread["threads"] == 32


def test_a_worker_with_its_app_loaded_hides_what_it_made_from_the_collector() -> None:
    """gunicorn's post_worker_init hook freezes what the app's load made: a full collection then no longer
    scans it (36 ms of a paused worker before, 0.5 ms after). In a process of its own, to freeze nothing here."""
    code = (
        "import gc; from quineling import create_app; from quineling.server.hooks import _watch_worker\n"
        "app = create_app(); assert gc.get_freeze_count() == 0\n"
        "_watch_worker(object()); print(gc.get_freeze_count(), len(gc.get_objects()))"
    )
    env = {**os.environ, "QUINELING_STORE_URL": "memory://"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    frozen, still_tracked = map(int, result.stdout.split())
    assert frozen > 20_000 and still_tracked < frozen // 10, (frozen, still_tracked)


def test_the_gunicorn_master_imports_no_flask_redis_or_ssl() -> None:
    """A gevent worker monkey-patches the standard library when it starts; what the master imported before
    the fork stays unpatched in the worker, so reading the settings must not import the app."""
    code = (
        "import runpy, sys; runpy.run_path('deploy/gunicorn.conf.py'); "
        "print(sorted(m for m in ('flask', 'redis', 'ssl', 'quineling.app') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_quineling_command_imports_no_flask_redis_or_ssl_before_serving() -> None:
    """``quineling serve`` is a gunicorn master too: importing the command and reading the settings must
    leave the app, the Redis driver and ssl to the workers (which gevent patches first)."""
    code = (
        "import sys; import quineling.cli; from quineling.server.options import gunicorn_options; from quineling.settings import load_settings; "
        "gunicorn_options(load_settings()); "
        "print(sorted(m for m in ('flask', 'redis', 'ssl', 'quineling.app') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def _gunicorn_conf(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "import runpy; runpy.run_path('deploy/gunicorn.conf.py')"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True
    )


def test_gunicorn_refuses_several_workers_on_memory_store() -> None:
    result = _gunicorn_conf({"QUINELING_WORKERS": "2", "QUINELING_STORE_URL": "memory://"})
    assert result.returncode != 0 and "QUINELING_STORE_URL=redis://" in result.stderr
    ok = _gunicorn_conf({"QUINELING_WORKERS": "1", "QUINELING_THREADS": "4"})
    assert ok.returncode == 0, ok.stderr


@pytest.mark.slow
def test_quineling_serve_runs_gunicorn() -> None:
    port = free_port()
    env = {**os.environ, "QUINELING_A2A_PORT": str(port), "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-c", "from quineling.cli import main; main(['serve'])"]
    process = subprocess.Popen(cli, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=1) as response:
                    assert json.load(response)["status"] == "ok"
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("server did not start")
        request = urllib.request.Request(
            base + "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            card = json.load(response)
        assert card["supportedInterfaces"][0]["url"] == f"{base}/a2a/jsonrpc"
        message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "[2,3,4] | square | sum"}]}
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}
        )
        headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
        stream = urllib.request.Request(base + "/a2a/jsonrpc", data=body.encode(), headers=headers)
        with urllib.request.urlopen(stream, timeout=10) as response:
            assert response.headers["Content-Type"].startswith("text/event-stream")
            events = [line for line in response.read().decode().split("\n") if line.startswith("data: ")]
        assert len(events) == 4 and '"task"' in events[0]
    finally:
        process.terminate()
        process.wait(timeout=10)
