"""Traits from a creation seed: documented, deterministic, in range."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quineling.runtime.program import TRAITS
from quineling.runtime.traits import traits_from_seed


def test_known_values() -> None:
    assert traits_from_seed(0) == {
        "length": 806,
        "girth": 644,
        "curl": -32,
        "hue": -862,
        "gait": -244,
        "temper": 707,
    }
    assert traits_from_seed(4294967295) == {
        "length": 167, "girth": -359, "curl": -147, "hue": -60, "gait": -510, "temper": 393,
    }  # fmt: skip


@given(st.integers(0, 2**32 - 1))
def test_matches_the_documented_function(seed: int) -> None:
    digest = hashlib.sha256(b"quineling-traits:" + seed.to_bytes(4, "big")).digest()
    expected = {
        t: int.from_bytes(digest[2 * i : 2 * i + 2], "big") * 2001 // 65536 - 1000
        for i, t in enumerate(TRAITS)
    }
    traits = traits_from_seed(seed)
    assert traits == expected
    assert list(traits) == list(TRAITS)
    assert all(-1000 <= v <= 1000 for v in traits.values())


def test_different_seeds_differ() -> None:
    assert len({tuple(traits_from_seed(s).values()) for s in range(50)}) == 50


@pytest.mark.parametrize("seed", [-1, 2**32, True, 1.0, "1"])
def test_non_uint32_seed_is_rejected(seed: object) -> None:
    with pytest.raises(ValueError):
        traits_from_seed(seed)  # type: ignore[arg-type]
