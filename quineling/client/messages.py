"""Building the messages a client sends (A2A 1.0 shape, ``ROLE_USER``, a fresh ``messageId``)."""

from __future__ import annotations

import uuid
from typing import Any

JSONDict = dict[str, Any]


def message(
    parts: list[JSONDict],
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    metadata: JSONDict | None = None,
    reference_task_ids: list[str] | None = None,
    message_id: str | None = None,
) -> JSONDict:
    if not parts:
        raise ValueError("a message needs at least one part")
    msg: JSONDict = {"messageId": message_id or str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if context_id:
        msg["contextId"] = context_id
    if task_id:
        msg["taskId"] = task_id
    if metadata:
        msg["metadata"] = metadata
    if reference_task_ids:
        msg["referenceTaskIds"] = list(reference_task_ids)
    return msg


def text_message(
    text: str, *, context_id: str | None = None, task_id: str | None = None, metadata: JSONDict | None = None
) -> JSONDict:
    return message([{"text": text}], context_id=context_id, task_id=task_id, metadata=metadata)


def data_message(
    data: Any,
    *,
    media_type: str = "application/json",
    context_id: str | None = None,
    task_id: str | None = None,
    metadata: JSONDict | None = None,
) -> JSONDict:
    return message([{"data": data, "mediaType": media_type}], context_id=context_id, task_id=task_id,
                   metadata=metadata)  # fmt: skip
