"""Credentials, applied the way the agent's card declares them, and kept out of every log, repr and error.

* ``bearer``: ``Authorization: Bearer <token>``.
* ``api_key``: where the card's ``apiKey`` scheme says (a header, a query parameter or a cookie, by name).
  A card that declares only an HTTP bearer scheme gets the key as the bearer token (this server and others take
  API keys that way); a card that declares nothing gets it in ``X-API-Key``.

Secrets are never part of a repr, and :meth:`Credentials.redact` replaces them in any text the client is about to
put in an error (an agent may echo a header back).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from quineling.client.card import AgentCard

REDACTED = "***"


@dataclass(frozen=True)
class Credentials:
    bearer: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)

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
