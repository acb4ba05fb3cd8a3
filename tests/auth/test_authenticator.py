"""The authenticator: the ``Authorization`` header, keys before JWTs, and principals as the stores know them."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from quineling.auth import (
    AuthenticationFailed,
    AuthenticationUnavailable,
    Authenticator,
    JwtPolicy,
    Principal,
    jwt_verifier,
    watched_keys,
)
from quineling.auth.keyfile import add_key
from tests.support.tokens import AUDIENCE, ISSUER, SigningKey, jwks

RSA = SigningKey.rsa()


@pytest.fixture
def both(tmp_path: Path) -> tuple[Authenticator, str]:
    keys = tmp_path / "keys"
    token = add_key(keys, "alice")
    (tmp_path / "jwks.json").write_text(json.dumps(jwks(RSA)))
    verifier = jwt_verifier(str(tmp_path / "jwks.json"), JwtPolicy(ISSUER, AUDIENCE))
    return Authenticator(watched_keys(keys), verifier), token


def failure(authenticator: Authenticator, header: str | None) -> bool:
    with pytest.raises(AuthenticationFailed) as info:
        authenticator.authenticate(header)
    return info.value.token_sent


def test_keys_and_jwts_at_once(both: tuple[Authenticator, str]) -> None:
    authenticator, token = both
    assert authenticator.authenticate(f"Bearer {token}") == Principal("key", "alice")
    assert authenticator.authenticate(f"bearer   {token} ") == Principal("key", "alice")
    assert authenticator.authenticate(f"Bearer {RSA.token('alice')}") == Principal("jwt", "alice")
    assert authenticator.keys_enabled and authenticator.jwt_enabled


def test_a_jwt_subject_never_stands_for_a_key_principal_of_the_same_name() -> None:
    assert Principal("key", "alice").scope_id == "alice"
    assert Principal("jwt", "alice").scope_id == "jwt~alice"
    assert Principal("jwt", "auth0|42/x:y").scope_id == "jwt~auth0%7C42%2Fx%3Ay"  # no ':' or '/' left
    assert Principal("jwt", "~x").scope_id != Principal("jwt", "%7Ex").scope_id


def test_missing_or_foreign_schemes_send_no_token_error(both: tuple[Authenticator, str]) -> None:
    authenticator, token = both
    for header in (None, "", "Basic YWxpY2U6cHc=", token, f"Token {token}"):
        assert failure(authenticator, header) is False


def test_bad_bearer_tokens_are_invalid_tokens(both: tuple[Authenticator, str]) -> None:
    authenticator, token = both
    for header in ("Bearer", "Bearer  ", f"Bearer {token}x", f"Bearer {token[:-1]}", "Bearer a b",
                   f"Bearer {'x' * 9000}", "Bearer a.b.c", f"Bearer {SigningKey.rsa().token()}"):  # fmt: skip
        assert failure(authenticator, header) is True, header


def test_an_unreachable_jwks_url_is_unavailable_not_a_refusal(tmp_path: Path) -> None:
    verifier = jwt_verifier("http://127.0.0.1:1/jwks.json", JwtPolicy(ISSUER, AUDIENCE))
    authenticator = Authenticator(None, verifier)
    with pytest.raises(AuthenticationUnavailable):
        authenticator.authenticate(f"Bearer {RSA.token()}")
    assert failure(authenticator, "Bearer not-a-jwt") is True  # no JWT shape: no fetch, plain refusal


def test_an_authenticator_needs_something_to_check() -> None:
    with pytest.raises(ValueError):
        Authenticator()


def test_a_refused_jwt_is_logged_at_info_with_its_reason_and_never_the_token(
    both: tuple[Authenticator, str], caplog: pytest.LogCaptureFixture
) -> None:
    authenticator, _ = both
    now = int(time.time())
    cases = {
        RSA.token(exp=now - 3600): "expired",
        RSA.token(aud="someone-else"): "wrong audience",
        RSA.token(iss="https://elsewhere.example"): "wrong issuer",
        RSA.token(kid="retired-key"): "unknown key id 'retired-key'",
        RSA.token(exp=None): "missing claim 'exp'",
    }
    for token, reason in cases.items():
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="quineling.auth"):
            assert failure(authenticator, f"Bearer {token}") is True
        lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
        assert any(reason in line for line in lines), (reason, lines)
        assert all(token not in line and token.split(".")[1] not in line for line in lines)
