"""The JSON codec: fast compact encoding, the standard library's exactness for what orjson refuses."""

from __future__ import annotations

import json

import pytest

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
