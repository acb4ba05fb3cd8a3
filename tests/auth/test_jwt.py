"""JWT verification with locally generated RSA and EC keys: what passes, and every forgery and lapse that
must not (expired, not yet valid, wrong audience or issuer, ``alg: none``, HS256 signed with the public key,
algorithm/key mismatch, unknown or substituted keys); JWKS files that change and URLs that are cached."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from quineling.auth.jwt_verifier import (
    FileKeys,
    InvalidToken,
    JwtPolicy,
    JwtVerifier,
    KeysUnavailable,
    RemoteKeys,
)
from tests.support.tokens import AUDIENCE, ISSUER, SigningKey, claims, hs256_with, jwks, unsigned

RSA = SigningKey.rsa()
EC = SigningKey.ec()
POLICY = JwtPolicy(ISSUER, AUDIENCE)


@pytest.fixture
def jwks_file(tmp_path: Path) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks(RSA, EC)))
    return path


@pytest.fixture
def verifier(jwks_file: Path) -> JwtVerifier:
    return JwtVerifier(FileKeys(jwks_file), POLICY)


def refused(verifier: JwtVerifier, token: str) -> str:
    with pytest.raises(InvalidToken) as info:
        verifier.verify(token)
    return str(info.value)


@pytest.mark.parametrize("key", [RSA, EC], ids=["RS256", "ES256"])
def test_a_good_token_names_its_subject(verifier: JwtVerifier, key: SigningKey) -> None:
    assert verifier.verify(key.token("alice")) == "alice"
    assert verifier.verify(key.token("auth0|42", aud=[AUDIENCE, "other"])) == "auth0|42"


@pytest.mark.parametrize("key", [RSA, EC], ids=["RS256", "ES256"])
def test_lapsed_tokens_are_refused_beyond_the_leeway(verifier: JwtVerifier, key: SigningKey) -> None:
    now = int(time.time())
    assert refused(verifier, key.token(exp=now - 31)) == "expired (exp is past)"
    assert verifier.verify(key.token(exp=now - 20)) == "alice"  # within the 30 s leeway
    assert refused(verifier, key.token(nbf=now + 60)) == "not valid yet (nbf or iat is in the future)"
    assert verifier.verify(key.token(nbf=now + 20)) == "alice"


@pytest.mark.parametrize("key", [RSA, EC], ids=["RS256", "ES256"])
def test_wrong_audience_issuer_or_missing_claims_are_refused(verifier: JwtVerifier, key: SigningKey) -> None:
    assert refused(verifier, key.token(aud="someone-else")) == "wrong audience (aud)"
    assert refused(verifier, key.token(iss="https://evil.test")) == "wrong issuer (iss)"
    for claim in ("exp", "iss", "aud"):
        assert refused(verifier, key.token(**{claim: None})) == f"missing claim {claim!r}"
    assert "usable principal" in refused(verifier, key.token(sub=None))
    assert "usable principal" in refused(verifier, key.token(sub=""))
    assert "usable principal" in refused(verifier, key.token(sub="x" * 257))


def test_alg_none_is_refused(verifier: JwtVerifier) -> None:
    for alg in ("none", "None", "NONE"):
        token = unsigned({"alg": alg, "kid": RSA.kid}, claims())
        assert "not allowed" in refused(verifier, token)
    assert "not allowed" in refused(verifier, unsigned({"kid": RSA.kid}, claims()))


def test_hs256_signed_with_the_public_key_is_refused(verifier: JwtVerifier) -> None:
    for secret in (RSA.public_pem(), json.dumps(RSA.jwk()).encode()):
        assert "not allowed" in refused(verifier, hs256_with(secret, RSA.kid))
    # Even a verifier that pinned HS256 could not be built: only asymmetric algorithms may be pinned.
    with pytest.raises(ValueError, match="must be among"):
        JwtPolicy(ISSUER, AUDIENCE, algorithms=("HS256",))


def test_a_token_must_be_signed_by_the_key_it_names_with_that_keys_algorithm(verifier: JwtVerifier) -> None:
    impostor = SigningKey.rsa(kid=RSA.kid)  # another key claiming the trusted key's id
    assert refused(verifier, impostor.token()) == "bad signature"
    # An ES256 token naming the RSA key, and the reverse: the key's own algorithm decides.
    assert refused(verifier, EC.token(kid=RSA.kid)) == "InvalidAlgorithmError"
    assert refused(verifier, RSA.token(kid=EC.kid)) == "InvalidAlgorithmError"
    assert refused(verifier, RSA.token(kid="nobody")) == "unknown key id 'nobody'"
    tampered = RSA.token("alice").split(".")
    tampered[1] = unsigned({}, claims("root")).split(".")[1]
    assert refused(verifier, ".".join(tampered)) == "bad signature"
    for junk in ("a.b.c", "..", "e30.e30.", "x" * 50):
        assert refused(verifier, junk)


def test_pinned_algorithms_and_the_principal_claim_are_the_policys(jwks_file: Path) -> None:
    only_ec = JwtVerifier(FileKeys(jwks_file), JwtPolicy(ISSUER, AUDIENCE, algorithms=("ES256",)))
    assert only_ec.verify(EC.token()) == "alice"
    assert "not allowed" in refused(only_ec, RSA.token())
    by_email = JwtVerifier(FileKeys(jwks_file), JwtPolicy(ISSUER, AUDIENCE, principal_claim="email"))
    assert by_email.verify(RSA.token(email="a@example.test")) == "a@example.test"
    assert "usable principal" in refused(by_email, RSA.token(email=7))


def test_a_token_without_kid_needs_a_single_key_set(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(jwks(RSA)))
    assert JwtVerifier(FileKeys(path), POLICY).verify(RSA.token(kid=None)) == "alice"
    two = tmp_path / "two.json"
    two.write_text(json.dumps(jwks(RSA, EC)))
    assert (
        refused(JwtVerifier(FileKeys(two), POLICY), RSA.token(kid=None)) == "no kid and no single signing key"
    )


def test_a_jwks_file_follows_key_rotation(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks(RSA)))
    verifier = JwtVerifier(FileKeys(path, interval=0.0), POLICY)
    rotated = SigningKey.ec(kid="ec-2")
    assert refused(verifier, rotated.token()) == f"unknown key id {rotated.kid!r}"
    path.write_text(json.dumps(jwks(rotated)))
    assert verifier.verify(rotated.token()) == "alice"
    assert refused(verifier, RSA.token()) == f"unknown key id {RSA.kid!r}"
    path.write_text("{not json")  # a bad edit keeps the last good set
    assert verifier.verify(rotated.token()) == "alice"


class JwksServer:
    """A JWKS endpoint on a loopback port that counts its fetches and can be switched off."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body, self.fetches, self.up = body, 0, True
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if not outer.up:
                    self.send_error(503)
                    return
                outer.fetches += 1
                payload = json.dumps(outer.body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/jwks.json"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint() -> Iterator[JwksServer]:
    server = JwksServer(jwks(RSA))
    yield server
    server.close()


def test_a_jwks_url_is_fetched_once_and_cached(endpoint: JwksServer) -> None:
    verifier = JwtVerifier(RemoteKeys(endpoint.url), POLICY)
    for _ in range(5):
        assert verifier.verify(RSA.token()) == "alice"
    assert endpoint.fetches == 1


def test_unknown_kids_refetch_at_most_once_per_cooldown(endpoint: JwksServer) -> None:
    """A rotated key is fetched when a token names it; a flood of unknown kids costs the issuer nothing more."""
    guarded = JwtVerifier(RemoteKeys(endpoint.url, cooldown=30), POLICY)
    assert guarded.verify(RSA.token()) == "alice"
    for n in range(5):
        assert refused(guarded, RSA.token(kid=f"unknown-{n}")) == f"unknown key id 'unknown-{n}'"
    assert endpoint.fetches == 1
    eager = JwtVerifier(RemoteKeys(endpoint.url, cooldown=0), POLICY)
    assert eager.verify(RSA.token()) == "alice"
    endpoint.body = jwks(RSA, EC)
    assert eager.verify(EC.token()) == "alice"  # kid not in the cached set: refetched
    assert endpoint.fetches == 3


def test_an_unreachable_jwks_url_means_keys_unavailable(endpoint: JwksServer) -> None:
    endpoint.up = False
    verifier = JwtVerifier(RemoteKeys(endpoint.url, timeout=2), POLICY)
    with pytest.raises(KeysUnavailable):
        verifier.verify(RSA.token())
    endpoint.up = True
    assert verifier.verify(RSA.token()) == "alice"
