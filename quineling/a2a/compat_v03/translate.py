"""v0.3 ⇄ 1.0 object translators (docs/compat-v03.md): pure functions over JSON dicts.

``*_to_v1`` read v0.3 JSON (from a legacy client) and raise :class:`InvalidParamsError` on a shape that cannot
be translated; fields that merely fail 1.0 validation (a missing ``messageId``…) are passed on for the 1.0
service to judge, so both generations get the same verdicts. ``*_to_v03`` render the 1.0 service's output for
a legacy client. Of these objects a legacy client only ever sends messages (and their parts), so only those
have a ``*_to_v1``; tasks, statuses, artifacts and stream events only travel towards the client. No function
mutates its input or returns an alias of it.
"""

from __future__ import annotations

import copy
from typing import Any

from quineling.a2a.compat_v03._shape import (
    check_kind,
    copy_nonempty,
    copy_present,
    invalid,
    require_array,
    require_object,
)
from quineling.a2a.errors import A2AError, InternalError
from quineling.protocol.v03 import (
    DATA_PART_COMPAT,
    FILE_CONTENT_TO_V03,
    FILE_CONTENT_TO_V1,
    PART_KINDS,
    ROLES_TO_V1,
    TERMINAL_V03_STATES,
    file_labels_to_v03,
    file_labels_to_v1,
    is_user_role,
    state_to_v03,
)
from stores.jsontypes import JSON as Json

V03_EXTENDED_CARD_NOT_CONFIGURED = "Authenticated Extended Card not configured"


# --- enums ---------------------------------------------------------------------------------------------


def role_to_v1(role: Any, path: str = "message.role") -> str:
    if not isinstance(role, str) or role not in ROLES_TO_V1:  # a list or object is unhashable
        raise invalid(path, "must be 'user' or 'agent'")
    return ROLES_TO_V1[role]


def role_to_v03(role: Any) -> str:
    return "user" if is_user_role(role) else "agent"


def is_final_v03(state: str) -> bool:
    return state in TERMINAL_V03_STATES


# --- parts ---------------------------------------------------------------------------------------------


def _infer_part_kind(part: Json) -> Any:
    """Tolerate a v0.3 part without ``kind`` when its content member says what it is."""
    found = [kind for kind in PART_KINDS if kind in part]
    return found[0] if len(found) == 1 else None


def _file_to_v1(file: Json, path: str) -> Json:
    content = [name for name in FILE_CONTENT_TO_V1 if file.get(name) is not None]
    if len(content) != 1:
        raise invalid(path, "must have exactly one of bytes or uri")
    name = content[0]
    if not isinstance(file[name], str):
        raise invalid(f"{path}.{name}", "must be a string")
    return {FILE_CONTENT_TO_V1[name]: file[name], **file_labels_to_v1(file)}


def part_to_v1(part: Any, path: str = "part") -> Json:
    part = require_object(part, path)
    kind = part.get("kind") or _infer_part_kind(part)
    metadata = copy.deepcopy(require_object(part.get("metadata") or {}, f"{path}.metadata"))
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise invalid(f"{path}.text", "must be a string")
        out: Json = {"text": part["text"]}
    elif kind == "file":
        out = _file_to_v1(require_object(part.get("file"), f"{path}.file"), f"{path}.file")
    elif kind == "data":
        if part.get("data") is None:
            raise invalid(f"{path}.data", "is required")
        data = copy.deepcopy(part["data"])
        if metadata.get(DATA_PART_COMPAT) is True and isinstance(data, dict) and "value" in data:
            data = data["value"]  # undo the wrapping done by part_to_v03
            del metadata[DATA_PART_COMPAT]
        out = {"data": data}
    else:
        raise invalid(f"{path}.kind", "must be 'text', 'file' or 'data'")
    if metadata:
        out["metadata"] = metadata
    return out


def part_to_v03(part: Json) -> Json:
    metadata = copy.deepcopy(part.get("metadata")) or {}
    if part.get("text") is not None:
        out: Json = {"kind": "text", "text": part["text"]}
    elif part.get("raw") is not None or part.get("url") is not None:
        member = "raw" if part.get("raw") is not None else "url"
        file: Json = {FILE_CONTENT_TO_V03[member]: part[member], **file_labels_to_v03(part)}
        out = {"kind": "file", "file": file}
    elif "data" in part:
        data = copy.deepcopy(part["data"])
        if not isinstance(data, dict):
            # v0.3 data must be an object: wrap, and flag it so a v0.3→1.0 hop can unwrap (JS and PY agree).
            data = {"value": data}
            metadata[DATA_PART_COMPAT] = True
        out = {"kind": "data", "data": data}
    else:
        raise InternalError("A part with no content cannot be expressed in v0.3")
    if metadata:
        out["metadata"] = metadata
    return out


