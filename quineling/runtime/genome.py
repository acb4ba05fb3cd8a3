"""Genomes: two lossless encodings of an artifact's source bytes.

Both pack the bytes big-endian, three per group; the last group is zero-padded and ``length`` says how many
bytes are real (padding bytes must be zero when decoding). ``sourceHash`` is ``sha256:<hex>`` of the bytes.

- harmonics: ``{"format": "quineling-harmonics", "version": 1, "length", "sourceHash",
  "partials": [{"k": 1, "a": 0..16777215}, …]}`` with ``k`` counting 1, 2, 3, … in order;
- colors: ``{"format": "quineling-colors", "version": 1, "length", "sourceHash",
  "swatches": ["#rrggbb", …]}`` in lowercase hex.

Decoding checks the closed structure (unknown or missing fields, wrong types), then length, padding and hash;
every failure is ``invalid-genome`` with a path. Integer fields accept integral floats, as in every request.
The bytes still have to pass source validation afterwards; decoding never interprets them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from quineling.runtime.canonical import sha256_hex
from quineling.runtime.errors import QuinelingError
from stores.jsontypes import JSON

MAX_GENOME_BYTES = 1 << 20  # the source size limit; longer genomes cannot hold a valid source
A_MAX = 0xFFFFFF
FORMATS = {"harmonics": "quineling-harmonics", "colors": "quineling-colors"}
_ITEMS = {"harmonics": "partials", "colors": "swatches"}
_SWATCH_RX = re.compile(r"#[0-9a-f]{6}")
_HASH_RX = re.compile(r"sha256:[0-9a-f]{64}")


def _groups(source: bytes) -> list[int]:
    padded = source + b"\0" * (-len(source) % 3)
    return [int.from_bytes(padded[i : i + 3], "big") for i in range(0, len(padded), 3)]


def _header(kind: str, source: bytes) -> JSON:
    return {"format": FORMATS[kind], "version": 1, "length": len(source), "sourceHash": sha256_hex(source)}


def harmonics_of(source: bytes) -> JSON:
    partials = [{"k": k, "a": a} for k, a in enumerate(_groups(source), start=1)]
    return {**_header("harmonics", source), "partials": partials}


def colors_of(source: bytes) -> JSON:
    return {**_header("colors", source), "swatches": [f"#{a:06x}" for a in _groups(source)]}


# ------------------------------------------------------------------------------------------------ decoding


def _fail(message: str, path: str) -> QuinelingError:
    return QuinelingError("invalid-genome", message, path or None)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _closed(value: object, fields: tuple[str, ...], path: str) -> JSON:
    if not isinstance(value, dict):
        raise _fail("must be an object", path)
    for key in value:
        if key not in fields:
            raise _fail(f"unknown field {key!r}", _join(path, str(key)))
    for key in fields:
        if key not in value:
            raise _fail(f"missing field {key!r}", _join(path, key))
    return value


def _integer(value: object, lo: int, hi: int, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail("must be an integer", path)
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise _fail("must be a whole number", path)
        value = int(value)
    if not lo <= value <= hi:
        raise _fail(f"must be an integer in {lo}..{hi}", path)
    return value


def _partial(item: object, index: int, path: str) -> int:
    item = _closed(item, ("k", "a"), path)
    if _integer(item["k"], 1, 1 << 62, _join(path, "k")) != index + 1:
        raise _fail(f"k must be {index + 1} (partials count from 1, in order)", _join(path, "k"))
    return _integer(item["a"], 0, A_MAX, _join(path, "a"))


def _swatch(item: object, index: int, path: str) -> int:
    if not isinstance(item, str) or not _SWATCH_RX.fullmatch(item):
        raise _fail("swatch must be #rrggbb in lowercase hex", path)
    return int(item[1:], 16)


_DECODERS: dict[str, Callable[[object, int, str], int]] = {"harmonics": _partial, "colors": _swatch}


def decode_genome(kind: str, value: object, path: str) -> bytes:
    """Decode and verify a ``harmonics`` or ``colors`` genome, returning the source bytes."""
    if kind not in FORMATS:
        raise ValueError(f"unknown genome kind {kind!r}")
    items_key = _ITEMS[kind]
    value = _closed(value, ("format", "version", "length", "sourceHash", items_key), path)
    if value["format"] != FORMATS[kind]:
        raise _fail(f"format must be {FORMATS[kind]!r}", _join(path, "format"))
    _integer(value["version"], 1, 1, _join(path, "version"))
    length = _integer(value["length"], 0, MAX_GENOME_BYTES, _join(path, "length"))
    source_hash = value["sourceHash"]
    if not isinstance(source_hash, str) or not _HASH_RX.fullmatch(source_hash):
        raise _fail("sourceHash must be sha256:<64 lowercase hex>", _join(path, "sourceHash"))
    items = value[items_key]
    items_path = _join(path, items_key)
    if not isinstance(items, list):
        raise _fail("must be an array", items_path)
    expected = -(-length // 3)
    if len(items) != expected:
        raise _fail(f"{length} bytes need exactly {expected} {items_key}, got {len(items)}", items_path)

    decode = _DECODERS[kind]
    groups = [decode(item, i, _join(items_path, i)) for i, item in enumerate(items)]
    data = b"".join(g.to_bytes(3, "big") for g in groups)
    if any(data[length:]):
        raise _fail("padding bytes of the last group must be zero", _join(items_path, len(items) - 1))
    data = data[:length]
    if sha256_hex(data) != source_hash:
        raise _fail("sourceHash does not match the decoded bytes", _join(path, "sourceHash"))
    return data
