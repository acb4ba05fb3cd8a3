"""Rate limits per principal (``QUINELING_RATE_LIMIT``) with no transport: the limits, the verdict on one
request, and whose budget it spends. Every binding — the HTTP hooks (:mod:`quineling.a2a.http.rate_limit`), the
lean JSON-RPC path and the gRPC edge (:mod:`quineling.a2a.grpc`) — counts through one :class:`RateLimiter`
over the store's counters, so a caller has one budget across bindings, workers and hosts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import limits

from quineling.a2a.client_address import Network, client_address, client_key
from quineling.a2a.errors import A2AError
from quineling.auth import Principal
from stores.rate_counters import RateCounter, Window, WindowCount

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


def caller_budget(
    principal: Principal | None, peer: str, forwarded: str | None, trusted_proxies: Sequence[Network]
) -> str:
    """Whose budget a request spends: ``p:<principal>`` when authenticated, else ``a:<client address>`` — the
    ``peer``, or behind trusted proxies the client their ``X-Forwarded-For`` (``forwarded``) names."""
    if principal is not None:
        return "p:" + principal.scope_id
    hops = [forwarded] if trusted_proxies and forwarded is not None else []
    return "a:" + client_key(client_address(peer, hops, trusted_proxies))
