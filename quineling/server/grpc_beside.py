"""``quineling serve`` with QUINELING_GRPC_PORT: the gRPC listener beside gunicorn (docs/decisions/0029-grpc-binding.md).

- On a shared store (Redis, Redis Cluster) it is a **sibling process**, ``quineling serve-grpc``, started by
  the gunicorn master once the metrics directory is prepared (so its counts join ``/metrics``) and stopped
  with it (SIGTERM, then the same grace as the workers).
- On ``memory://`` the store is one process's memory, so the listener runs **inside the one worker** that
  holds it, as threads beside the app it loaded: that worker is gunicorn's gthread (grpcio and gevent's
  patched standard library do not mix), started in ``post_worker_init`` and stopped in ``worker_exit``.

Read by the gunicorn master: nothing here imports grpc or the app at import time."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

from quineling import worker_state
from quineling.settings import ConfigError, Settings

GRACE_SECONDS = 30.0

Hook = Callable[..., None]


def in_worker(settings: Settings) -> bool:
    """Whether gRPC runs inside the worker (memory://) rather than as a sibling process."""
    return bool(settings.grpc_port) and settings.store_url.startswith("memory:")


def check(settings: Settings) -> None:
    if in_worker(settings) and settings.worker_class != "gthread":
        raise ConfigError(
            "QUINELING_GRPC_PORT on memory:// serves gRPC inside the one HTTP worker, which must then be "
            "gunicorn's gthread (gRPC and gevent do not mix): set QUINELING_WORKER_CLASS=gthread, or use a "
            "shared store (redis://…), where gRPC runs as a process of its own"
        )


def hooks(settings: Settings, base: dict[str, Any]) -> dict[str, Any]:
    """``base``'s gunicorn hooks with the gRPC listener's chained after them (none without a gRPC port)."""
    if not settings.grpc_port:
        return {}
    if in_worker(settings):
        return _worker_hooks(base)
    return _sibling_hooks(base)


def _then(first: Hook | None, then: Hook) -> Hook:
    """``first`` then ``then``, as one one-argument hook (gunicorn checks a hook's arity)."""

    def both(arg: Any) -> None:
        if first is not None:
            first(arg)
        then(arg)

    return both


def _worker_hooks(base: dict[str, Any]) -> dict[str, Any]:
    servers: list[Any] = []

    def start(worker: Any) -> None:
        from quineling.server.grpc_server import GrpcServer

        app = worker.wsgi
        server = GrpcServer(
            app, app.extensions["quineling"].extras["settings"], also_stop=worker_state.worker_stopping
        )
        server.start()
        servers.append(server)

    def stop(_arbiter: Any, _worker: Any) -> None:
        for server in servers:
            server.stop(GRACE_SECONDS)

    assert "worker_exit" not in base  # nothing else uses it: this hook is the whole of it
    return {"post_worker_init": _then(base.get("post_worker_init"), start), "worker_exit": stop}


def _sibling_hooks(base: dict[str, Any]) -> dict[str, Any]:
    children: list[subprocess.Popen[bytes]] = []

    def spawn(_arbiter: Any) -> None:
        # After the base on_starting: the metrics directory is in the environment the child inherits.
        children.append(subprocess.Popen([sys.executable, "-m", "quineling", "serve-grpc"]))

    def reap(_arbiter: Any) -> None:
        for child in children:
            if child.poll() is None:
                child.terminate()
                try:
                    child.wait(GRACE_SECONDS + 5)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()

    return {
        "on_starting": _then(base.get("on_starting"), spawn),
        "on_exit": _then(reap, base["on_exit"]) if "on_exit" in base else reap,
    }
