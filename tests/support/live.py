"""A real gunicorn server on a loopback port, for tests that need processes, workers and real HTTP.

    with live_server(store_url=REDIS_URL, workers=4) as server:
        requests.post(server.url("/a2a/jsonrpc"), json=...)

Each server gets its own Redis key prefix (deleted afterwards), so tests can share one Redis database, and
serves any tenant (tests use tenants to keep scenarios apart).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.support.ports import free_port
from tests.support.redis_keys import delete_under

ROOT = Path(__file__).resolve().parents[2]
__all__ = [
    "ROOT",
    "LiveServer",
    "free_port",
    "live_server",
    "wait_answering",
]  # free_port: kept importable from here


@dataclass(frozen=True)
class LiveServer:
    base_url: str
    prefix: str
    log: Path
    pid: int = 0  # the gunicorn master's
    store_url: str = "memory://"

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def url(self, path: str) -> str:
        return self.base_url + path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def live_server(
    *,
    store_url: str | None = None,
    workers: int = 1,
    threads: int = 8,
    share_with: LiveServer | None = None,
    ready_path: str = "/readyz",
    forget_keys: bool = True,
    port: int | None = None,
    host: str = "127.0.0.1",
    **settings: str | int,
) -> Iterator[LiveServer]:
    """Start ``gunicorn -c deploy/gunicorn.conf.py wsgi:app``; extra ``settings`` become QUINELING_* vars.
    It is up once ``ready_path`` answers 200 (``/healthz`` for a server whose store is not there yet).

    ``store_url`` defaults to ``memory://``, or to the store of ``share_with``, which starts a second host on the
    same store and prefix as a running server (its owner deletes the keys).
    ``forget_keys=False``: leave the keys (a private store that the test removes, or has stopped, itself).
    ``port``: listen there (a server restarted where its clients, a browser page say, know it) instead of a free one.
    ``host``: the address it binds (``QUINELING_A2A_HOST``); an IPv6 one is bracketed in its URLs.
    """
    port = port or free_port()
    if store_url is None:
        store_url = share_with.store_url if share_with else "memory://"
    prefix = share_with.prefix if share_with else f"qlive-{uuid.uuid4().hex[:10]}"
    env = dict(os.environ)
    env.update(
        QUINELING_STORE_URL=store_url,
        QUINELING_STORE_PREFIX=prefix,
        QUINELING_WORKERS=str(workers),
        QUINELING_THREADS=str(threads),
        QUINELING_A2A_HOST=host,
        QUINELING_A2A_PORT=str(port),
        QUINELING_ACCESS_LOG="0",
        QUINELING_TENANTS="*",  # tests isolate scenarios by tenant; pass tenants="" for the product default
        PYTHONPATH=str(ROOT),
    )
    env.update({f"QUINELING_{k.upper()}": str(v) for k, v in settings.items()})
    log = Path(tempfile.mkstemp(prefix="quineling-live-", suffix=".log")[1])
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "deploy/gunicorn.conf.py"), "wsgi:app"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    authority = f"[{host}]" if ":" in host else host
    server = LiveServer(f"http://{authority}:{port}", prefix, log, proc.pid, store_url)
    try:
        _wait_ready(server, proc, workers, ready_path)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if (
            forget_keys
            and share_with is None
            and store_url.startswith(
                ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
            )
        ):
            # A TLS store signed by a test CA (tests/support/redis_tls.py) needs that CA to be reached.
            ca_file = settings.get("redis_ca_file")
            delete_under(store_url, prefix, **({"ssl_ca_certs": str(ca_file)} if ca_file else {}))
        log.unlink(missing_ok=True)


def _wait_ready(
    server: LiveServer, proc: subprocess.Popen[bytes], workers: int, path: str, timeout: float = 30
) -> None:
    wait_answering(server.url(path), proc, server.log, timeout)
    # Give every worker a moment to boot, so tests really spread over processes.
    time.sleep(0.2 * workers)


def wait_answering(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    """Poll ``url`` until it answers 200; fail with the process's log if it exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the server exited with {proc.returncode}:\n{log.read_text(errors='replace')}"
            )
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server did not answer in {timeout}s:\n{log.read_text(errors='replace')}")
