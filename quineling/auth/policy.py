"""What a JWT must satisfy, and the verifier's failures: the parts of :mod:`quineling.auth.jwt_verifier` that need
no PyJWT. PyJWT imports ``ssl`` (for JWKS URLs), and the gunicorn master reads the settings before a gevent
worker patches the standard library, so settings validation must not import it (``quineling.config``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Asymmetric algorithms only: the keys come from a JWKS of public keys, and an HMAC algorithm would let a
# public key act as a shared secret.
ALLOWED_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class InvalidToken(Exception):
    """The token does not verify. The reason is for the log (info level), never for the caller."""


class KeysUnavailable(Exception):
    """The JWKS cannot be had right now (its URL does not answer): no token can be checked."""


@dataclass(frozen=True, slots=True)
class JwtPolicy:
    issuer: str
    audience: str
    algorithms: tuple[str, ...] = ("RS256", "ES256")
    leeway_seconds: float = 30.0
    principal_claim: str = "sub"

    def __post_init__(self) -> None:
        if not self.issuer or not self.audience:
            raise ValueError("a JWT policy needs an issuer and an audience")
        unknown = set(self.algorithms) - ALLOWED_ALGORITHMS
        if unknown or not self.algorithms:
            raise ValueError(
                f"JWT algorithms must be among {', '.join(sorted(ALLOWED_ALGORITHMS))} (got "
                f"{', '.join(sorted(unknown)) or 'none'})"
            )


def jwks_shape_problem(text: str) -> str | None:
    """Why ``text`` is not even shaped like a JWKS (a JSON object whose ``keys`` is a non-empty array of
    objects, each with a ``kty``), or ``None``. Start-up checks a JWKS file with this in the gunicorn master,
    without PyJWT; each worker then parses the keys themselves (``jwt_verifier.parse_jwks``) as it starts."""
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        return f"not a usable JWKS: {exc}"
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(keys, list) or not keys:
        return "not a usable JWKS: a JWKS is a JSON object with a non-empty 'keys' array"
    if not all(isinstance(key, dict) and isinstance(key.get("kty"), str) for key in keys):
        return "not a usable JWKS: every entry of 'keys' is a JSON object with a 'kty'"
    return None
