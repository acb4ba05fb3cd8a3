"""Settings from the environment, start-up validation, and the gunicorn/CLI entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from quineling.config import ConfigError, load_settings
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_defaults() -> None:
    settings = load_settings(env={})
    assert (settings.a2a_host, settings.a2a_port, settings.store_url) == ("127.0.0.1", 8049, "memory://")
    assert settings.legacy_compat and settings.request_limit_bytes == 2 * 1024 * 1024
    assert settings.advertised_url == "http://127.0.0.1:8049"


def test_environment_and_mapping() -> None:
    env = {"QUINELING_A2A_PORT": "9100", "QUINELING_LEGACY_COMPAT": "off", "QUINELING_TASK_MAX": "7"}
    settings = load_settings(env=env)
    assert settings.a2a_port == 9100 and not settings.legacy_compat and settings.task_max == 7
    assert settings.advertised_url == "http://127.0.0.1:9100"
    assert load_settings({"QUINELING_A2A_PORT": 1234}, env=env).a2a_port == 1234
    assert load_settings({"legacy_compat": True}, env=env).legacy_compat


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"QUINELING_A2A_PORT": "http"}, "QUINELING_A2A_PORT"),
        ({"QUINELING_A2A_PORT": "70000"}, "QUINELING_A2A_PORT"),
        ({"QUINELING_LEGACY_COMPAT": "maybe"}, "QUINELING_LEGACY_COMPAT"),
        ({"QUINELING_REQUEST_LIMIT_BYTES": "0"}, "QUINELING_REQUEST_LIMIT_BYTES"),
        ({"QUINELING_BASE_URL": "localhost:8049"}, "QUINELING_BASE_URL"),
        ({"QUINELING_STORE_URL": "redis"}, "QUINELING_STORE_URL"),
        ({"QUINELING_READ_CACHE_ENTRIES": "-1"}, "QUINELING_READ_CACHE_ENTRIES"),
        ({"QUINELING_REDIS_TIMEOUT_SECONDS": "0"}, "QUINELING_REDIS_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_TIMEOUT_SECONDS": "inf"}, "QUINELING_REDIS_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_TIMEOUT_SECONDS": "3601"}, "QUINELING_REDIS_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS": "-1"}, "QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS"),
        ({"QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS": "nan"}, "QUINELING_REDIS_CONNECT_TIMEOUT_SECONDS"),
        ({"QUINELING_KEEPALIVE_SECONDS": "inf"}, "QUINELING_KEEPALIVE_SECONDS"),
        ({"QUINELING_WORKER_CLASS": "sync"}, "QUINELING_WORKER_CLASS"),
        ({"QUINELING_WORKER_CONNECTIONS": "0"}, "QUINELING_WORKER_CONNECTIONS"),
        ({"QUINELING_MAX_STREAMS": "-1"}, "QUINELING_MAX_STREAMS"),
        ({"QUINELING_MAX_STREAMS": "1000"}, "QUINELING_WORKER_CONNECTIONS"),
        ({"QUINELING_WORKER_CLASS": "gthread", "QUINELING_MAX_STREAMS": "8"}, "QUINELING_THREADS"),
    ],
)
def test_invalid_settings_name_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_settings(env=env)


@pytest.mark.parametrize(
    ("store_url", "ca_text", "needle"),
    [
        ("redis://127.0.0.1:6379/0", "pem", "is not Redis over TLS"),
        ("memory://", "pem", "is not Redis over TLS"),
        ("rediss://127.0.0.1:6380/0", None, "No such file"),
        ("rediss+cluster://127.0.0.1:6380", "not a certificate", "no PEM certificate"),
    ],
)
def test_a_redis_ca_file_needs_a_tls_store_and_a_pem_certificate(
    tmp_path: Path, store_url: str, ca_text: str | None, needle: str
) -> None:
    ca = tmp_path / "ca.pem"
    if ca_text is not None:
        pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        ca.write_text(pem if ca_text == "pem" else ca_text)
    with pytest.raises(ConfigError, match=f"QUINELING_REDIS_CA_FILE.*{needle}"):
        load_settings(env={"QUINELING_STORE_URL": store_url, "QUINELING_REDIS_CA_FILE": str(ca)})


@pytest.mark.parametrize(
    "query", ["ssl_cert_reqs=none", "ssl_check_hostname=false", "ssl_ca_certs=/etc/x.pem"]
)
def test_a_tls_store_url_cannot_loosen_or_redirect_verification(query: str) -> None:
    with pytest.raises(ConfigError, match="QUINELING_STORE_URL must not set ssl_.*always verified"):
        load_settings(env={"QUINELING_STORE_URL": f"rediss://127.0.0.1:6380/0?{query}"})


def test_the_tls_options_reach_the_client(tmp_path: Path) -> None:
    """A rediss:// store's connections verify the certificate and host name against the CA file."""
    from quineling.app import create_app

    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    config = {"store_url": "rediss://127.0.0.1:1/0", "redis_ca_file": str(ca)}  # never contacted
    backend = create_app(config=config).extensions["quineling"].extras["backend"]
    for client in (backend.connection.shared, backend.connection.blocking):
        options = client.connection_pool.connection_kwargs
        assert (options["ssl_cert_reqs"], options["ssl_check_hostname"]) == ("required", True)
        assert options["ssl_ca_certs"] == str(ca)


