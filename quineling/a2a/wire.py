"""Reading 1.0 request JSON (docs/decisions/0002-wire-shapes.md): camelCase or snake_case names, ``null`` = absent, enums by name or
number, RFC 3339 timestamps. Every problem is an :class:`InvalidParamsError`."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from quineling.a2a.errors import InvalidParamsError
from quineling.protocol import states

# The protocol's vocabulary, re-exported where the server's readers have always found it.
TASK_STATES = states.TASK_STATES
ROLES = states.ROLES
TERMINAL = states.TERMINAL_STATES

# Deliberate cap on historyLength so one request cannot ask us to serialise an unbounded transcript.
MAX_HISTORY_LENGTH = 1000

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


@functools.lru_cache(maxsize=256)  # field names are a small fixed set, looked up on every request
def snake(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


def field(obj: Mapping[str, Any], name: str) -> Any:
    """The value of camelCase ``name`` (or its snake_case spelling); ``None`` when absent or null."""
    value = obj.get(name)
    if value is None:
        value = obj.get(snake(name))
    return value


def require_object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidParamsError(f"{what} must be an object")
    return value


def metadata(obj: Mapping[str, Any], what: str = "metadata") -> dict[str, Any]:
    """A request's or object's ``metadata``: an object (a protobuf Struct), ``{}`` when absent."""
    return require_object(field(obj, "metadata"), what)


def string(obj: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = field(obj, name)
    if value is None or value == "":
        if required:
            raise InvalidParamsError(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise InvalidParamsError(f"{name} must be a string")
    return value


def integer(obj: Mapping[str, Any], name: str) -> int | None:
    """An int32 given as a JSON number or a decimal string (query parameters arrive as strings)."""
    value = field(obj, name)
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidParamsError(f"{name} must be an integer")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,10}", value.strip()):
        value = int(value.strip())
    if not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise InvalidParamsError(f"{name} must be an integer")
    return value


def boolean(obj: Mapping[str, Any], name: str) -> bool | None:
    value = field(obj, name)
    if value is None:
        return None
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise InvalidParamsError(f"{name} must be a boolean")
    return value


def history_length(obj: Mapping[str, Any]) -> int | None:
    value = integer(obj, "historyLength")
    if value is not None and value < 0:
        raise InvalidParamsError("historyLength must not be negative")
    return None if value is None else min(value, MAX_HISTORY_LENGTH)


def enum(value: Any, names: tuple[str, ...], what: str) -> str:
    """An enum given by name or number, returned as its name."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value in names:
        return value
    raise InvalidParamsError(f"{what} must be one of {', '.join(names)}")


def timestamp(obj: Mapping[str, Any], name: str) -> datetime | None:
    """An RFC 3339 timestamp, normalised to an aware UTC datetime."""
    value = field(obj, name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParamsError(f"{name} must be an RFC 3339 timestamp")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidParamsError(f"{name} must be an RFC 3339 timestamp") from None
    if parsed.tzinfo is None:
        raise InvalidParamsError(f"{name} must include a timezone")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+23:59 is an instant in year 0
        raise InvalidParamsError(
            f"{name} must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z "
            "(the range of a protobuf Timestamp)"
        ) from None


def now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
