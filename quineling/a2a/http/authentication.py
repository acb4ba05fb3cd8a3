"""The one request hook that authenticates every business request, and the 401 answered in each binding's
shape (docs/security.md).

Guarded: everything under the JSON-RPC endpoint and the HTTP+JSON prefix (1.0 and v0.3 JSON-RPC, REST, SSE
streams, SubscribeToTask), except the HTTP+JSON binding's OpenAPI document and API page, which describe the
API and hold no data. Public: the agent card, ``/healthz`` and ``/readyz`` (probes carry no credentials). The
hook runs before anything else of a request — before its body is read, its Content-Type, size or
``A2A-Version`` is checked — so an unauthenticated caller learns nothing but that it must authenticate.

An open stream is re-checked before each frame it sends (at most once a second): once the key is revoked or
the JWT expires, the stream ends, and subscribing again answers 401.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from flask import Flask, Response, request

from quineling.a2a.endpoints import JSONRPC_PATH, REST_PREFIX, under
from quineling.a2a.errors import ERROR_DOMAIN, ERROR_INFO_TYPE
from quineling.a2a.http.sse import compact
from quineling.auth import AuthenticationFailed, AuthenticationUnavailable, Authenticator, Principal
from quineling.auth.recheck import STREAM_RECHECK_SECONDS, rechecked, still_valid

__all__ = ["STREAM_RECHECK_SECONDS", "authenticated_principal", "install", "rechecked", "unauthenticated"]
from quineling.observe import notes

log = logging.getLogger(__name__)

PRINCIPAL_KEY = "quineling.principal"  # where the hook leaves the principal, in the request's WSGI environ
REALM = "quineling"
# Not one of A2A's codes (-32001..-32099) nor a JSON-RPC standard one: the server-error code JSON-RPC leaves
# to implementations. Clients see HTTP 401 first; the official SDKs raise on the status.
JSONRPC_UNAUTHENTICATED = -32000
UNAUTHENTICATED_MESSAGE = "Authentication required: send 'Authorization: Bearer <token>' with a valid token"
UNAVAILABLE_MESSAGE = "Credentials cannot be checked right now; retry later"


def authenticated_principal() -> Principal | None:
    """The principal the hook authenticated for this request; ``None`` when the server is anonymous."""
    principal: Principal | None = request.environ.get(PRINCIPAL_KEY)
    return principal


def install(
    app: Flask, authenticator: Authenticator, *, public: Iterable[str] = (), also: Iterable[str] = ()
) -> None:
    """Guard ``app``'s business paths with ``authenticator`` (one ``before_request`` hook, and one
    ``after_request`` hook that keeps open streams checked). ``public``: paths under the bindings that stay
    open, each exactly or as the folder it names (``…/docs/assets/``, ending in ``/``); ``also``: exact paths
    outside the bindings that are guarded too (``/metrics``)."""
    exact = frozenset(p for p in public if not p.endswith("/"))
    folders = tuple(p for p in public if p.endswith("/"))
    extra = frozenset(also)

    def guarded(path: str) -> bool:
        if path in exact or path.startswith(folders):
            return False
        return under(path, JSONRPC_PATH) or under(path, REST_PREFIX) or path in extra

    @app.before_request
    def authenticate() -> Response | None:
        if not guarded(request.path):
            return None
        try:
            principal = authenticator.authenticate(request.headers.get("Authorization"))
        except AuthenticationFailed as failure:
            return unauthenticated(request.path, token_sent=failure.token_sent)
        except AuthenticationUnavailable:
            return unavailable(request.path)
        request.environ[PRINCIPAL_KEY] = principal
        return None

    @app.after_request
    def keep_checking(response: Response) -> Response:
        principal = request.environ.get(PRINCIPAL_KEY)
        if principal is not None and response.mimetype == "text/event-stream" and response.is_streamed:
            header = request.headers.get("Authorization")
            response.response = rechecked(
                response.response,
                lambda: still_valid(authenticator, header, principal),
                STREAM_RECHECK_SECONDS,
            )
        return response


def challenge(token_sent: bool) -> str:
    # RFC 6750: error="invalid_token" only when a bearer token was presented; never which check failed.
    return f'Bearer realm="{REALM}"' + (', error="invalid_token"' if token_sent else "")


def unauthenticated(path: str, *, token_sent: bool) -> Response:
    """HTTP 401 with a ``WWW-Authenticate`` challenge and a body in the shape of the binding at ``path``."""
    response = _error(path, 401, "UNAUTHENTICATED", JSONRPC_UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)
    response.headers["WWW-Authenticate"] = challenge(token_sent)
    return response


def unavailable(path: str) -> Response:
    """HTTP 503 when no credential can be checked (the JWKS URL does not answer): a server-side outage, not
    the caller's fault, so not a 401."""
    response = _error(path, 503, "UNAVAILABLE", -32603, UNAVAILABLE_MESSAGE)
    response.headers["Retry-After"] = "5"
    return response


def _error(path: str, status: int, reason: str, rpc_code: int, message: str) -> Response:
    notes.note_outcome(reason)
    if under(path, JSONRPC_PATH):
        # The body has not been read (authentication comes first), so the envelope's id is null.
        body: Any = {"jsonrpc": "2.0", "id": None, "error": {"code": rpc_code, "message": message}}
    else:
        info = {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": ERROR_DOMAIN}
        body = {"error": {"code": status, "status": reason, "message": message, "details": [info]}}
    response = Response(compact(body), status=status, mimetype="application/json")
    response.headers["Cache-Control"] = "no-store"
    return response
