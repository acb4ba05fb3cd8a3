"""Rate limits per principal (``QUINELING_RATE_LIMIT``), counted in the configured store so that every worker
of every host enforces one budget (docs/deployment.md, "Rate limits").

One request hook, after authentication: the caller is its principal, or its client address when anonymous
(:mod:`quineling.a2a.client_address`); every request counts once in each limit's window, a stream once when
it opens. Over any limit the request is answered HTTP 429 with ``Retry-After`` and an error in the binding's
shape before its body is read; every counted response carries the ``RateLimit-*`` fields of
draft-ietf-httpapi-ratelimit-headers-06. The agent card, ``/healthz``, ``/readyz`` and ``/metrics`` are not
counted. A store that cannot count answers the retryable storage error (503), never a 500 and never an
unlimited pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from flask import Flask, Response, request

from quineling.a2a.client_address import Network
from quineling.a2a.endpoints import JSONRPC_PATH, under
from quineling.a2a.errors import A2AError, UnavailableError, store_failure
from quineling.a2a.http.authentication import authenticated_principal
from quineling.a2a.http.binding import requested_version, state
from quineling.a2a.http.sse import compact
from quineling.a2a.rate_limits import (
    JSONRPC_RATE_LIMITED,
    RATE_LIMIT_DOMAIN,
    Limit,
    RateLimitedError,
    RateLimiter,
    Verdict,
    caller_budget,
    parse_limits,
)
from quineling.auth import Principal
from quineling.observe import notes
from stores.errors import StoreError

# What the bindings' other modules and the app read from here; the limiter itself has no transport.
__all__ = [
    "JSONRPC_RATE_LIMITED",
    "RATE_LIMIT_DOMAIN",
    "VERDICT_KEY",
    "Limit",
    "RateLimitedError",
    "RateLimiter",
    "Verdict",
    "caller_identity",
    "identity_of",
    "install",
    "parse_limits",
]

log = logging.getLogger(__name__)

VERDICT_KEY = "quineling.rate_limit"  # the request's verdict, in its WSGI environ, for the response hook


def install(
    app: Flask, limiter: RateLimiter, *, trusted_proxies: Sequence[Network], exempt: Iterable[str]
) -> None:
    """Count and limit every request of ``app`` except those for the ``exempt`` paths. Registered after the
    authentication hook, so that a principal is known (and an unauthenticated request is refused, 401,
    without counting)."""
    exempt_paths = frozenset(exempt)

    @app.before_request
    def limit_rate() -> Response | None:
        if request.path in exempt_paths:
            return None
        identity = caller_identity(trusted_proxies)
        # The lean JSON-RPC path (quineling/a2a/http/lean_jsonrpc.py) hands a refusal it counted over to this hook,
        # which answers it: a request is counted once.
        counted: Verdict | None = request.environ.get(VERDICT_KEY)
        try:
            verdict = counted if counted is not None else limiter.check(identity)
        except StoreError as exc:
            failure = store_failure(exc)  # logged there: a warning line, or a traceback when not transient
            if not isinstance(failure, UnavailableError):  # a refused script, say: still no 500 from here
                failure = UnavailableError("Rate limiting is unavailable; retry later")
            return _refusal(failure, 503)
        request.environ[VERDICT_KEY] = verdict
        if verdict.allowed:
            return None
        if verdict.first_refusal:  # one line per caller and window, however many requests it refuses
            log.info(
                "rate limited: %s is over %s for %d s", identity, verdict.limit.text, verdict.reset_seconds
            )
        error = RateLimitedError(verdict.limit.text, verdict.reset_seconds)
        notes.note_outcome(error.reason)  # counted under the reason the answer carries, as every error is
        response = _refusal(error, 429)
        response.headers["Retry-After"] = str(verdict.reset_seconds)
        return response

    @app.after_request
    def rate_limit_headers(response: Response) -> Response:
        verdict: Verdict | None = request.environ.get(VERDICT_KEY)
        if verdict is not None:
            response.headers.update(verdict.headers())
        return response


def caller_identity(trusted_proxies: Sequence[Network]) -> str:
    """Whose budget a request spends: ``p:<principal>`` when authenticated, else ``a:<client address>``."""
    return identity_of(request.environ, authenticated_principal(), trusted_proxies)


def identity_of(
    environ: Mapping[str, Any], principal: Principal | None, trusted_proxies: Sequence[Network]
) -> str:
    """:func:`caller_identity` from a WSGI environ (the lean JSON-RPC path has no Flask request)."""
    # The server joins repeated X-Forwarded-For headers into one value, as werkzeug then reads it.
    return caller_budget(
        principal, environ.get("REMOTE_ADDR", ""), environ.get("HTTP_X_FORWARDED_FOR"), trusted_proxies
    )


def _refusal(error: A2AError, status: int) -> Response:
    """``error`` in the shape of the binding asked for, before its body is read (so a JSON-RPC id is null):
    v0.3 JSON-RPC (compat on and no ``A2A-Version``, which is how v0.3 clients call) gets ``{code,
    message}``; 1.0 JSON-RPC the envelope with ``data``; everything else the HTTP+JSON ``google.rpc.Status``."""
    if under(request.path, JSONRPC_PATH):
        compat = state().compat()
        rendered = (
            compat.error(error) if compat is not None and requested_version() == "0.3" else error.to_jsonrpc()
        )
        body: Any = {"jsonrpc": "2.0", "id": None, "error": rendered}
    else:
        body = error.to_rest()
    response = Response(compact(body), status=status, mimetype="application/json")
    response.headers["Cache-Control"] = "no-store"
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response
