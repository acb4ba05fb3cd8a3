"""The project's JSON codec for stored values and wire messages: compact UTF-8 JSON, read back exactly.

Encoding and decoding large tasks and artifacts was the biggest CPU cost per request, so both use orjson
(10-15x faster than the standard library here) wherever its result is exactly the standard library's:

* Encoding falls back to the standard library for what orjson refuses — integers beyond 64 bits, strings with
  lone surrogates — ASCII-escaped, so the text is always valid UTF-8.
* Decoding skips orjson for text with a run of 19 or more digits (orjson would read an integer beyond 64 bits
  as a float, silently) and falls back to the standard library whenever orjson refuses the text, so lone
  surrogate escapes, huge exponents and every error message behave exactly as :func:`json.loads` does.

Request bodies are read with ``strict=True``, which refuses what a request may not carry even when the text is
valid JSON (:class:`Unacceptable`): the NaN/Infinity literals, a number beyond the double range (``1e400``), a
string or member name with a lone surrogate escape (``"\\ud800"``: it cannot be encoded as UTF-8, so it could
be neither stored nor echoed), and nesting deeper than ``max_depth``. So NaN/Infinity never reach an encoder.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

# Nineteen digits in a row can already leave orjson's exact range (below -2**63); a float's long mantissa, or
# digits inside a string, merely take the standard library's path too. Mapping every digit to "0" and
# searching for the run is ~15x faster than a regular expression over hex-heavy text.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19

# Strict loads refuse nesting deeper than this many arrays/objects (the root is level 1); google.protobuf's
# JSON parsers default to the same limit. Everything that later copies or validates a request recursively is
# safe far below Python's recursion limit at this depth.
MAX_DEPTH = 100
# The standard library refuses integer literals longer than this (CPython's int/str conversion limit).
MAX_INT_DIGITS = 4300

Path = tuple[str | int, ...]


class Unacceptable(ValueError):
    """Valid JSON that a request may not carry (``strict`` loads only).

    ``problem`` is ``"depth"``, ``"surrogate"`` (a string value), ``"surrogate-name"`` (a member name),
    ``"non-finite"`` or ``"long-integer"``. ``path`` holds the keys and indices from the root to the value
    (to the container that is one level too deep), or is ``None`` when the parser itself gave up;
    ``document`` is the parsed value then, or ``None``."""

    def __init__(self, problem: str, path: Path | None, document: Any = None) -> None:
        super().__init__(f"{problem} at {list(path) if path is not None else 'an unknown place'}")
        self.problem = problem
        self.path = path
        self.document = document


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def loads(data: str | bytes, *, strict: bool = False, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON text (UTF-8 when bytes). ``strict`` (for request bodies) also raises :class:`Unacceptable`
    for what a request may not carry (module docstring), ``max_depth`` being the nesting limit. Raises
    ValueError for anything that is not JSON (without ``strict``, RecursionError for absurd nesting)."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if _LONG_RUN not in raw.translate(_DIGITS_AS_ZERO):
        try:
            value = orjson.loads(raw)  # bytes: orjson need not encode a str again
        except orjson.JSONDecodeError:
            pass  # the standard library decides, with its own error
        else:
            # orjson itself refuses lone surrogates and infinities; only the depth is left to check, and
            # text with no more brackets than the limit cannot nest deeper than it.
            if strict and raw.count(b"[") + raw.count(b"{") > max_depth and _deeper_than(value, max_depth):
                _refuse(value, max_depth, scalars=False)  # finds where, for the message
            return value
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if not strict:
        return json.loads(text)
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_int=_integer)
    except RecursionError:
        raise Unacceptable("depth", None) from None
    _refuse(value, max_depth, scalars=True)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _LongInteger:
    """Stands in for an integer literal too long to convert, so the walk can say where it is."""


_LONG_INTEGER = _LongInteger()


def _integer(text: str) -> int | _LongInteger:
    return _LONG_INTEGER if len(text.lstrip("-")) > MAX_INT_DIGITS else int(text)


def _deeper_than(value: Any, max_depth: int) -> bool:
    """Whether ``value`` nests more than ``max_depth`` containers: level by level, containers only (several
    times faster than :func:`_refuse`, which also keeps every path)."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below: list[Any] = []
        for container in level:
            members = container.values() if type(container) is dict else container
            below.extend([m for m in members if type(m) is dict or type(m) is list])
        level = below
    return False


# One container on the walk: (value, depth, parent node, key or index in the parent).
_Node = tuple[Any, int, Any, str | int | None]


def _refuse(value: Any, max_depth: int, *, scalars: bool) -> None:
    """Raise :class:`Unacceptable` for the first problem in document order. Iterative: the walk must work
    at any depth the parser accepted, which is far beyond what a recursive one could visit."""
    if scalars:
        problem = _scalar_problem(value)
        if problem:
            raise Unacceptable(problem, (), value)
    if type(value) is not dict and type(value) is not list:
        return
    stack: list[_Node] = [(value, 1, None, None)]
    while stack:
        node = stack.pop()
        container, depth = node[0], node[1]
        if depth > max_depth:
            raise Unacceptable("depth", _path(node), value)
        children: list[_Node] = []
        pairs = container.items() if type(container) is dict else enumerate(container)
        for key, child in pairs:
            if scalars and type(key) is str and not is_unicode(key):
                raise Unacceptable("surrogate-name", (*_path(node), key), value)
            kind = type(child)
            if kind is dict or kind is list:
                children.append((child, depth + 1, node, key))
            elif scalars:
                problem = _scalar_problem(child)
                if problem:
                    raise Unacceptable(problem, (*_path(node), key), value)
        stack.extend(reversed(children))  # popped in document order


def _scalar_problem(value: Any) -> str | None:
    kind = type(value)
    if kind is str:
        return None if is_unicode(value) else "surrogate"
    if kind is float and not math.isfinite(value):
        return "non-finite"
    return "long-integer" if value is _LONG_INTEGER else None


def is_unicode(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8, i.e. holds no lone surrogate."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _path(node: _Node) -> Path:
    keys: list[str | int] = []
    while node[2] is not None:
        key = node[3]
        assert key is not None
        keys.append(key)
        node = node[2]
    return tuple(reversed(keys))
