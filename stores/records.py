"""How both backends encode values (compact JSON) and check the arguments every task save shares."""

from __future__ import annotations

from typing import Any

from stores import codec


def encode(value: Any) -> str:
    """Compact JSON; the stored size of a task is the UTF-8 length of this text."""
    return codec.dumps(value)


def decode(text: str | bytes) -> Any:
    return codec.loads(text)


def expected_version(value: int | None) -> int | None:
    """Validate a ``save(expect_version=…)`` argument: ``None`` or a non-negative integer."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"expect_version must be None or a non-negative integer, got {value!r}")
    return value
