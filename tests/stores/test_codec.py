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


# --- strict: valid JSON a request may not carry --------------------------------------------------------

LONG = "1" * 20  # a run of 19+ digits sends the text down the standard library's path


@pytest.mark.parametrize("parser", ["orjson", "stdlib"])
@pytest.mark.parametrize(
    ("text", "problem", "path"),
    [
        ('{"a": [1, "\\ud800"]}', "surrogate", ("a", 1)),
        ('{"a": {"\\udfff": 1}}', "surrogate-name", ("a", "\udfff")),
        ('{"a": {"b": 1e400}}', "non-finite", ("a", "b")),
        ('{"a": [-1E+999]}', "non-finite", ("a", 0)),
        ('"\\udc00"', "surrogate", ()),
        ('{"x": "\\ud800", "y": 1e400}', "surrogate", ("x",)),  # the first in document order
        ('{"y": 1e400, "x": "\\ud800"}', "non-finite", ("y",)),
    ],
)
def test_strict_refuses_what_a_request_may_not_carry(
    text: str, problem: str, path: tuple, parser: str
) -> None:
    raw = (text if parser == "orjson" else f"[{LONG}, {text}]").encode()
    with pytest.raises(codec.Unacceptable) as refused:
        codec.loads(raw, strict=True)
    assert refused.value.problem == problem
    assert refused.value.path == (path if parser == "orjson" else (1, *path))
    assert refused.value.document == json.loads(raw)  # parsed: the caller may read the rest (a JSON-RPC id)
    json.loads(raw)  # all of it is valid JSON, and the default mode still reads it
    codec.loads(raw)


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("parser", ["orjson", "stdlib"])
def test_strict_caps_nesting_depth(parser: str) -> None:
    def load(levels: int, max_depth: int = codec.MAX_DEPTH) -> object:
        text = nested(levels) if parser == "orjson" else f"[{LONG}, {nested(levels - 1)}]"
        return codec.loads(text.encode(), strict=True, max_depth=max_depth)

    assert load(codec.MAX_DEPTH) is not None
    with pytest.raises(codec.Unacceptable) as refused:
        load(codec.MAX_DEPTH + 1)
    assert refused.value.problem == "depth" and len(refused.value.path or ()) == codec.MAX_DEPTH
    assert load(5, max_depth=5) is not None
    with pytest.raises(codec.Unacceptable):
        load(6, max_depth=5)


def test_nesting_no_parser_can_read_is_refused_as_too_deep() -> None:
    for raw in (nested(5000).encode(), ('{"a": ' + nested(20000) + "}").encode(), b"[" * 100_000):
        with pytest.raises(codec.Unacceptable) as refused:
            codec.loads(raw, strict=True)
        assert refused.value.problem == "depth" and refused.value.path is None


def test_strict_refuses_integers_the_standard_library_cannot_convert() -> None:
    with pytest.raises(codec.Unacceptable) as refused:
        codec.loads(('{"id": 1, "n": [' + "7" * 5000 + "]}").encode(), strict=True)
    assert (refused.value.problem, refused.value.path) == ("long-integer", ("n", 0))
    assert refused.value.document["id"] == 1
    exact = int("7" * codec.MAX_INT_DIGITS)
    assert codec.loads(f"[-{exact}]".encode(), strict=True) == [-exact]


@given(json_values)
def test_strict_reads_every_acceptable_value_exactly(value: object) -> None:
    """Finite numbers, valid Unicode and shallow nesting pass strict loads untouched."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a raw lone surrogate: such bytes are not UTF-8, so not JSON text at all
        with pytest.raises(ValueError):
            codec.loads(text.encode("utf-8", "surrogatepass"), strict=True)
        return
    assert json.dumps(codec.loads(text.encode(), strict=True)) == json.dumps(value)
