"""Credentials, applied the way the agent's card declares them, and kept out of every log, repr and error.

* ``bearer``: ``Authorization: Bearer <token>``.
* ``api_key``: where the card's ``apiKey`` scheme says (a header, a query parameter or a cookie, by name).
  A card that declares only an HTTP bearer scheme gets the key as the bearer token (this server and others take
  API keys that way); a card that declares nothing gets it in ``X-API-Key``.

Secrets are never part of a repr, and :meth:`Credentials.redact` replaces them in any text the client is about to
put in an error (an agent may echo a header back).
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass, field

from quineling.client.card import AgentCard
from quineling.client.errors import InvalidCredentials

REDACTED = "***"


class _SecretFilter(logging.Filter):
    """Scrubs the secrets of live :class:`Credentials` from records of the HTTP libraries' loggers (httpx logs
    each request's URL at INFO, which holds an API key sent as a query parameter)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: weakref.WeakSet[Credentials] = weakref.WeakSet()
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        with self.lock:
            secrets = [s for c in self.live for s in c.secrets]
        if secrets:
            text = record.getMessage()
            scrubbed = text
            for secret in secrets:
                scrubbed = scrubbed.replace(secret, REDACTED)
            if scrubbed != text:
                record.msg, record.args = scrubbed, ()
        return True


SECRET_FILTER = _SecretFilter()
logging.getLogger("httpx").addFilter(SECRET_FILTER)  # httpcore's own records carry no URLs or headers


@dataclass(frozen=True)
class Credentials:
    bearer: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for label, secret in (("bearer token", self.bearer), ("API key", self.api_key)):
            bad = next((i for i, c in enumerate(secret or "") if not " " <= c <= "~"), None)
            if bad is not None:
                raise InvalidCredentials(
                    f"the {label} has a character HTTP headers cannot carry at position {bad + 1} "
                    "(only printable ASCII is allowed)",
                    hint="check the token was copied whole and without typographic quotes or spaces",
                )
        if self.secrets:
            with SECRET_FILTER.lock:
                SECRET_FILTER.live.add(self)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    def __repr__(self) -> str:
        shown = [f"{name}={REDACTED}" for name in ("bearer", "api_key") if getattr(self, name)]
        return f"Credentials({', '.join(shown)})"

    __str__ = __repr__

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.bearer, self.api_key) if s)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def apply(self, card: AgentCard | None) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
        """Headers, query parameters and cookies that carry these credentials to ``card``'s agent."""
        headers: dict[str, str] = {}
        query: dict[str, str] = {}
        cookies: dict[str, str] = {}
        schemes = list(card.security_schemes.values()) if card else []
        api_schemes = [s for s in schemes if s.kind == "apiKey" and s.name]
        bearer_declared = any(s.kind == "http" and s.scheme == "bearer" for s in schemes)
        token = self.bearer
        if self.api_key:
            if api_schemes:
                scheme = api_schemes[0]
                target = {"query": query, "cookie": cookies}.get(scheme.location, headers)
                target[scheme.name] = self.api_key
            elif bearer_declared and not token:
                token = self.api_key
            else:
                headers["X-API-Key"] = self.api_key
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers, query, cookies
