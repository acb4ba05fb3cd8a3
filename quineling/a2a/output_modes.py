"""``acceptedOutputModes``: which renderings of a result a send gets (docs/decisions/, "Output modes").

A result is the runtime's JSON (``application/json``, a data part) and can also be given as a short human
summary (``text/plain``, a text part). A send that names no modes gets the JSON; one that names modes gets
each named one this server can produce, JSON first (clients read the first part); one that names only modes
it cannot produce is refused with ContentTypeNotSupported, as the specification says, before anything runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from quineling.a2a.card import JSON_MODE, TEXT_MODE
from quineling.a2a.errors import ContentTypeNotSupportedError, InvalidParamsError
from stores.jsontypes import JSON

DEFAULT: frozenset[str] = frozenset({JSON_MODE})
_PRODUCIBLE = (JSON_MODE, TEXT_MODE)
_SUMMARY_FACTS = 6  # scalar facts of the result named in a summary, at most
_FACT_CHARS = 72


def accepted(value: Any) -> frozenset[str]:
    """The renderings a send's ``configuration.acceptedOutputModes`` asks for; wildcards (``*/*``,
    ``text/*``) and media-type parameters are understood."""
    if value is None:
        return DEFAULT
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidParamsError("configuration.acceptedOutputModes must be an array of strings")
    if not value:
        return DEFAULT
    chosen = {mode for item in value for mode in _matching(item)}
    if not chosen:
        raise ContentTypeNotSupportedError(
            f"None of acceptedOutputModes {value} can be produced; this agent answers with "
            f"{' or '.join(_PRODUCIBLE)}",
            metadata={"supportedOutputModes": ",".join(_PRODUCIBLE)},
        )
    return frozenset(chosen)


def _matching(item: str) -> list[str]:
    wanted = item.split(";")[0].strip().lower()
    if wanted == "*/*":
        return [JSON_MODE]  # anything goes: the default rendering
    kind, _, sub = wanted.partition("/")
    return [mode for mode in _PRODUCIBLE if mode == wanted or (sub == "*" and mode.startswith(kind + "/"))]


def result_parts(outcome: JSON, modes: frozenset[str]) -> list[JSON]:
    """The result artifact's parts: the JSON result and/or its summary, as ``modes`` ask."""
    parts: list[JSON] = []
    if JSON_MODE in modes:
        parts.append({"data": outcome, "mediaType": JSON_MODE})
    if TEXT_MODE in modes:
        parts.append({"text": summary(outcome), "mediaType": TEXT_MODE})
    return parts


def summary(outcome: JSON) -> str:
    """One line for a person: the operation, the result's status and its first few scalar facts (one level
    deep), e.g. ``create: created (artifact.id: sha256:…, total: 29)``."""
    operation = outcome.get("operation")
    result = outcome.get("result")
    status = result.get("status") if isinstance(result, dict) else None
    head = f"{operation if isinstance(operation, str) else 'request'}: "
    head += status if isinstance(status, str) else "completed"
    facts = list(_facts(result, ""))[:_SUMMARY_FACTS] if isinstance(result, dict) else []
    return head + (f" ({', '.join(facts)})" if facts else "")


def _facts(value: dict[str, Any], prefix: str) -> Iterator[str]:
    for key, item in value.items():
        if not prefix and key == "status":
            continue
        name = prefix + key
        if isinstance(item, bool):
            yield f"{name}: {str(item).lower()}"
        elif isinstance(item, int | float | str):
            text = " ".join(str(item).split())  # one line, whatever the value holds
            yield f"{name}: {text if len(text) <= _FACT_CHARS else text[: _FACT_CHARS - 1] + '…'}"
        elif isinstance(item, list) and item:
            yield f"{name}: {len(item)} item{'' if len(item) == 1 else 's'}"
        elif isinstance(item, dict) and not prefix:
            yield from _facts(item, name + ".")
