"""Authentication: who a request's ``Authorization: Bearer <token>`` says is calling. No web framework here:
the protocol layer's one request hook (``quineling/a2a/http/authentication.py``) calls :meth:`Authenticator.
authenticate` and renders a refusal in the binding's shape.

Two kinds of credential, both optional, both allowed at once: API keys from a keys file
(:mod:`quineling.auth.keyfile`) and JWTs checked against a JWKS (:mod:`quineling.auth.jwt_verifier`). A key
is tried first (a hash and a few constant-time compares); a token that is no key and looks like a JWT is
then verified as one. Tokens are never logged, and a refusal never says which check failed.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from quineling.auth.keyfile import KeySet, parse_keys_of
from quineling.auth.policy import InvalidToken, JwtPolicy, KeysUnavailable
from quineling.auth.watch import ParseError, WatchedFile

if TYPE_CHECKING:  # PyJWT (and with it ssl) only once a verifier is made: see quineling.auth.policy
    from quineling.auth.jwt_verifier import JwtVerifier, KeySource

log = logging.getLogger(__name__)

MAX_TOKEN_CHARS = 8192
_SPACE = re.compile(r"\s")
JWT_PREFIX = "jwt~"  # a key principal's name never holds '~', so no JWT subject can name a key principal


class AuthenticationFailed(Exception):
    """No valid credential. ``token_sent``: a bearer token was presented (and was not good)."""

    def __init__(self, token_sent: bool) -> None:
        super().__init__("authentication failed")
        self.token_sent = token_sent


class AuthenticationUnavailable(Exception):
    """Credentials cannot be checked right now (the JWKS URL does not answer); the caller may retry."""


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. ``kind`` is ``"key"`` or ``"jwt"``; ``name`` the key's principal or the
    token's principal claim.

    ``scope_id`` is the principal as the stores know it, the first part of every scope it owns: a key
    principal's own name, or ``jwt~`` and the percent-encoded claim — so a JWT subject can never stand for a
    key principal of the same name, and every scope id is a store-safe name without ``:`` or ``/``."""

    kind: str
    name: str

    @property
    def scope_id(self) -> str:
        return self.name if self.kind == "key" else JWT_PREFIX + quote(self.name, safe="")


class Authenticator:
    def __init__(self, keys: WatchedFile[KeySet] | None = None, jwt: JwtVerifier | None = None) -> None:
        if keys is None and jwt is None:
            raise ValueError("an authenticator needs a keys file, a JWT verifier, or both")
        self._keys = keys
        self._jwt = jwt

    @property
    def keys_enabled(self) -> bool:
        return self._keys is not None

    @property
    def jwt_enabled(self) -> bool:
        return self._jwt is not None

    def authenticate(self, authorization: str | None) -> Principal:
        """The principal an ``Authorization`` header value proves; :class:`AuthenticationFailed` or
        :class:`AuthenticationUnavailable` otherwise."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer":
            raise AuthenticationFailed(token_sent=False)
        token = token.strip()
        if not token or len(token) > MAX_TOKEN_CHARS or _SPACE.search(token):
            raise AuthenticationFailed(token_sent=True)
        if self._keys is not None:
            principal = self._keys.current().match(token)
            if principal is not None:
                return Principal("key", principal)
        if self._jwt is not None and token.count(".") == 2:
            try:
                return Principal("jwt", self._jwt.verify(token))
            except InvalidToken as exc:
                # At info, so an operator can tell why a caller is refused (the caller is only told 401);
                # the reason never holds the token.
                log.info("bearer JWT refused: %s", exc)
            except KeysUnavailable:
                raise AuthenticationUnavailable() from None
        raise AuthenticationFailed(token_sent=True)


def watched_keys(path: str | Path) -> WatchedFile[KeySet]:
    """The keys file, followed as it changes; missing or malformed now raises :class:`OSError` /
    :class:`ParseError` (start-up fails)."""
    return WatchedFile(path, lambda text: parse_keys_of(path, text), what="keys file")


def jwt_verifier(jwks: str, policy: JwtPolicy) -> JwtVerifier:
    """A verifier over a JWKS file (read now: missing or malformed raises) or URL (first fetched when a token
    needs it)."""
    from quineling.auth.jwt_verifier import FileKeys, JwtVerifier, RemoteKeys

    source: KeySource = RemoteKeys(jwks) if is_url(jwks) else FileKeys(Path(jwks))
    return JwtVerifier(source, policy)


def is_url(jwks: str) -> bool:
    return jwks.startswith(("https://", "http://"))


__all__ = [
    "AuthenticationFailed",
    "AuthenticationUnavailable",
    "Authenticator",
    "ParseError",
    "Principal",
    "JwtPolicy",
    "is_url",
    "jwt_verifier",
    "watched_keys",
]
