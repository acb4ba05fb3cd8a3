"""A2A 1.0 messages to send, and the Quineling result read back out of a task, for tests over any binding."""

from __future__ import annotations

import uuid
from typing import Any

JSON = dict[str, Any]
SQUARE_SUM = "[2,3,4] | square | sum | report total"


def user_message(*parts: JSON, task_id: str | None = None, context_id: str | None = None) -> JSON:
    """A user message with a fresh id (unique across processes and runs, as a live server's store is shared)."""
    message: JSON = {"messageId": f"msg-{uuid.uuid4().hex}", "role": "ROLE_USER", "parts": list(parts)}
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    return message


def text(value: str) -> JSON:
    return {"text": value}


def data(value: JSON) -> JSON:
    return {"data": value, "mediaType": "application/json"}


def result_of(task: JSON) -> JSON:
    """The ``{operation, result}`` payload of the task's ``quineling-result`` artifact."""
    (artifact,) = [a for a in task["artifacts"] if a["artifactId"] == "quineling-result"]
    return artifact["parts"][0]["data"]


def runtime_outcome(task: JSON) -> tuple[str, Any]:
    """What ``Runtime.dispatch`` gave for the task's request: ``("error", {code, message, path})`` for a
    failed task (the error rides on its status message), otherwise ``("ok", {operation, result})``."""
    if task["status"]["state"] == "TASK_STATE_FAILED":
        return "error", task["status"]["message"]["metadata"]["quinelingError"]
    return "ok", result_of(task)
