"""Genomes: lossless three-byte packing of source bytes, strictly verified on the way back."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quineling.runtime.canonical import sha256_hex
from quineling.runtime.errors import QuinelingError
from quineling.runtime.genome import colors_of, decode_genome, harmonics_of

SOURCE = b"quineling 1\nbody repeats=1 length=0 girth=0 curl=0 hue=0 gait=0 temper=0\n"


@given(st.binary(max_size=600))
def test_harmonics_round_trip(data: bytes) -> None:
    genome = harmonics_of(data)
    assert genome["length"] == len(data)
    assert genome["sourceHash"] == sha256_hex(data)
    assert [p["k"] for p in genome["partials"]] == list(range(1, -(-len(data) // 3) + 1))
    assert all(0 <= p["a"] <= 0xFFFFFF for p in genome["partials"])
    assert decode_genome("harmonics", genome, "harmonics") == data


@given(st.binary(max_size=600))
def test_colors_round_trip(data: bytes) -> None:
    genome = colors_of(data)
    assert len(genome["swatches"]) == -(-len(data) // 3)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", s) for s in genome["swatches"])
    assert decode_genome("colors", genome, "colors") == data


def test_example_source_fills_a_partial_last_group() -> None:
    assert len(SOURCE) == 73  # the length corruptions below rely on 73 = 24 * 3 + 1
    assert colors_of(SOURCE)["swatches"][1] == "#6e656c"


def test_known_packing() -> None:
    assert harmonics_of(b"abcd") == {
        "format": "quineling-harmonics",
        "version": 1,
        "length": 4,
        "sourceHash": sha256_hex(b"abcd"),
        "partials": [{"k": 1, "a": 0x616263}, {"k": 2, "a": 0x640000}],
    }
    assert colors_of(b"abcd")["swatches"] == ["#616263", "#640000"]
    assert colors_of(b"\xff\x00\x10")["swatches"] == ["#ff0010"]
    assert colors_of(b"")["swatches"] == [] and colors_of(b"")["length"] == 0


def test_integral_floats_are_accepted() -> None:
    genome = harmonics_of(SOURCE)
    genome["version"] = 1.0
    genome["length"] = float(genome["length"])
    genome["partials"] = [{"k": float(p["k"]), "a": float(p["a"])} for p in genome["partials"]]
    assert decode_genome("harmonics", genome, "harmonics") == SOURCE


Mutation = Callable[[dict[str, Any]], None]


def _set(key: str, value: Any) -> Mutation:
    return lambda g: g.__setitem__(key, value)


def _partial(index: int, key: str, value: Any) -> Mutation:
    return lambda g: g["partials"][index].__setitem__(key, value)


def _swatch(index: int, value: Any) -> Mutation:
    return lambda g: g["swatches"].__setitem__(index, value)


HARMONIC_CORRUPTIONS: dict[str, tuple[Mutation, str]] = {
    "flipped amplitude": (_partial(2, "a", 0x010203), "harmonics.sourceHash"),
    "length too long": (lambda g: g.__setitem__("length", g["length"] + 3), "harmonics.partials"),
    # 73 bytes fill 25 groups; 74 still do (the hash catches it), 72 need only 24.
    "length one long": (lambda g: g.__setitem__("length", g["length"] + 1), "harmonics.sourceHash"),
    "length one short": (lambda g: g.__setitem__("length", g["length"] - 1), "harmonics.partials"),
    "wrong hash": (_set("sourceHash", sha256_hex(b"other")), "harmonics.sourceHash"),
    "uppercase hash": (
        lambda g: g.__setitem__("sourceHash", g["sourceHash"].upper()),
        "harmonics.sourceHash",
    ),
    "extra field": (_set("extra", 1), "harmonics.extra"),
    "extra partial field": (_partial(0, "phase", 0), "harmonics.partials[0].phase"),
    "missing partials": (lambda g: g.pop("partials"), "harmonics.partials"),
    "missing a": (lambda g: g["partials"][1].pop("a"), "harmonics.partials[1].a"),
    "a too large": (_partial(0, "a", 16777216), "harmonics.partials[0].a"),
    "a negative": (_partial(0, "a", -1), "harmonics.partials[0].a"),
    "a fractional": (_partial(0, "a", 1.5), "harmonics.partials[0].a"),
    "a bool": (_partial(0, "a", True), "harmonics.partials[0].a"),
    "a string": (_partial(0, "a", "7"), "harmonics.partials[0].a"),
    "a nan": (_partial(0, "a", float("nan")), "harmonics.partials[0].a"),
    "k from zero": (_partial(0, "k", 0), "harmonics.partials[0].k"),
    "k out of order": (_partial(1, "k", 3), "harmonics.partials[1].k"),
    "wrong format": (_set("format", "quineling-colors"), "harmonics.format"),
    "wrong version": (_set("version", 2), "harmonics.version"),
    "partials not a list": (_set("partials", {}), "harmonics.partials"),
    "partial not an object": (lambda g: g["partials"].__setitem__(0, 5), "harmonics.partials[0]"),
    "length negative": (_set("length", -1), "harmonics.length"),
    "length huge": (_set("length", 1 << 21), "harmonics.length"),
    "length string": (_set("length", "24"), "harmonics.length"),
}

COLOR_CORRUPTIONS: dict[str, tuple[Mutation, str]] = {
    "flipped swatch": (_swatch(3, "#000000"), "colors.sourceHash"),
    "uppercase hex": (_swatch(1, "#6E656C"), "colors.swatches[1]"),  # "nel" is #6e656c
    "no hash sign": (_swatch(0, "717569"), "colors.swatches[0]"),
    "short swatch": (_swatch(0, "#fff"), "colors.swatches[0]"),
    "long swatch": (_swatch(0, "#7175690"), "colors.swatches[0]"),
    "number swatch": (_swatch(0, 0x717569), "colors.swatches[0]"),
    "extra field": (_set("partials", []), "colors.partials"),
    "dropped swatch": (lambda g: g["swatches"].pop(), "colors.swatches"),
    "extra swatch": (lambda g: g["swatches"].append("#000000"), "colors.swatches"),
    "wrong format": (_set("format", "quineling-harmonics"), "colors.format"),
}


@pytest.mark.parametrize("name", sorted(HARMONIC_CORRUPTIONS))
def test_corrupted_harmonics_are_invalid(name: str) -> None:
    mutate, path = HARMONIC_CORRUPTIONS[name]
    genome = copy.deepcopy(harmonics_of(SOURCE))
    mutate(genome)
    with pytest.raises(QuinelingError) as info:
        decode_genome("harmonics", genome, "harmonics")
    assert (info.value.code, info.value.path) == ("invalid-genome", path)


@pytest.mark.parametrize("name", sorted(COLOR_CORRUPTIONS))
def test_corrupted_colors_are_invalid(name: str) -> None:
    mutate, path = COLOR_CORRUPTIONS[name]
    genome = copy.deepcopy(colors_of(SOURCE))
    mutate(genome)
    with pytest.raises(QuinelingError) as info:
        decode_genome("colors", genome, "colors")
    assert (info.value.code, info.value.path) == ("invalid-genome", path)


def test_nonzero_padding_is_invalid_even_with_a_matching_hash() -> None:
    genome = colors_of(b"ab")
    assert genome["swatches"] == ["#616200"]
    genome["swatches"] = ["#616201"]
    with pytest.raises(QuinelingError) as info:
        decode_genome("colors", genome, "recovery.colors")
    assert (info.value.code, info.value.path) == ("invalid-genome", "recovery.colors.swatches[0]")
    assert "padding" in info.value.message


@pytest.mark.parametrize("value", [None, [], "genome", 3])
def test_non_object_genome_is_invalid(value: Any) -> None:
    with pytest.raises(QuinelingError) as info:
        decode_genome("harmonics", value, "harmonics")
    assert (info.value.code, info.value.path) == ("invalid-genome", "harmonics")


def test_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        decode_genome("dna", harmonics_of(b"x"), "dna")
