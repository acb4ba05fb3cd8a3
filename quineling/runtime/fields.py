"""Closed-record validation for runtime requests.

Every request object rejects unknown fields at any depth with ``invalid-request`` and a path; numbers must be
finite (``non-finite``) and strings valid Unicode (``invalid-request``); integer fields accept integral floats
such as ``23.0`` (protobuf Struct) and reject ``23.5`` and booleans. Validators return the cleaned value, so handlers receive plain typed data.

A spec is a callable ``(value, path) -> cleaned``. Compose them with :func:`record`, :func:`list_of`, etc.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, TypeVar

from quineling.runtime.errors import QuinelingError
from stores.codec import is_unicode
from stores.jsontypes import JSON

T = TypeVar("T")
# Takes an untrusted value (hence ``object``) and its path; returns the cleaned value or raises.
Spec: TypeAlias = Callable[[object, str], T]
UINT32_MAX = 4_294_967_295
_MISSING = object()


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def fail(message: str, path: str, code: str = "invalid-request") -> QuinelingError:
    return QuinelingError(code, message, path or None)


def ensure_finite(value: object, path: str = "") -> None:
    """Reject NaN/Infinity anywhere inside ``value`` (dicts, lists, numbers)."""
    non_finite, _ = _scan(value, path, strings=False)
    if non_finite is not None:
        raise fail("numbers must be finite", non_finite, "non-finite")


def ensure_request_values(value: object, path: str = "") -> None:
    """Reject NaN/Infinity (``non-finite``, looked for first) and any string or member name that is not
    valid Unicode (a lone surrogate, which cannot be encoded as UTF-8: ``invalid-request``) inside ``value``."""
    non_finite, bad_string = _scan(value, path, strings=True)
    if non_finite is not None:
        raise fail("numbers must be finite", non_finite, "non-finite")
    if bad_string is not None:
        raise fail("strings must be valid Unicode (no lone surrogates)", bad_string)


def _scan(value: object, path: str, *, strings: bool) -> tuple[str | None, str | None]:
    """The paths of the first non-finite number and (with ``strings``) the first non-Unicode string, in
    document order. Iterative, so no nesting a caller hands over can exhaust Python's recursion limit."""
    non_finite: str | None = None
    bad_string: str | None = None
    stack: list[tuple[object, str]] = [(value, path)]
    while stack and non_finite is None:
        item, where = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                non_finite = where
        elif isinstance(item, str):
            if strings and bad_string is None and not is_unicode(item):
                bad_string = where
        elif isinstance(item, Mapping):
            children: list[tuple[object, str]] = []
            for k, v in item.items():
                key = str(k)
                if strings and bad_string is None and not is_unicode(key):
                    bad_string = join(where, key)
                children.append((v, join(where, key)))
            stack.extend(reversed(children))
        elif isinstance(item, list | tuple):
            stack.extend(reversed([(v, join(where, i)) for i, v in enumerate(item)]))
    return non_finite, bad_string


class Optional:
    """Marks a record field as optional; ``default`` is used when it is absent (or omitted if _MISSING)."""

    def __init__(self, spec: Spec[Any], default: object = _MISSING) -> None:
        self.spec = spec
        self.default = default


# What a record maps a field name to: the field's spec, or that spec marked optional.
Field: TypeAlias = "Spec[Any] | Optional"


def record(fields: Mapping[str, Field], *, name: str = "object") -> Spec[JSON]:
    """A closed record: unknown fields are rejected, required fields must be present."""

    def check(value: object, path: str) -> JSON:
        if not isinstance(value, Mapping):
            raise fail(f"{name} must be an object", path)
        for key in value:
            if key not in fields:
                raise fail(f"unknown field {key!r}", join(path, str(key)))
        out: JSON = {}
        for key, spec in fields.items():
            sub = join(path, key)
            if key not in value or (isinstance(spec, Optional) and value[key] is None):
                if isinstance(spec, Optional):
                    if spec.default is not _MISSING:
                        out[key] = spec.default
                    continue
                raise fail(f"missing required field {key!r}", sub)
            inner = spec.spec if isinstance(spec, Optional) else spec
            out[key] = inner(value[key], sub)
        return out

    return check


def integer(lo: int, hi: int) -> Spec[int]:
    def check(value: object, path: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail("must be an integer", path)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise fail("numbers must be finite", path, "non-finite")
            if not value.is_integer():
                raise fail("must be a whole number", path)
            value = int(value)
        if not lo <= value <= hi:
            raise fail(f"must be an integer in {lo}..{hi}", path)
        return value

    return check


uint32 = integer(0, UINT32_MAX)


def number(lo: float = -math.inf, hi: float = math.inf) -> Spec[int | float]:
    def check(value: object, path: str) -> int | float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise fail("must be a number", path)
        if isinstance(value, float) and not math.isfinite(value):
            raise fail("numbers must be finite", path, "non-finite")
        if not lo <= value <= hi:
            raise fail(f"must be a number in {lo:g}..{hi:g}", path)
        return normalize_number(value)

    return check


def normalize_number(value: int | float) -> int | float:
    """Integral floats become ints so canonical JSON writes ``23`` not ``23.0``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def string(min_len: int = 0, max_len: int = 1 << 20, pattern: str | None = None) -> Spec[str]:
    rx = re.compile(pattern) if pattern else None
    length = f"{min_len} characters" if min_len == max_len else f"{min_len}..{max_len} characters"
    # A patterned string says its pattern whichever rule it breaks: "must be 71..71 characters" would tell
    # the caller of a truncated hash less than the form it must have.
    expected = f"must be {length}" if pattern is None else f"must match {pattern} ({length})"

    def check(value: object, path: str) -> str:
        if not isinstance(value, str):
            raise fail("must be a string", path)
        if not min_len <= len(value) <= max_len or (rx is not None and not rx.fullmatch(value)):
            raise fail(expected, path)
        return value

    return check


def boolean(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise fail("must be true or false", path)
    return value


def one_of(*choices: str) -> Spec[str]:
    def check(value: object, path: str) -> str:
        if not isinstance(value, str) or value not in choices:
            raise fail(f"must be one of {', '.join(choices)}", path)
        return value

    return check


def list_of(item: Spec[T], min_len: int = 0, max_len: int = 1 << 20) -> Spec[list[T]]:
    def check(value: object, path: str) -> list[T]:
        if not isinstance(value, list):
            raise fail("must be an array", path)
        if not min_len <= len(value) <= max_len:
            raise fail(f"must hold {min_len}..{max_len} items", path)
        return [item(v, join(path, i)) for i, v in enumerate(value)]

    return check


def nullable(spec: Spec[T]) -> Spec[T | None]:
    def check(value: object, path: str) -> T | None:
        return None if value is None else spec(value, path)

    return check


def tagged(tag: str, variants: Mapping[str, Spec[JSON]]) -> Spec[JSON]:
    """A closed union discriminated by ``tag`` (e.g. ``kind``); each variant is a :func:`record`."""

    def check(value: object, path: str) -> JSON:
        if not isinstance(value, Mapping):
            raise fail("must be an object", path)
        kind = value.get(tag)
        if not isinstance(kind, str) or kind not in variants:
            raise fail(f"{tag} must be one of {', '.join(variants)}", join(path, tag))
        return variants[kind](value, path)

    return check


def any_json(value: object, path: str) -> object:
    ensure_finite(value, path)
    return value


SHA256 = r"sha256:[0-9a-f]{64}"
sha256_id = string(71, 71, SHA256)
