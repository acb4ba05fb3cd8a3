"""Canonical JSON and content hashes."""

from __future__ import annotations

import hashlib
import json

from stores.jsontypes import JSONValue


def canonical_json(value: JSONValue) -> str:
    """Sorted keys, no insignificant whitespace, integral floats as integers, no NaN/Infinity."""
    return json.dumps(
        _integralize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _integralize(value: JSONValue) -> JSONValue:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _integralize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_integralize(v) for v in value]
    return value


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return "sha256:" + hashlib.sha256(data).hexdigest()


def hash_json(value: JSONValue) -> str:
    return sha256_hex(canonical_json(value))
