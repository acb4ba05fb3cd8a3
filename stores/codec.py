"""The project's JSON codec for stored values and wire messages: compact UTF-8 JSON, read back exactly.

Encoding and decoding large tasks and artifacts was the biggest CPU cost per request, so both use orjson
(10-15x faster than the standard library here) wherever its result is exactly the standard library's:

* Encoding falls back to the standard library for what orjson refuses — integers beyond 64 bits, strings with
  lone surrogates — ASCII-escaped, so the text is always valid UTF-8.
* Decoding skips orjson for text with a run of 19 or more digits (orjson would read an integer beyond 64 bits
  as a float, silently) and falls back to the standard library whenever orjson refuses the text, so lone
  surrogate escapes, huge exponents and every error message behave exactly as :func:`json.loads` does.

NaN/Infinity never reach an encoder: every input is rejected at the boundary (``strict=True``).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# Nineteen digits in a row can already leave orjson's exact range (below -2**63); a float's long mantissa, or
# digits inside a string, merely take the standard library's path too. Mapping every digit to "0" and
# searching for the run is ~15x faster than a regular expression over hex-heavy text.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * 19


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def loads(data: str | bytes, *, strict: bool = False) -> Any:
    """Parse JSON text (UTF-8 when bytes). ``strict`` refuses the NaN/Infinity literals the standard library
    would accept: for request bodies. Raises ValueError (or RecursionError) for anything that is not JSON."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if _LONG_RUN not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(raw)  # bytes: orjson need not encode a str again
        except orjson.JSONDecodeError:
            pass  # the standard library decides, with its own error
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_constant=_refuse_constant if strict else None)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
