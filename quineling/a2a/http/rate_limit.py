"""Rate limits per principal (``QUINELING_RATE_LIMIT``), counted in the configured store so that every worker
of every host enforces one budget (docs/deployment.md, "Rate limits").

One request hook, after authentication: the caller is its principal, or its client address when anonymous
(:mod:`quineling.a2a.http.client_address`); every request counts once in each limit's window, a stream once when
it opens. Over any limit the request is answered HTTP 429 with ``Retry-After`` and an error in the binding's
shape before its body is read; every counted response carries the ``RateLimit-*`` fields of
draft-ietf-httpapi-ratelimit-headers-06. The agent card, ``/healthz``, ``/readyz`` and ``/metrics`` are not
counted. A store that cannot count answers the retryable storage error (503), never a 500 and never an
unlimited pass.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import limits
from flask import Flask, Response, request

from quineling.a2a.endpoints import JSONRPC_PATH, under
from quineling.a2a.errors import A2AError, UnavailableError, store_failure
from quineling.a2a.http.authentication import authenticated_principal
from quineling.a2a.http.binding import requested_version, state
from quineling.a2a.http.client_address import Network, client_address, client_key
from quineling.a2a.http.sse import compact
from quineling.auth import Principal
from quineling.observe import notes
from stores.errors import StoreError
from stores.rate_counters import RateCounter, Window, WindowCount

log = logging.getLogger(__name__)

VERDICT_KEY = "quineling.rate_limit"  # the request's verdict, in its WSGI environ, for the response hook
# The one code of JSON-RPC's implementation-defined server-error range (-32000..-32099) that A2A does not
# reserve (it takes -32001..-32099); shared with the 401, told apart by the HTTP status and ErrorInfo reason.
JSONRPC_RATE_LIMITED = -32000
RATE_LIMIT_DOMAIN = "quineling"  # the ErrorInfo domain of a refusal: the protocol defines no such reason


class RateLimitedError(A2AError):
    """Over a rate limit: HTTP 429, ``RESOURCE_EXHAUSTED``, reason ``RATE_LIMIT_EXCEEDED`` (this server's
    domain: the protocol defines no such reason), ``metadata`` saying when to retry. JSON-RPC always carries
    the ErrorInfo in ``data``, so a client can tell "slow down" from other -32000 errors."""

    code, http_status, status, reason = JSONRPC_RATE_LIMITED, 429, "RESOURCE_EXHAUSTED", "RATE_LIMIT_EXCEEDED"
    default_message = "Rate limit exceeded"

    def __init__(self, limit: str, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            f"Rate limit exceeded ({limit}); retry after {retry_after} seconds",
            metadata={"retryable": "true", "retryAfterSeconds": str(retry_after), "limit": limit},
        )

    def error_info(self) -> dict[str, Any]:
        return {**super().error_info(), "domain": RATE_LIMIT_DOMAIN}

    def to_jsonrpc(self) -> dict[str, Any]:
        return {**super().to_jsonrpc(), "data": [self.error_info()]}


@dataclass(frozen=True, slots=True)
class Limit:
    amount: int
    seconds: int
    text: str  # as configured, normalised: "20 per 1 second"

    @property
    def window(self) -> Window:
        return Window(f"{self.amount}-{self.seconds}s", self.seconds)


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    limit: Limit  # the limit closest to exhaustion (when refused: the exceeded one that resets last)
    remaining: int
    reset_seconds: int
    policy: str  # every limit, as the RateLimit-Policy field lists them
    first_refusal: bool = False  # the first request its window refuses (logged, once per window)

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit.amount),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_seconds),
            "RateLimit-Policy": self.policy,
        }


def parse_limits(text: str) -> tuple[Limit, ...]:
    """``QUINELING_RATE_LIMIT`` (validated by quineling.settings) as limits, duplicates dropped."""
    found: dict[tuple[int, int], Limit] = {}
    for item in limits.parse_many(text) if text.strip() else []:
        found.setdefault((item.amount, item.get_expiry()), Limit(item.amount, item.get_expiry(), str(item)))
    return tuple(found.values())


class RateLimiter:
    """The configured limits over the store's counters."""

    def __init__(self, configured: Sequence[Limit], counter: RateCounter) -> None:
        if not configured:
            raise ValueError("a rate limiter needs at least one limit")
        self.limits = tuple(configured)
        self._counter = counter
        self._windows = [limit.window for limit in self.limits]
        self._policy = ", ".join(f"{limit.amount};w={limit.seconds}" for limit in self.limits)

    def check(self, identity: str) -> Verdict:
        """Count one request of ``identity`` and judge it; :class:`StoreError` when the store cannot count."""
        counts = self._counter.hit(identity, self._windows)
        return self._verdict(list(zip(self.limits, counts, strict=True)))

    def _verdict(self, counted: list[tuple[Limit, WindowCount]]) -> Verdict:
        over = [(limit, count) for limit, count in counted if count.count > limit.amount]
        if over:
            first = any(counted_.count == exceeded.amount + 1 for exceeded, counted_ in over)
            limit, count = max(over, key=lambda pair: pair[1].reset_seconds)
            return Verdict(False, limit, 0, _whole_seconds(count.reset_seconds), self._policy, first)
        limit, count = min(counted, key=lambda pair: (pair[0].amount - pair[1].count, -pair[1].reset_seconds))
        return Verdict(
            True, limit, limit.amount - count.count, _whole_seconds(count.reset_seconds), self._policy
        )


def _whole_seconds(seconds: float) -> int:
    return max(1, math.ceil(seconds))


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
    if principal is not None:
        return "p:" + principal.scope_id
    peer = environ.get("REMOTE_ADDR", "")
    # The server joins repeated X-Forwarded-For headers into one value, as werkzeug then reads it.
    forwarded = environ.get("HTTP_X_FORWARDED_FOR")
    hops = [forwarded] if trusted_proxies and forwarded is not None else []
    return "a:" + client_key(client_address(peer, hops, trusted_proxies))


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
