"""gunicorn's options for ``quineling serve`` and ``deploy/gunicorn.conf.py``, from the settings: the worker
class and its bounds, the hooks (:mod:`.hooks`, :mod:`.startup`, :mod:`.metrics_dir`), the logger
(:mod:`.gunicorn_log`), the control socket, and the refusals checked before anything listens.

Read by the gunicorn master before it forks: nothing here imports Flask, redis, ssl or the app
(docs/deployment.md, "Worker model"); each worker loads the app itself."""

from __future__ import annotations

import importlib.util
from typing import Any

from quineling.network import is_loopback
from quineling.server import grpc_beside
from quineling.server.hooks import _watch_worker, remember_request, take_turn
from quineling.server.metrics_dir import MetricsDirectory, hooks
from quineling.server.startup import when_ready_hook
from quineling.settings import ConfigError, Settings, check_auth_files

# The gunicorn worker class behind each name (docs/deployment.md, "Worker model").
WORKER_CLASS_PATHS = {"gevent": "quineling.server.lean_worker.LeanGeventWorker", "gthread": "gthread"}
# gunicorn's access line in text logs: its default, then the duration and the request id the app echoed.
TEXT_ACCESS_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %(L)ss %({x-request-id}o)s'


def _bind_host(bind: str) -> str:
    """The host of a gunicorn bind address: ``[::1]:80`` → ``::1``, ``0.0.0.0:80`` → ``0.0.0.0``, ``::`` → ``::``."""
    if bind.startswith("["):
        return bind[1 : bind.find("]")]
    return bind.rsplit(":", 1)[0] if bind.count(":") == 1 else bind


def check_exposure(settings: Settings, binds: list[str] | None = None) -> None:
    """Refuse to serve a non-loopback address without authentication (unless QUINELING_ALLOW_ANONYMOUS):
    every caller would be one anonymous user who can read and change every task and runtime entry.
    ``binds`` are gunicorn bind addresses (``host:port``, ``[v6]:port``, ``unix:path``); by default the
    settings' host."""
    if settings.authenticated or settings.allow_anonymous:
        return
    for bind in binds if binds is not None else [settings.a2a_host]:
        if bind.startswith(("unix:", "fd://")):
            continue  # a local socket: reachable only on this machine
        if not is_loopback(_bind_host(bind)):
            raise ConfigError(
                f"refusing to serve {bind} without authentication: it is not a loopback address, so anyone "
                "who reaches it could read, cancel and continue every task and use every runtime entry. "
                "Configure QUINELING_AUTH_KEYS_FILE (see 'quineling keys add') or QUINELING_AUTH_JWKS, or "
                "set QUINELING_ALLOW_ANONYMOUS=1 to serve it unauthenticated on purpose."
            )


def gunicorn_options(settings: Settings) -> dict[str, Any]:
    """gunicorn settings shared by ``quineling serve`` and ``deploy/gunicorn.conf.py``.

    More than one worker process needs a shared store, because the memory:// store lives inside one process;
    that combination is refused. The worker model and its bounds are in docs/deployment.md, "Worker model".
    """
    check_exposure(settings)
    check_auth_files(settings)  # a missing or malformed keys or JWKS file stops start-up here, named
    if settings.workers > 1 and settings.store_url.startswith("memory:"):
        raise ConfigError(
            f"QUINELING_WORKERS={settings.workers} needs a shared store, but memory:// is per process. "
            "Use Redis (QUINELING_STORE_URL=redis://host:6379/0) or set QUINELING_WORKERS=1."
        )
    grpc_beside.check(settings)
    if settings.worker_class == "gevent" and importlib.util.find_spec("gevent") is None:
        raise ConfigError("QUINELING_WORKER_CLASS=gevent needs the gevent package (or choose gthread)")
    options: dict[str, Any] = {
        "bind": f"{settings.host_in_url}:{settings.a2a_port}",
        # gevent: gunicorn's gevent worker, with the lean JSON-RPC path's calls read before gunicorn's parser.
        "worker_class": WORKER_CLASS_PATHS.get(settings.worker_class, settings.worker_class),
        "workers": settings.workers,
        "worker_connections": settings.worker_connections,
        # Each worker listens on a socket of its own (gunicorn makes one in every worker it forks), so the
        # kernel spreads new connections evenly (docs/performance.md, "Spread over workers").
        "reuse_port": settings.reuse_port,
        # The heartbeat comes from the worker's own loop, never from a request: open streams do not delay it,
        # and a worker whose loop is stuck this long (a blocking call under gevent, say) is replaced.
        "timeout": 30,
        # On stop, streams end within a poll slice (quineling.worker_state.worker_stopping) and clients subscribe
        # again.
        "graceful_timeout": 30,
        # Seconds an idle kept-alive connection stays open; with gevent also the time a client has to send its
        # complete request headers, after which the connection is closed (a slow-header client costs a
        # greenlet for at most this long).
        "keepalive": 5,
        # gunicorn lets a client in forwarded_allow_ips (loopback by default) set SCRIPT_NAME and PATH_INFO
        # by header, which moves the routes and the URLs the app builds; no client is trusted to (a
        # deployment under a path prefix sets QUINELING_BASE_URL and has its proxy strip the prefix), so the
        # headers are dropped like any other with an underscore (docs/security.md, "Proxies").
        "forwarder_headers": "",
        "post_worker_init": _watch_worker,
        "pre_request": remember_request,
        # Under gevent, every answered request gives the other connections one turn (take_turn).
        **({"post_request": take_turn} if settings.worker_class == "gevent" else {}),
        "accesslog": "-" if settings.access_log else None,
        "when_ready": when_ready_hook(settings),  # the start banner, and a store unreachable at start-up
        "access_log_format": TEXT_ACCESS_FORMAT,
        # The error, access and app logs in QUINELING_LOG_FORMAT (named, so the master imports it only when
        # gunicorn sets up its logging).
        "logger_class": "quineling.server.gunicorn_log.QuinelingLogger",
        "loglevel": settings.log_level,
        **_control_socket(settings),
        **_starting_hooks(settings),
    }
    if settings.worker_class == "gthread":
        options["threads"] = settings.threads
    options.update(grpc_beside.hooks(settings, options))  # the gRPC listener, when QUINELING_GRPC_PORT is set
    return options


def _control_socket(settings: Settings) -> dict[str, Any]:
    """No control socket unless one is named: each server gets its own path or none at all."""
    if settings.control_socket:
        return {"control_socket": settings.control_socket, "control_socket_disable": False}
    return {"control_socket_disable": True}


def _starting_hooks(settings: Settings) -> dict[str, Any]:
    """gunicorn's ``on_starting`` hook: the binds it is about to listen on, after any ``--bind`` of its own
    command line, pass :func:`check_exposure` too (a RuntimeError there stops gunicorn with the message);
    then the metrics directory is prepared for the workers (:mod:`.metrics_dir`), whose ``child_exit``
    and ``on_exit`` hooks come along."""
    metrics = MetricsDirectory(settings.metrics_dir)

    def on_starting(server: Any) -> None:
        try:
            check_exposure(settings, list(server.cfg.bind))
        except ConfigError as exc:
            raise RuntimeError(f"quineling: {exc}") from None
        metrics.prepare()

    return {"on_starting": on_starting, **hooks(metrics)}
