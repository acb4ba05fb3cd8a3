from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quineling.runtime.units import MAX_POWER, canonical_unit, parse_unit, unit_power, unit_product


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, None),
        ("", None),
        ("credits", "credits"),
        ("m^2", "m^2"),
        ("m^1", "m"),
        ("s^-1*m", "m*s^-1"),
        ("m*s^-1", "m*s^-1"),
        ("m*m", "m^2"),
        ("m*m^-1", None),
        ("kg*m^2*s^-2", "kg*m^2*s^-2"),
        ("s^-2*m^2*kg", "kg*m^2*s^-2"),
        ("m^+2", "m^2"),
        ("unit_2", "unit_2"),
        ("m^16", "m^16"),
        ("m^-16", "m^-16"),
    ],
)
def test_canonical_spelling(text: str | None, expected: str | None) -> None:
    assert canonical_unit(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Credits",
        "m s",
        "m/s",
        "m^0",
        "m^17",
        "m^-17",
        "m^1.5",
        "m^",
        "*m",
        "m*",
        "m**s",
        "2m",
        "_m",
        "a" * 33,
        "m^8*m^9",
        " m",
        "x" * 300,
    ],
)
def test_bad_units_raise(text: str) -> None:
    with pytest.raises(ValueError):
        canonical_unit(text)


def test_non_string_unit_raises() -> None:
    with pytest.raises(ValueError):
        canonical_unit(3)  # type: ignore[arg-type]


def test_product_and_power() -> None:
    assert unit_product("m", "s^-1") == "m*s^-1"
    assert unit_product("m", "m^-1") is None
    assert unit_product(None, None) is None
    assert unit_product(None, "credits") == "credits"
    assert unit_power("m*s^-1", 2) == "m^2*s^-2"
    assert unit_power("credits", 0) is None
    assert unit_power(None, 5) is None
    assert unit_power("m", -1) == "m^-1"


def test_power_overflow_raises() -> None:
    assert unit_power("m^8", 2) == "m^16"
    with pytest.raises(ValueError):
        unit_power("m^9", 2)
    with pytest.raises(ValueError):
        unit_product("m^16", "m")
    with pytest.raises(ValueError):
        unit_power("m", True)  # type: ignore[arg-type]


_bases = st.sampled_from(["a", "credits", "kg", "m", "s", "unit_2"])
_powers = st.integers(-4, 4).filter(bool)
_units = st.lists(st.tuples(_bases, _powers), max_size=4)  # |sum of powers| <= 16


def _spell(factors: list[tuple[str, int]]) -> str:
    return "*".join(b if p == 1 else f"{b}^{p}" for b, p in factors)


@given(_units)
def test_canonical_is_idempotent_and_order_free(factors: list[tuple[str, int]]) -> None:
    text = _spell(factors)
    canonical = canonical_unit(text)
    assert canonical_unit(canonical) == canonical
    assert canonical_unit(_spell(list(reversed(factors)))) == canonical
    if canonical is not None:
        bases = [f.split("^")[0] for f in canonical.split("*")]
        assert bases == sorted(set(bases))
        assert all(abs(p) <= MAX_POWER and p != 0 for p in parse_unit(canonical).values())


@given(_units, _units)
def test_product_matches_concatenation(a: list[tuple[str, int]], b: list[tuple[str, int]]) -> None:
    try:
        expected = canonical_unit(_spell(a + b))
    except ValueError:  # some combined power exceeds 16: the product must refuse too
        with pytest.raises(ValueError):
            unit_product(_spell(a), _spell(b))
        return
    assert unit_product(_spell(a), _spell(b)) == expected
    assert unit_product(_spell(b), _spell(a)) == expected
