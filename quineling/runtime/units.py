"""Units of measure: parsing and the one canonical spelling.

A unit is a product of base units, each raised to a non-zero integer power: ``credits``, ``m^2``,
``m*s^-1``. ``None`` means dimensionless. The canonical spelling sorts base units alphabetically, joins
them with ``*`` and writes powers as ``^n`` (``^1`` omitted); repeated bases are combined (``m*m`` →
``m^2``) and bases whose powers cancel disappear (``m*m^-1`` → dimensionless). Every power, written or
computed, stays within ``|n| <= 16``; a written ``^0`` is rejected rather than silently dropped.
"""

from __future__ import annotations

import re

MAX_POWER = 16
MAX_UNIT_CHARS = 256
NAME = r"[a-z][a-z0-9_]{0,31}"
_FACTOR = re.compile(rf"({NAME})(?:\^([+-]?[0-9]{{1,3}}))?")

Powers = dict[str, int]


def parse_unit(text: str | None) -> Powers:
    """``{base: power}`` for a unit spelling; ``{}`` for dimensionless. Raises ``ValueError``."""
    if text is None or text == "":
        return {}
    if not isinstance(text, str):
        raise ValueError("a unit must be a string")
    if len(text) > MAX_UNIT_CHARS:
        raise ValueError(f"a unit is at most {MAX_UNIT_CHARS} characters")
    powers: Powers = {}
    for factor in text.split("*"):
        match = _FACTOR.fullmatch(factor)
        if match is None:
            raise ValueError(f"{factor!r} is not a unit factor (name or name^n)")
        base, exponent = match.group(1), match.group(2)
        power = 1 if exponent is None else int(exponent)
        if power == 0 or abs(power) > MAX_POWER:
            raise ValueError(f"unit powers are non-zero integers with |n| <= {MAX_POWER}")
        powers[base] = powers.get(base, 0) + power
    return _checked(powers)


def format_unit(powers: Powers) -> str | None:
    """The canonical spelling of ``{base: power}``; ``None`` when dimensionless."""
    factors = [base if p == 1 else f"{base}^{p}" for base, p in sorted(powers.items()) if p != 0]
    return "*".join(factors) or None


def canonical_unit(text: str | None) -> str | None:
    """Canonical spelling of a unit; ``None``/``""`` → ``None``. Raises ``ValueError`` on a bad unit."""
    return format_unit(parse_unit(text))


def unit_product(a: str | None, b: str | None) -> str | None:
    """The unit of ``x * y`` where x has unit ``a`` and y has unit ``b``."""
    powers = parse_unit(a)
    for base, p in parse_unit(b).items():
        powers[base] = powers.get(base, 0) + p
    return format_unit(_checked(powers))


def unit_power(u: str | None, n: int) -> str | None:
    """The unit of ``x ** n`` where x has unit ``u``."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError("a unit power must be an integer")
    return format_unit(_checked({base: p * n for base, p in parse_unit(u).items()}))


def _checked(powers: Powers) -> Powers:
    powers = {base: p for base, p in powers.items() if p != 0}
    for base, p in powers.items():
        if abs(p) > MAX_POWER:
            raise ValueError(f"unit power {base}^{p} exceeds |n| <= {MAX_POWER}")
    return powers