@pytest.mark.parametrize(
    ("store_url", "entries", "cached"),
    [("memory://", 4096, False), ("redis://fake", 4096, True), ("redis://fake", 0, False)],
)
def test_the_read_cache_fronts_network_stores_only(store_url: str, entries: int, cached: bool) -> None:
    from quineling.app import create_app
    from stores.cache import CachingStateStore

    app = create_app(config={"store_url": store_url, "read_cache_entries": entries})
    store = app.extensions["quineling"].extras["runtime"].store
    assert isinstance(store, CachingStateStore) is cached
    if cached:
        assert store.max_entries == entries and store.kinds == {"artifact", "record"}
    # The task still commits with the runtime's changes: the cache stands for the backend's state store.
    assert app.extensions["quineling"].extras["task_store"].joins(store)


def test_the_redis_deadlines_reach_the_client() -> None:
    """Both deadlines are set on every connection, and a stream's blocking read may wait one keep-alive
    period longer than any other reply."""
    from quineling.app import create_app

    config = {
        "store_url": "redis://127.0.0.1:1/0",  # never contacted: clients connect lazily
        "redis_connect_timeout_seconds": 0.75,
        "redis_timeout_seconds": 3,
        "keepalive_seconds": 20,
    }
    backend = create_app(config=config).extensions["quineling"].extras["backend"]
    ordinary = backend.connection.shared.connection_pool.connection_kwargs
    blocking = backend.connection.blocking.connection_pool.connection_kwargs
    assert (ordinary["socket_connect_timeout"], ordinary["socket_timeout"]) == (0.75, 3)
    assert (blocking["socket_connect_timeout"], blocking["socket_timeout"]) == (0.75, 23)
    assert backend.max_block_seconds == 20


def test_stream_limit_leaves_room_for_other_requests() -> None:
    assert load_settings(env={}).stream_limit == 500  # gevent: half the 1000 connections a worker takes
    assert load_settings(env={"QUINELING_WORKER_CONNECTIONS": "64"}).stream_limit == 32
    assert load_settings(env={"QUINELING_WORKER_CLASS": "gthread"}).stream_limit == 4  # half of 8 threads
    assert load_settings(env={"QUINELING_MAX_STREAMS": "200"}).stream_limit == 200
    gthread = {
        "QUINELING_WORKER_CLASS": "gthread",
        "QUINELING_THREADS": "256",
        "QUINELING_MAX_STREAMS": "200",
    }
    assert load_settings(env=gthread).stream_limit == 200


def test_gunicorn_options_per_worker_class() -> None:
    from quineling.config import gunicorn_options

    gevent = gunicorn_options(load_settings(env={}))
    assert gevent["worker_class"] == "quineling.lean_worker.LeanGeventWorker" and "threads" not in gevent
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
        "import gc; from quineling import create_app; from quineling.config import _watch_worker\n"
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
        "import sys; import quineling.cli; from quineling.config import gunicorn_options, load_settings; "
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
