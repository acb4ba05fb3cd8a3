"""``create_app``: the composition root. Settings → stores → runtime → service → bindings.

The only module that picks a storage backend (``stores.base.backend_from_url``); everything the bindings need
lives in ``app.extensions["quineling"]``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, jsonify

from quineling.a2a import discovery, jsonrpc, openapi, rest
from quineling.a2a.binding import EXTENSION_NAME, A2AState
from quineling.a2a.card import build_card
from quineling.a2a.service import A2AService, StreamSettings
from quineling.config import Settings, load_settings
from stores.base import Backend, StateStore, TaskLimits, TaskStore, backend_from_url
from stores.cache import CachingStateStore

log = logging.getLogger(__name__)


def create_app(
    base_url: str | None = None,
    legacy_compat: bool | None = None,
    runtime: Any = None,
    task_store: TaskStore | None = None,
    request_limit_bytes: int | None = None,
    config: Mapping[str, Any] | None = None,
) -> Flask:
    """Build the A2A application.

    Arguments left as ``None`` come from ``config``, then ``QUINELING_*`` variables, then defaults
    (``legacy_compat`` on, ``request_limit_bytes`` 2 MiB, ``base_url`` ``http://127.0.0.1:8049``).
    ``runtime`` needs ``dispatch(request) -> {operation, result}``; ``task_store`` is a
    :class:`stores.base.TaskStore`. A :class:`~quineling.runtime.runtime.Runtime` over the task store's backend
    (what this builds when both are left out) commits each SendMessage's task in its own commit; any other
    runtime is dispatched first and its task saved after (docs/decisions-a2a.md, "One atomic commit per
    request").
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
    if runtime is None or task_store is None:
        backend = backend_from_url(settings.store_url, prefix=settings.store_prefix)
    if task_store is None:
        assert backend is not None
        task_store = backend.task_store(_task_limits(settings))
    if runtime is None:
        assert backend is not None
        runtime = _runtime(settings, backend)

    card = build_card(settings.advertised_url, legacy_compat=settings.legacy_compat)
    service = A2AService(
        runtime,
        task_store,
        lambda _version: card,
        stream=StreamSettings(settings.keepalive_seconds, settings.subscribe_max_seconds),
    )

    app = Flask("quineling", static_folder=None)
    app.config.update(
        API_TITLE="Quineling A2A HTTP+JSON",
        API_VERSION="1.0",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX=rest.PREFIX,
        OPENAPI_JSON_PATH="openapi.json",
    )
    app.extensions[EXTENSION_NAME] = A2AState(
        service=service,
        base_url=settings.advertised_url,
        legacy_compat=settings.legacy_compat,
        card_superset=settings.card_superset,
        request_limit_bytes=settings.request_limit_bytes,
        card_max_age=settings.card_max_age,
        tenants=_served_tenants(settings.tenants),
        extras={"settings": settings, "backend": backend, "runtime": runtime, "task_store": task_store},
    )
    app.register_blueprint(discovery.blueprint)
    app.register_blueprint(jsonrpc.blueprint)
    openapi.register(app, rest.blp)  # the binding, its OpenAPI document and its docs page
    rest.register_error_handlers(app)  # after Api(): replaces smorest's HTTPException handler
    _register_health(app, task_store, backend)
    return app


def _task_limits(settings: Settings) -> TaskLimits:
    return TaskLimits(
        max_tasks=settings.task_max,
        max_total_bytes=settings.task_max_bytes,
        max_task_bytes=settings.task_max_task_bytes,
        paused_ttl_seconds=settings.task_ttl_seconds,
    )


def _runtime(settings: Settings, backend: Backend) -> Any:
    from quineling.runtime.context import RuntimeLimits
    from quineling.runtime.library import CACHEABLE_KINDS
    from quineling.runtime.runtime import Runtime

    limits = RuntimeLimits(max_artifacts=settings.max_artifacts, max_records=settings.max_records)
    store: StateStore = backend.state_store()
    if settings.read_cache_entries and not backend.local:
        # A read from a network store is a round trip; in-process reads cost what a cache hit would.
        store = CachingStateStore(store, CACHEABLE_KINDS, max_entries=settings.read_cache_entries)
    return Runtime(store=store, limits=limits)


def _register_health(app: Flask, task_store: TaskStore, backend: Backend | None) -> None:
    @app.get("/healthz")
    def healthz() -> Response:
        return jsonify(status="ok")

    @app.get("/readyz")
    def readyz() -> tuple[Response, int]:
        try:
            if backend is not None:
                backend.state_store().counters("health", ["ping"])  # one cheap round trip
            task_store.last_event_id("health", "ping")
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"
            log.warning("readiness check failed: %s", exc)
            return jsonify(status="unavailable", error=type(exc).__name__), 503
        return jsonify(status="ok"), 200


def _served_tenants(setting: str) -> frozenset[str] | None:
    names = {name.strip() for name in setting.split(",") if name.strip()}
    return None if "*" in names else frozenset(names)
