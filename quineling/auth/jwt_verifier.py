"""Bearer JWTs, verified with PyJWT against a JWKS (``QUINELING_AUTH_JWKS``): a file, re-read when it changes,
or a URL, fetched and cached by PyJWT's ``PyJWKClient`` (refetched after five minutes, or sooner when a token
names a key it does not know, at most every 30 seconds).

What a token must be to pass: signed with one of the pinned asymmetric algorithms (``alg`` in the header is
only believed if it is on the list and is the algorithm of the key it names, so ``none``, and HS256 "signed"
with a public key, never verify); ``exp`` present and in the future, ``nbf`` (if present) in the past,
``iss`` the configured issuer and ``aud`` naming the configured audience, each within the leeway; and the
principal claim a non-empty string of at most 256 characters.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Protocol

import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet

from quineling.auth.policy import ALLOWED_ALGORITHMS, InvalidToken, JwtPolicy, KeysUnavailable
from quineling.auth.watch import CHECK_SECONDS, ParseError, WatchedFile

__all__ = ["ALLOWED_ALGORITHMS", "InvalidToken", "JwtPolicy", "KeysUnavailable"]  # defined in policy

log = logging.getLogger(__name__)

MAX_PRINCIPAL_CHARS = 256
JWKS_CACHE_SECONDS = 300.0
JWKS_REFRESH_COOLDOWN_SECONDS = 30.0
JWKS_FETCH_TIMEOUT_SECONDS = 5.0


class KeySource(Protocol):
    def signing_key(self, kid: str | None) -> PyJWK | None: ...


def _pick(keys: list[PyJWK], kid: str | None) -> PyJWK | None:
    """The signing key named ``kid``; without a ``kid``, the set's only signing key (if it has one)."""
    signing = [key for key in keys if key.public_key_use in ("sig", None)]
    if kid is None:
        return signing[0] if len(signing) == 1 else None
    return next((key for key in signing if key.key_id == kid), None)


def parse_jwks(text: str) -> PyJWKSet:
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ParseError("a JWKS is a JSON object with a 'keys' array")
        return PyJWKSet.from_dict(data)
    except ParseError:
        raise
    except (ValueError, jwt.PyJWTError) as exc:  # json.JSONDecodeError is a ValueError
        raise ParseError(f"not a usable JWKS: {exc}") from None


class FileKeys:
    """A JWKS file, re-read when it changes (a malformed edit keeps the last good set)."""

    def __init__(self, path: str | Path, *, interval: float = CHECK_SECONDS) -> None:
        self._file = WatchedFile(path, parse_jwks, what="JWKS file", interval=interval)

    def signing_key(self, kid: str | None) -> PyJWK | None:
        return _pick(list(self._file.current().keys), kid)


class RemoteKeys:
    """A JWKS URL, fetched and cached by ``PyJWKClient``."""

    def __init__(
        self,
        url: str,
        *,
        lifespan: float = JWKS_CACHE_SECONDS,
        cooldown: float = JWKS_REFRESH_COOLDOWN_SECONDS,
        timeout: float = JWKS_FETCH_TIMEOUT_SECONDS,
    ) -> None:
        # The cooldown bounds the fetches a stream of tokens naming unknown keys can cause.
        self._client = PyJWKClient(
            url, cache_jwk_set=True, lifespan=lifespan, timeout=timeout, cooldown_duration=cooldown
        )

    def signing_key(self, kid: str | None) -> PyJWK | None:
        try:
            if kid is None:
                return _pick(list(self._client.get_jwk_set().keys), None)
            return self._client.get_signing_key(kid)
        except jwt.PyJWKClientConnectionError as exc:
            log.warning("JWKS %s cannot be fetched: %s", self._client.uri, exc)
            raise KeysUnavailable() from None
        except jwt.PyJWKClientError:  # no such key (after the one refresh the cooldown allows)
            return None
        except jwt.PyJWKSetError as exc:
            log.warning("JWKS %s holds no usable key: %s", self._client.uri, exc)
            raise KeysUnavailable() from None


# What an operator reads in the log for each refusal PyJWT reports; never the token or a claim's value.
_REASONS: tuple[tuple[type[Exception], str], ...] = (
    (jwt.ExpiredSignatureError, "expired (exp is past)"),
    (jwt.ImmatureSignatureError, "not valid yet (nbf or iat is in the future)"),
    (jwt.InvalidAudienceError, "wrong audience (aud)"),
    (jwt.InvalidIssuerError, "wrong issuer (iss)"),
    (jwt.InvalidSignatureError, "bad signature"),
)


def _reason(exc: Exception) -> str:
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"missing claim {exc.claim!r}"
    return next((text for kind, text in _REASONS if isinstance(exc, kind)), type(exc).__name__)


def _shown(value: str) -> str:
    """An attacker-chosen header value, bounded for the log."""
    return repr(value[:64] + ("…" if len(value) > 64 else ""))


class JwtVerifier:
    def __init__(self, keys: KeySource, policy: JwtPolicy) -> None:
        self._keys = keys
        self.policy = policy

    def verify(self, token: str) -> str:
        """The principal claim of a token that verifies; :class:`InvalidToken` otherwise,
        :class:`KeysUnavailable` when the keys cannot be had."""
        policy = self.policy
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise InvalidToken(f"unreadable header: {type(exc).__name__}") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in policy.algorithms:
            raise InvalidToken(f"algorithm {algorithm!r} is not allowed")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("kid is not a string")
        key = self._keys.signing_key(kid)
        if key is None:
            raise InvalidToken(f"unknown key id {_shown(kid)}" if kid else "no kid and no single signing key")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,  # a PyJWK: verified with the key's own algorithm, which must be the header's
                algorithms=list(policy.algorithms),
                audience=policy.audience,
                issuer=policy.issuer,
                leeway=policy.leeway_seconds,
                options={"require": ["exp", "iss", "aud"], "verify_nbf": True},
            )
        except (
            jwt.PyJWTError,
            ValueError,
            TypeError,
        ) as exc:  # a crafted token fails closed, whatever it trips
            raise InvalidToken(_reason(exc)) from None
        principal = claims.get(policy.principal_claim)
        if not isinstance(principal, str) or not principal or len(principal) > MAX_PRINCIPAL_CHARS:
            raise InvalidToken(f"claim {policy.principal_claim!r} is not a usable principal")
        return principal
