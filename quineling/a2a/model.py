"""1.0 JSON shapes: normalising incoming messages and presenting stored tasks (docs/decisions/0002-wire-shapes.md).

Incoming messages are rewritten to the canonical 1.0 form (camelCase, enum names, no nulls, no unknown
fields) before they are stored, so nothing we later echo can carry snake_case or v0.3 fields.
"""

from __future__ import annotations

import base64
import binascii
import copy
import uuid
from typing import Any

from quineling.a2a import wire
from quineling.a2a.errors import InvalidParamsError

PART_CONTENT = ("text", "raw", "url", "data")
RESULT_ARTIFACT_ID = "quineling-result"


def new_id() -> str:
    return str(uuid.uuid4())


def _string_list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParamsError(f"{what} must be an array of strings")
    return list(value)


def _raw(value: Any, what: str) -> str:
    """Accept standard or URL-safe base64, padded or not; emit standard padded base64."""
    if not isinstance(value, str):
        raise InvalidParamsError(f"{what} must be base64")
    text = value.strip().replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidParamsError(f"{what} must be base64") from None
    return base64.b64encode(decoded).decode("ascii")


def normalize_part(part: Any, where: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise InvalidParamsError(f"{where} must be an object")
    present = [name for name in PART_CONTENT if part.get(name) is not None]
    if len(present) != 1:
        raise InvalidParamsError(f"{where} must have exactly one of text, raw, url or data")
    kind = present[0]
    value = part[kind]
    if kind in ("text", "url") and not isinstance(value, str):
        raise InvalidParamsError(f"{where}.{kind} must be a string")
    out: dict[str, Any] = {kind: _raw(value, f"{where}.raw") if kind == "raw" else copy.deepcopy(value)}
    metadata = wire.metadata(part, f"{where}.metadata")
    if metadata:
        out["metadata"] = copy.deepcopy(metadata)
    for name in ("filename", "mediaType"):
        text = wire.string(part, name)
        if text:
            out[name] = text
    return out


def normalize_message(message: Any) -> dict[str, Any]:
    """The canonical 1.0 form of an incoming message. Wire errors raise InvalidParams; semantic envelope
    problems (role, part kinds and counts) are left for the executor to judge."""
    if not isinstance(message, dict):
        raise InvalidParamsError("message is required and must be an object")
    out: dict[str, Any] = {"messageId": wire.string(message, "messageId", required=True)}
    for name in ("contextId", "taskId"):
        value = wire.string(message, name)
        if value:
            out[name] = value
    role = wire.field(message, "role")
    out["role"] = "ROLE_UNSPECIFIED" if role is None else wire.enum(role, wire.ROLES, "message.role")
    parts = wire.field(message, "parts")
    if parts is None:
        parts = []
    if not isinstance(parts, list):
        raise InvalidParamsError("message.parts must be an array")
    out["parts"] = [normalize_part(p, f"message.parts[{i}]") for i, p in enumerate(parts)]
    metadata = wire.metadata(message, "message.metadata")
    if metadata:
        out["metadata"] = copy.deepcopy(metadata)
    for name in ("extensions", "referenceTaskIds"):
        values = _string_list(wire.field(message, name), f"message.{name}")
        if values:
            out[name] = values
    if out["role"] == "ROLE_UNSPECIFIED":
        del out["role"]  # default-valued enums are omitted on output, as ProtoJSON does
    if not out["parts"]:
        del out["parts"]
    return out


def agent_message(task: dict[str, Any], text: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": new_id(),
        "role": "ROLE_AGENT",
        "contextId": task["contextId"],
        "taskId": task["id"],
        "parts": [{"text": text}],
    }
    if metadata:
        message["metadata"] = metadata
    return message


def present_task(
    task: dict[str, Any], history_length: int | None = None, *, include_artifacts: bool = True
) -> dict[str, Any]:
    """A copy of a stored task shaped for a response: ``historyLength`` (the newest messages; 0 = none) and ``includeArtifacts``."""
    out = dict(task)  # shallow: nothing below mutates a nested value
    history = out.pop("history", None) or []
    if history_length is not None:
        history = history[-history_length:] if history_length > 0 else []
    if history:
        out["history"] = history
    if not include_artifacts or not out.get("artifacts"):
        out.pop("artifacts", None)
    return out
