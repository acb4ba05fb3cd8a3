"""What every HTTP binding shares: the app state, the call context, media types and the requested version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import Response, current_app, request

from quineling.a2a.card import supported_versions
from quineling.a2a.compat_v03 import V03Compat
from quineling.a2a.context import CallContext, activated, split_extensions
from quineling.a2a.context import call_context as call_context_of
from quineling.a2a.endpoints import JSONRPC_PATH, REST_PREFIX, under
from quineling.a2a.http.authentication import authenticated_principal
from quineling.a2a.http.streams import StreamSlots, stop_probe
from quineling.a2a.service import A2AService
from quineling.a2a.versions import check_supported, normalize_version
from quineling.auth import Principal
from quineling.settings import Settings

JSON_MEDIA_TYPES = frozenset({"application/json", "application/a2a+json"})
EXTENSION_NAME = "quineling"


@dataclass(slots=True)
class A2AState:
    """Everything the bindings need, kept in ``app.extensions["quineling"]`` (never in module globals)."""

    service: A2AService
    base_url: str
    legacy_compat: bool = True
    card_superset: bool = True
    request_limit_bytes: int = 2 * 1024 * 1024
    body_timeout_seconds: float = (
        30.0  # a body not received in full by then: 408 (quineling/a2a/http/body.py)
    )
    card_max_age: int = 3600
    tenants: frozenset[str] | None = frozenset()  # served besides the default tenant; None = any
    # This worker's open subscriptions (create_app sizes it from the settings).
    streams: StreamSlots = field(default_factory=lambda: StreamSlots(Settings().stream_limit))
    extras: dict[str, Any] = field(default_factory=dict)
    # The versions each binding serves, by binding name: the card is built once per app, so they are read from
    # it once (on every request they were a walk over its interfaces).
    _versions: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    def compat(self) -> V03Compat | None:
        """The v0.3 compat layer when compat is on."""
        return _V03 if self.legacy_compat else None

    def declared_extensions(self) -> frozenset[str]:
        """The URIs of the extensions the card declares: the ones a request can activate."""
        declared = self._versions.get(_EXTENSIONS_KEY)
        if declared is None:
            extensions = self.service.card("1.0").get("capabilities", {}).get("extensions", [])
            declared = self._versions[_EXTENSIONS_KEY] = frozenset(e["uri"] for e in extensions)
        return declared

    def supported_versions(self, binding: str) -> frozenset[str]:
        supported = self._versions.get(binding)
        if supported is None:
            supported = self._versions[binding] = supported_versions(self.service.card("1.0"), binding)
        return supported


_V03 = V03Compat()
_EXTENSIONS_KEY = "extensions"  # cached beside the versions, under a name no binding has


def state() -> A2AState:
    app_state: A2AState = current_app.extensions[EXTENSION_NAME]
    return app_state


def is_json_media_type(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() in JSON_MEDIA_TYPES


def requested_version() -> str:
    """``A2A-Version`` header, else the ``A2A-Version`` query parameter; absent or empty means ``0.3``."""
    value = request.headers.get("A2A-Version")
    if not value:
        value = request.args.get("A2A-Version")
    return normalize_version(value)


def check_version(binding: str, version: str) -> None:
    check_supported(binding, version, state().supported_versions(binding))


def call_context(tenant: Any, version: str, legacy: bool = False) -> CallContext:
    environ = request.environ
    return make_call_context(
        environ,
        tenant,
        version,
        authenticated_principal(),
        state().tenants,
        ("HTTP_X_A2A_EXTENSIONS", "HTTP_A2A_EXTENSIONS") if legacy else ("HTTP_A2A_EXTENSIONS",),
    )


def make_call_context(
    environ: Mapping[str, Any],
    tenant: Any,
    version: str,
    principal: Principal | None,
    served: frozenset[str] | None,
    extension_headers: tuple[str, ...] = ("HTTP_A2A_EXTENSIONS",),
) -> CallContext:
    """The call context of a request, from its WSGI environ (headers as ``HTTP_*`` keys): shared by the Flask
    bindings and the lean JSON-RPC path (quineling/a2a/http/lean_jsonrpc.py)."""
    return call_context_of(
        tenant,
        version,
        principal,
        served,
        _extensions(environ, extension_headers),
        stop_probe(environ),
        environ.get("HTTP_LAST_EVENT_ID"),
        environ.get("HTTP_IDEMPOTENCY_KEY"),
    )


def echo_extensions(response: Response) -> Response:
    """After a request to a binding: echo the extensions it activated, under the header name it used
    (``X-A2A-Extensions`` is v0.3's)."""
    path = request.path
    if not (under(path, JSONRPC_PATH) or under(path, REST_PREFIX)):
        return response
    for key, name in (
        ("HTTP_A2A_EXTENSIONS", "A2A-Extensions"),
        ("HTTP_X_A2A_EXTENSIONS", "X-A2A-Extensions"),
    ):
        if request.environ.get(key):
            echoed = activated(_extensions(request.environ, (key,)), state().declared_extensions())
            if echoed:
                response.headers[name] = echoed
            break
    return response


def _extensions(environ: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    for key in keys:
        value = environ.get(key)
        if value:
            return split_extensions(value)
    return ()
