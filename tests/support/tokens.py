"""Locally generated signing keys, their JWKS and JWTs signed with them, for the authentication tests."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://issuer.test"
AUDIENCE = "quineling-tests"


@dataclass
class SigningKey:
    kid: str
    algorithm: str
    private: Any = field(repr=False)

    @classmethod
    def rsa(cls, kid: str = "rsa-1") -> SigningKey:
        return cls(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))

    @classmethod
    def ec(cls, kid: str = "ec-1") -> SigningKey:
        return cls(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))

    def jwk(self) -> dict[str, Any]:
        codec = RSAAlgorithm if self.algorithm.startswith(("RS", "PS")) else ECAlgorithm
        key: dict[str, Any] = json.loads(codec.to_jwk(self.private.public_key()))
        return {**key, "kid": self.kid, "use": "sig", "alg": self.algorithm}

    def public_pem(self) -> bytes:
        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )

    def token(self, subject: str = "alice", *, kid: str | None = "", **claims: Any) -> str:
        """A token signed with this key: issuer, audience, subject and an hour's validity unless overridden
        (a claim given as None is left out); ``kid=None`` leaves the header's kid out."""
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 3600, **claims}
        payload = {k: v for k, v in payload.items() if v is not None}
        headers = {} if kid is None else {"kid": kid or self.kid}
        return jwt.encode(payload, self.private, algorithm=self.algorithm, headers=headers)


def jwks(*keys: SigningKey) -> dict[str, Any]:
    return {"keys": [key.jwk() for key in keys]}


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], payload: dict[str, Any], signature: bytes = b"") -> str:
    """A token assembled by hand, as an attacker would: any header, any payload, any signature."""
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(payload).encode())
    return head + "." + _b64(signature)


def claims(subject: str = "mallory", **more: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "exp": now + 3600, **more}


def hs256_with(secret: bytes, kid: str, subject: str = "mallory") -> str:
    """The classic confusion attack: HS256 "signed" with the verifier's public key as the shared secret."""
    header = {"alg": "HS256", "typ": "JWT", "kid": kid}
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims(subject)).encode())
    return head + "." + _b64(hmac.new(secret, head.encode(), hashlib.sha256).digest())
