"""JSON shape helpers shared by the compat translators: null means absent, problems are InvalidParams."""

from __future__ import annotations

import copy
from typing import Any

from quineling.a2a.errors import InvalidParamsError
from stores.jsontypes import JSON as Json


def invalid(path: str, problem: str) -> InvalidParamsError:
    return InvalidParamsError(f"{path} {problem}")


def require_object(value: Any, path: str) -> Json:
    if not isinstance(value, dict):
        raise invalid(path, "must be an object")
    return value


def require_array(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise invalid(path, "must be an array")
    return value


def copy_present(src: Json, dst: Json, *names: str) -> Json:
    """Copy the named fields that are present and not null (null means absent)."""
    for name in names:
        if src.get(name) is not None:
            dst[name] = copy.deepcopy(src[name])
    return dst


def copy_nonempty(src: Json, dst: Json, *names: str) -> Json:
    """Like :func:`copy_present`, but also skip ``""``/``[]``/``{}`` (1.0 omits default values)."""
    for name in names:
        value = src.get(name)
        if value is not None and value != "" and value != [] and value != {}:
            dst[name] = copy.deepcopy(value)
    return dst


def check_kind(obj: Json, kind: str, path: str) -> None:
    if obj.get("kind") is not None and obj["kind"] != kind:
        raise invalid(f"{path}.kind", f"must be {kind!r}")
