"""``create_app``: the composition root. Settings → stores → runtime → service → bindings.

The only module that picks a storage backend (``stores.backend_from_url``); everything the bindings need
lives in ``app.extensions["quineling"]``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from quineling.a2a.card import build_card, declare_bearer
from quineling.a2a.endpoints import (
    CARD_PATH,
    HEALTH_PATH,
    JSONRPC_PATH,
    METRICS_PATH,
    OPERATOR_PATH,
    READY_PATH,
    REST_PREFIX,
    under,
)
from quineling.a2a.errors import from_http_exception
from quineling.a2a.executor import Dispatcher
from quineling.a2a.http import (
    authentication,
    binding,
    body,
    console,
    discovery,
    jsonrpc,
    observation,
    openapi,
    rate_limit,
    rest,
)
from quineling.a2a.http.binding import EXTENSION_NAME, A2AState
from quineling.a2a.http.lean_jsonrpc import EXTENSION_KEY as LEAN_EXTENSION
from quineling.a2a.http.lean_jsonrpc import LeanJsonRpc
from quineling.a2a.http.origin_guard import OriginGuard
from quineling.a2a.http.streams import StreamSlots
from quineling.a2a.long_poll import LongPoll
from quineling.a2a.scope_usage import usage_json
from quineling.a2a.service import A2AService
from quineling.a2a.subscription import StreamSettings
from quineling.a2a.task_facts import describe_task
from quineling.auth import Authenticator
from quineling.client.registry import AgentRegistry
from quineling.client.shared import SharedState
from quineling.observe import metrics
from quineling.runtime.context import QUOTA_LIMITS, Env, Retention, RuntimeLimits
from quineling.runtime.library import CACHEABLE_KINDS
from quineling.runtime.runtime import Runtime
from quineling.settings import Settings, authenticator, load_settings, tls_store, trusted_networks
from quineling.version import __version__
from stores import backend_from_url
from stores.base import Backend, StateStore, TaskLimits, TaskStore
from stores.cache import CachingStateStore
from stores.rate_counters import MemoryRateCounter
from stores.scopes import ScopeLimits, ScopeRegistry

log = logging.getLogger(__name__)

OPERATOR_SCOPES = 100  # scopes the operator view reports at most (each is a few store reads)
AGENT_FIELDS = (
    "url",
    "name",
    "description",
    "health",
    "last_seen",
    "last_checked",
    "latency_ms",
    "ready",
    "last_error",
)


def create_app(
    base_url: str | None = None,
    legacy_compat: bool | None = None,
    runtime: Dispatcher | None = None,
    task_store: TaskStore | None = None,
    request_limit_bytes: int | None = None,
    config: Mapping[str, Any] | None = None,
) -> Flask:
    """Build the A2A application.

    Arguments left as ``None`` come from ``config``, then ``QUINELING_*`` variables, then defaults
    (``legacy_compat`` on, ``request_limit_bytes`` 2 MiB, ``base_url`` ``http://127.0.0.1:8049``).
    ``runtime`` and ``task_store`` come together or not at all: by default a
    :class:`~quineling.runtime.runtime.Runtime` and a task store over the configured backend. A given runtime
    must honour :class:`~quineling.a2a.executor.Dispatcher` — commit each SendMessage's task in its own
    commit — so its state must be where the task store is (docs/decisions/0004-one-atomic-commit-per-request.md);
    a runtime whose ``store`` is elsewhere is refused here.
    """
    overrides = dict(config or {})
    for name, value in (
        ("base_url", base_url),
        ("legacy_compat", legacy_compat),
        ("request_limit_bytes", request_limit_bytes),
    ):
        if value is not None:
            overrides[name] = value
    settings = load_settings(overrides)

    backend: Backend | None = None
    if (runtime is None) != (task_store is None):
        raise ValueError("create_app takes a runtime and a task store together, or neither")
    if runtime is None or task_store is None:
        backend = backend_from_url(
            settings.store_url,
            prefix=settings.store_prefix,
            observer=metrics.StoreMetrics(),
            **_store_options(settings),
        )
        task_store = backend.task_store(task_limits(settings), describe=describe_task)
        runtime = _runtime(settings, backend)
    state_store = getattr(runtime, "store", None)
    if isinstance(state_store, StateStore) and not task_store.joins(state_store):
        raise ValueError("the runtime's state store and the task store must be on one backend")

    credentials = authenticator(settings)  # None: anonymous (docs/security.md)
    provider = (settings.provider_organization, settings.provider_url) if settings.provider_url else None
    card = build_card(
        settings.advertised_url,
        legacy_compat=settings.legacy_compat,
        provider=provider,
        grpc_url=settings.grpc_advertised,
    )
    if credentials is not None:
        declare_bearer(card, keys=credentials.keys_enabled, jwt=credentials.jwt_enabled)
    service = A2AService(
        metrics.ObservedDispatcher(runtime),
        task_store,
        lambda _version: card,
        stream=StreamSettings(settings.keepalive_seconds, settings.subscribe_max_seconds),
        scopes=_scope_registry(settings, backend),
        idempotency_ttl=settings.idempotency_ttl_seconds,
        long_poll=LongPoll(settings.long_poll_seconds, settings.long_poll_limit),
        on_states=metrics.record_transitions,
    )

    app = _App("quineling", static_folder=None)
    # werkzeug would answer a path with doubled slashes with an HTML 308 redirect; here it is simply not a
    # route, answered in the binding's error shape like any other.
    app.url_map.merge_slashes = False
    app.config.update(
        API_TITLE="Quineling A2A HTTP+JSON",
        API_VERSION="1.0",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX=REST_PREFIX,
        OPENAPI_JSON_PATH="openapi.json",
        # werkzeug's own cap, for any body reader besides the bindings' (quineling/a2a/http/body.py): one byte
        # above the limit, so that the bindings' reader, which stops there, decides and answers 413 itself.
        MAX_CONTENT_LENGTH=settings.request_limit_bytes + 1,
    )
    app.extensions[EXTENSION_NAME] = A2AState(
        service=service,
        base_url=settings.advertised_url,
        legacy_compat=settings.legacy_compat,
        card_superset=settings.card_superset,
        request_limit_bytes=settings.request_limit_bytes,
        body_timeout_seconds=settings.body_timeout_seconds,
        card_max_age=settings.card_max_age,
        tenants=_served_tenants(settings.tenants),
        streams=StreamSlots(settings.stream_limit, watch=metrics.streams_open),
        extras={"settings": settings, "backend": backend, "runtime": runtime, "task_store": task_store},
    )
    guard = OriginGuard.from_settings(settings)
    limiter = _install_pipeline(app, settings, guard, credentials, task_store, backend)
    # The gRPC edge, when served beside this app (quineling/server/grpc_server.py), guards with these same two.
    app.extensions[EXTENSION_NAME].extras.update(authenticator=credentials, rate_limiter=limiter)
    if settings.lean_jsonrpc:
        # In front of Flask, for the common JSON-RPC call; anything else goes on to Flask and _install_pipeline's hooks.
        lean = LeanJsonRpc(
            app.wsgi_app,
            app.extensions[EXTENSION_NAME],
            guard,
            credentials,
            limiter,
            trusted_networks(settings.trusted_proxies),
        )
        app.wsgi_app = lean  # type: ignore[method-assign]
        app.extensions[LEAN_EXTENSION] = lean  # the lean worker calls it before gunicorn parses a request
    return app


def _install_pipeline(
    app: Flask,
    settings: Settings,
    guard: OriginGuard,
    credentials: Authenticator | None,
    task_store: TaskStore,
    backend: Backend | None,
) -> rate_limit.RateLimiter | None:
    """Register every request hook, blueprint, route and error handler of ``app``, in the one order they need;
    the rate limiter, if one is configured, is returned for the lean JSON-RPC path to share.

    Flask runs the app's ``before_request`` hooks in the order they were registered, then the matched
    blueprint's own (which read the body), then the view; the ``after_request`` hooks in the reverse order; and
    of two handlers for one exception class the later registered wins. So, before the view, a request meets:

    1. observation (its id, start time): first, so every refusal below is counted, timed and logged;
    2. the Host and Origin rules (``guard.before_request``; docs/decisions/0006-security-defaults.md):
       before any credential is looked at, a foreign Host is refused 421, a foreign Origin 403, a preflight
       answered;
    3. authentication, when configured: before every blueprint's own hooks, which read the body;
    4. the rate limit, when configured: after authentication, because it counts per principal and a request
       refused 401 is not counted;
    5. the guard's third rule, no "simple" requests: after authentication, as every check of a request's
       content;
    6. the blueprint's own hooks, then the view.

    After the view (reverse registration order): rate-limit headers; authentication re-checks an open stream;
    ``body.close_if_stopping`` and ``body.close_if_unread`` close the connection when they must;
    ``binding.echo_extensions``; the guard's ``Vary``/CORS headers; and observation last, so it records the
    status and headers the client gets. Error handlers: flask-smorest's ``HTTPException`` handler comes with
    the HTTP+JSON binding, and the routing-error handler is registered after it to replace it.
    """
    observation.install(app)  # its before hook first, its after hook last (see above)
    app.before_request(guard.before_request)
    app.after_request(guard.after_request)
    app.after_request(binding.echo_extensions)  # A2A-Extensions: what a request activated
    app.after_request(body.close_if_unread)  # a body left unread is not drained: the connection closes
    app.after_request(body.close_if_stopping)  # a request in flight at SIGTERM closes its connection after
    app.register_blueprint(discovery.blueprint)
    app.register_blueprint(jsonrpc.blueprint)
    openapi.register(app, rest.blp)  # the binding, its OpenAPI document and its docs page
    _register_routing_errors(app)  # after the binding: replaces smorest's HTTPException handler
    _register_health(app, task_store, backend)
    _register_metrics(app)
    app.register_blueprint(
        console.blueprint(settings.operators, lambda: _operator_report(settings, task_store, backend))
    )
    if credentials is not None:
        public = [
            f"{REST_PREFIX}/openapi.json",
            f"{REST_PREFIX}/{openapi.DOCS_PATH}",
            f"{REST_PREFIX}/{openapi.DOCS_PATH}/",  # the redirect to the page, and the page's assets
        ]
        authentication.install(
            app,
            credentials,
            public=[*public, f"{REST_PREFIX}/{openapi.ASSETS_PATH}/"],
            # Any authenticated principal may scrape: the metrics hold counts, never a principal's data.
            also=(OPERATOR_PATH,) if settings.metrics_public else (METRICS_PATH, OPERATOR_PATH),
        )
    limiter = _install_rate_limit(app, settings, backend)
    app.before_request(guard.refuse_simple_request)
    return limiter


class _App(Flask):
    """Flask, minus a per-call cost: Flask asks ``inspect.iscoroutinefunction`` of every hook and view on every
    request (``ensure_sync``); the answer for a given function never changes, so it is remembered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._sync: dict[Callable[..., Any], Callable[..., Any]] = {}

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        try:
            return self._sync[func]
        except KeyError:
            pass
        except TypeError:  # an unhashable callable: asked afresh, as Flask does
            return super().ensure_sync(func)
        sync = super().ensure_sync(func)
        if len(self._sync) < 1024:  # hooks and views are registered once; anything else is asked afresh
            self._sync[func] = sync
        return sync


def _install_rate_limit(
    app: Flask, settings: Settings, backend: Backend | None
) -> rate_limit.RateLimiter | None:
    configured = rate_limit.parse_limits(settings.rate_limit)
    if not configured:
        return None
    # On the configured backend, so every worker of every host shares the counts; injected stores come
    # without a backend, and count in this process.
    counter = backend.rate_counter() if backend is not None else MemoryRateCounter()
    limiter = rate_limit.RateLimiter(configured, counter)
    rate_limit.install(
        app,
        limiter,
        trusted_proxies=trusted_networks(settings.trusted_proxies),
        exempt=[CARD_PATH, HEALTH_PATH, READY_PATH, METRICS_PATH],
    )
    return limiter


def _scope_registry(settings: Settings, backend: Backend | None) -> ScopeRegistry | None:
    """The bound on live scopes, on the configured backend (injected stores come without one)."""
    if backend is None:
        return None
    return backend.scope_registry(ScopeLimits(settings.max_scopes, settings.scope_idle_seconds))


def _register_routing_errors(app: Flask) -> None:
    """Routing errors (404, 405) happen outside the blueprints: answer them in the shape of the binding whose
    path was asked for; on any other path as JSON too (never Flask's HTML page), the google.rpc.Status of the
    HTTP+JSON binding without an A2A ErrorInfo, since no A2A method was asked for."""

    def handle(exc: HTTPException) -> Response | HTTPException:
        if under(request.path, JSONRPC_PATH):
            return jsonrpc.routing_error(exc)
        if under(request.path, REST_PREFIX):
            return rest.routing_error(exc)
        if exc.code in (404, 405):
            status = from_http_exception(exc).to_rest()["error"]["status"]
            answer = jsonify({"error": {"code": exc.code, "status": status, "message": exc.description}})
            answer.status_code = exc.code
            answer.headers.extend(h for h in exc.get_headers() if h[0].lower() == "allow")
            return answer
        return exc

    app.register_error_handler(HTTPException, handle)


def serving_app() -> Flask:
    """The app a server's worker serves (``wsgi.py``, ``quineling serve``): :func:`create_app`, then a warning
    in the log for each thing an operator should know about the store (``Backend.warnings``: a Redis that
    persists nothing, say), which ``/readyz`` lists too."""
    app = create_app()
    backend = app.extensions["quineling"].extras["backend"]
    if backend is not None:
        for warning in backend.warnings():
            log.warning("store: %s", warning)
    return app


def _store_options(settings: Settings) -> dict[str, Any]:
    """The network store's deadlines (the in-process store ignores them). A blocking event read lasts at most
    one keep-alive period (``quineling.a2a.subscription.follow``), so that is the longest it may block."""
    return {
        "socket_connect_timeout": settings.redis_connect_timeout_seconds,
        "socket_timeout": settings.redis_timeout_seconds,
        "max_block_seconds": settings.keepalive_seconds,
        "connections": settings.store_connections,
        "blocking_connections": settings.blocking_store_limit,
        **store_tls_options(settings),
    }


def store_tls_options(settings: Settings) -> dict[str, Any]:
    """The Redis client's TLS options for a ``rediss://`` or ``rediss+cluster://`` store (none for another):
    the server's certificate and host name verified, against ``QUINELING_REDIS_CA_FILE`` or else the system's
    CAs. Spelled out although redis-py 8 defaults to them, so no driver default can loosen them."""
    if not tls_store(settings):
        return {}
    return {
        "ssl_cert_reqs": "required",
        "ssl_check_hostname": True,
        "ssl_ca_certs": settings.redis_ca_file or None,
    }


def task_limits(settings: Settings) -> TaskLimits:
    return TaskLimits(
        max_tasks=settings.task_max,
        max_total_bytes=settings.task_max_bytes,
        max_task_bytes=settings.task_max_task_bytes,
        paused_ttl_seconds=settings.task_ttl_seconds,
        max_claims=settings.idempotency_max_keys,
    )


def scope_limits(settings: Settings) -> dict[str, int]:
    """Each counter a scope keeps, with the configured limit on it (``quineling store usage``, the console)."""
    env, tasks = runtime_env(settings), task_limits(settings)
    limits = {name: getattr(env.limits, field) for name, field in QUOTA_LIMITS.items()}
    return {**limits, "tasks": tasks.max_tasks, "task-bytes": tasks.max_total_bytes}


def runtime_env(settings: Settings) -> Env:
    """The runtime's limits and retention, as configured (also what ``quineling store usage`` reports)."""
    return Env(
        limits=RuntimeLimits(max_artifacts=settings.max_artifacts, max_records=settings.max_records),
        retention=Retention(settings.record_ttl_seconds, settings.runtime_idle_ttl_seconds),
    )


def _runtime(settings: Settings, backend: Backend) -> Runtime:
    store: StateStore = backend.state_store()
    if settings.read_cache_entries and not backend.local:
        # A read from a network store is a round trip; in-process reads cost what a cache hit would.
        store = CachingStateStore(store, CACHEABLE_KINDS, max_entries=settings.read_cache_entries)
    return Runtime(store=store, env=runtime_env(settings))


def _register_health(app: Flask, task_store: TaskStore, backend: Backend | None) -> None:
    @app.get(HEALTH_PATH)
    def healthz() -> Response:
        return jsonify(status="ok", version=__version__)

    @app.get(READY_PATH)
    def readyz() -> tuple[Response, int]:
        body = _readiness(task_store, backend)
        return jsonify(body), 200 if body["status"] == "ok" else 503


def _readiness(task_store: TaskStore, backend: Backend | None) -> dict[str, Any]:
    """What ``/readyz`` answers: ``status`` ok or unavailable (then ``error``), and the store's ``warnings``."""
    try:
        if backend is not None:
            backend.ping()
        else:  # injected stores: a cheap read of the task store stands in for a ping
            task_store.last_event_id("health", "ping")
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
        log.warning("readiness check failed: %s", exc)
        return {"status": "unavailable", "error": type(exc).__name__}
    # Ready, but an operator should know (a Redis that persists nothing, say; docs/deployment.md).
    warnings = backend.warnings() if backend is not None else []
    return {"status": "ok", "warnings": warnings} if warnings else {"status": "ok"}


def _operator_report(settings: Settings, task_store: TaskStore, backend: Backend | None) -> dict[str, Any]:
    """The console's operator view: readiness, the limits, what each scope holds (the first
    ``OPERATOR_SCOPES`` registered), and the agent registry kept in this store (``quineling agents``)."""
    ready = _readiness(task_store, backend)
    limits = scope_limits(settings)
    report: dict[str, Any] = {
        "version": __version__,
        "ready": ready,
        "limits": limits,
        "scopes": [],
        "agents": [],
    }
    if backend is None or ready["status"] != "ok":
        return report
    scopes = []
    for scope in backend.scopes():
        usage = backend.usage(scope)
        if not usage.is_empty:
            scopes.append(usage_json(usage, limits))
        if len(scopes) >= OPERATOR_SCOPES:
            break
    report["scopes"] = scopes
    registry = AgentRegistry(SharedState(backend.state_store()))
    report["agents"] = [
        {key: getattr(agent, key) for key in AGENT_FIELDS} | {"skills": list(agent.skills)}
        for agent in registry.list()
    ]
    return report


def _register_metrics(app: Flask) -> None:
    @app.get(METRICS_PATH)
    def metrics_view() -> Response:
        body, content_type = metrics.exposition()
        response = Response(body, content_type=content_type)
        response.headers["Cache-Control"] = "no-store"
        return response


def _served_tenants(setting: str) -> frozenset[str] | None:
    names = {name.strip() for name in setting.split(",") if name.strip()}
    return None if "*" in names else frozenset(names)
