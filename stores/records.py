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


def first_event_number(generation: int | None, count: int) -> int | None:
    """The number a save's first event gets when its task's generation is known (see TaskStore, "Event
    log"); ``None`` when it follows the log's newest."""
    if generation is None:
        return None
    first = generation - count + 1
    if count and first < 1:
        raise ValueError(f"a task at generation {generation} cannot have logged {count} events")
    return first