def _parts_to_v1(parts: Any, path: str) -> list[Json]:
    return [part_to_v1(p, f"{path}[{i}]") for i, p in enumerate(require_array(parts, path))]


# --- messages, artifacts, tasks ------------------------------------------------------------------------

_MESSAGE_EXTRAS = ("metadata", "extensions", "referenceTaskIds")


def message_to_v1(message: Any, path: str = "message") -> Json:
    message = require_object(message, path)
    check_kind(message, "message", path)
    out = copy_present(message, {}, "messageId", "contextId", "taskId")
    if message.get("role") is not None:  # a missing role is the executor's to reject, as in 1.0
        out["role"] = role_to_v1(message["role"], f"{path}.role")
    if message.get("parts") is not None:
        out["parts"] = _parts_to_v1(message["parts"], f"{path}.parts")
    if message.get("metadata") is not None:  # judged like 1.0's, not dropped when empty-ish
        require_object(message["metadata"], f"{path}.metadata")
    return copy_nonempty(message, out, *_MESSAGE_EXTRAS)


def message_to_v03(message: Json) -> Json:
    out: Json = {
        "kind": "message",
        "messageId": message.get("messageId", ""),
        "role": role_to_v03(message.get("role")),
        "parts": [part_to_v03(p) for p in message.get("parts") or []],
    }
    copy_nonempty(message, out, "contextId", "taskId")
    return copy_nonempty(message, out, *_MESSAGE_EXTRAS)


_ARTIFACT_FIELDS = ("name", "description", "metadata", "extensions")


def artifact_to_v03(artifact: Json) -> Json:
    out: Json = {
        "artifactId": artifact.get("artifactId", ""),
        "parts": [part_to_v03(p) for p in artifact.get("parts") or []],
    }
    return copy_nonempty(artifact, out, *_ARTIFACT_FIELDS)


def status_to_v03(status: Json) -> Json:
    out: Json = {"state": state_to_v03(status.get("state"))}
    if status.get("message"):
        out["message"] = message_to_v03(status["message"])
    return copy_present(status, out, "timestamp")


def task_to_v03(task: Json) -> Json:
    out: Json = {
        "kind": "task",
        "id": task.get("id", ""),
        "contextId": task.get("contextId", ""),
        "status": status_to_v03(task.get("status") or {}),
    }
    if task.get("artifacts"):
        out["artifacts"] = [artifact_to_v03(a) for a in task["artifacts"]]
    if task.get("history"):
        out["history"] = [message_to_v03(m) for m in task["history"]]
    return copy_nonempty(task, out, "metadata")


# --- stream events -------------------------------------------------------------------------------------


def status_update_to_v03(event: Json) -> Json:
    status = status_to_v03(event.get("status") or {})
    out: Json = {
        "kind": "status-update",
        "taskId": event.get("taskId", ""),
        "contextId": event.get("contextId", ""),
        "status": status,
        "final": is_final_v03(status["state"]),
    }
    return copy_nonempty(event, out, "metadata")


def artifact_update_to_v03(event: Json) -> Json:
    out: Json = {
        "kind": "artifact-update",
        "taskId": event.get("taskId", ""),
        "contextId": event.get("contextId", ""),
        "artifact": artifact_to_v03(event.get("artifact") or {}),
    }
    return copy_present(event, out, "append", "lastChunk", "metadata")


_TO_V03 = {
    "task": task_to_v03,
    "message": message_to_v03,
    "statusUpdate": status_update_to_v03,
    "artifactUpdate": artifact_update_to_v03,
}


def stream_response_to_v03(response: Json) -> Json:
    """A 1.0 StreamResponse (or SendMessageResponse, its subset) → the bare v0.3 object with ``kind``."""
    for member, translate in _TO_V03.items():
        if response.get(member) is not None:
            return translate(response[member])
    raise InternalError("An empty stream response cannot be expressed in v0.3")


# --- errors --------------------------------------------------------------------------------------------


def error_to_v03(exc: A2AError) -> Json:
    """A v0.3 JSON-RPC ``error`` member: ``{code, message}`` only; v0.3 has no ErrorInfo ``data``."""
    if exc.code == -32007:  # v0.3 names it AuthenticatedExtendedCardNotConfiguredError
        return {"code": exc.code, "message": V03_EXTENDED_CARD_NOT_CONFIGURED}
    message = getattr(exc, "message", None) or str(exc) or exc.default_message
    return {"code": exc.code, "message": message}
