"""The JSON codec: fast compact encoding, the standard library's exactness for what orjson refuses."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stores import codec


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, -0.25, 1e-05, None, True], "é": "ü 🦎"},
        {"huge": 123456789012345678901234567890},  # beyond 64 bits: orjson refuses, stdlib is exact
        {"surrogate": "\ud800"},  # a lone surrogate, legal in JSON escapes
        [],
    ],
)
def test_round_trip_is_exact(value: object) -> None:
    text = codec.dumps(value)
    assert codec.loads(text) == value
    assert json.loads(text) == value
    text.encode("utf-8")  # always valid UTF-8, even with a lone surrogate


def test_output_is_compact_and_keeps_non_ascii_raw() -> None:
    assert codec.dumps({"a": [1, {"b": "é"}]}) == '{"a":[1,{"b":"é"}]}'


def test_huge_integers_decode_as_integers() -> None:
    assert codec.loads('{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}


@pytest.mark.parametrize(
    "text",
    [
        "-9223372036854775809",  # 19 digits, below -2**63: orjson would give a float
        "18446744073709551616",  # 2**64
        "[9223372036854775807, -9223372036854775808, 18446744073709551615]",
        '"\\ud800"',  # orjson refuses lone surrogate escapes
        "1e400",  # orjson refuses infinity; the standard library reads it
        '{"a": 1, "a": 2}',
        '{"x": [1.5, -0.0, 1E5, "\\u00e9", null, true]}',
        " [1, 2] \n",
        "NaN",
    ],
)
@pytest.mark.parametrize("as_bytes", [False, True])
def test_decoding_is_exactly_the_standard_librarys(text: str, as_bytes: bool) -> None:
    expected = json.loads(text)
    decoded = codec.loads(text.encode() if as_bytes else text)
    assert decoded == expected or (decoded != decoded and expected != expected)  # NaN
    assert json.dumps(decoded) == json.dumps(expected)  # same types: no integer turned float


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_strict_refuses_non_finite_literals(text: str) -> None:
    with pytest.raises(ValueError, match="is not valid JSON"):
        codec.loads(text.encode(), strict=True)


@pytest.mark.parametrize("raw", [b"{", b"\xff{}", b"\xef\xbb\xbf{}", b'{"a": "\x01"}', b"[" * 5000])
def test_what_is_not_json_raises_value_or_recursion_error(raw: bytes) -> None:
    with pytest.raises((ValueError, RecursionError)):
        codec.loads(raw, strict=True)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_any_value_the_standard_library_writes_reads_back_identically(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False), codec.dumps(value)):
        decoded = codec.loads(text.encode("utf-8", "surrogatepass"))
        assert json.dumps(decoded) == json.dumps(json.loads(text))
