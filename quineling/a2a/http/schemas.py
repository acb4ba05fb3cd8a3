"""marshmallow schemas for the HTTP+JSON binding: light wire checks at the boundary plus the generated
OpenAPI document. Deep validation (camelCase *or* snake_case names, enums, oneofs) is the service's, so the
request schemas pass unknown keys through (``INCLUDE``) and treat ``null`` as absent (docs/decisions/0002-wire-shapes.md)."""

from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, fields


class _Request(Schema):
    class Meta:
        unknown = INCLUDE


def _opt(field_cls: type[fields.Field[Any]], **kwargs: object) -> fields.Field[Any]:
    # The views read the body and query themselves (the service validates deeply), so nothing needs a
    # load default; ``null`` is accepted as absent.
    return field_cls(allow_none=True, **kwargs)  # type: ignore[arg-type]


_TENANT = {"description": "The tenant to act in; a tenant in the path wins over this one"}
_HISTORY = {
    "description": "How many of the most recent history messages to return: 0 returns none, values above "
    "1000 are cut to 1000; absent returns the whole history",
    "minimum": 0,
}


class SendMessageRequestSchema(_Request):
    message = fields.Dict(
        required=True,
        error_messages={
            "required": "message is required",
            "null": "message must be an object",
            "invalid": "message must be an object",
        },
        metadata={
            "description": "The user message: messageId (required), role ROLE_USER, exactly one part (a text "
            "part holding a thought, or a JSON data part holding a runtime request), and contextId/taskId "
            "to continue a conversation or a task"
        },
    )
    configuration = _opt(
        fields.Dict,
        metadata={
            "description": "historyLength (0 or more; above 1000 is cut to 1000), returnImmediately, "
            "acceptedOutputModes (application/json, text/plain), ifGenerationMatch (draft A2A 1.1: a "
            "follow-up runs only if its task is at this generation; else 409 TASK_GENERATION_MISMATCH)"
        },
    )
    metadata = _opt(fields.Dict)
    tenant = _opt(fields.String, metadata=_TENANT)


class GetTaskQuerySchema(_Request):
    historyLength = _opt(fields.Integer, metadata=_HISTORY)
    currentGeneration = _opt(
        fields.Integer,
        metadata={
            "description": "Long-poll: answer once the task's generation (metadata.generation) is above this, "
            "or with the task as it is after at most 30 s",
            "minimum": 0,
        },
    )
    tenant = _opt(fields.String, metadata=_TENANT)


class ListTasksQuerySchema(_Request):
    contextId = _opt(fields.String, metadata={"description": "Only tasks of this context"})
    status = _opt(
        fields.String, metadata={"description": "Only tasks in this state: a TaskState name or number"}
    )
    pageSize = _opt(
        fields.Integer,
        metadata={"description": "Tasks per page", "minimum": 1, "maximum": 100, "default": 50},
    )
    pageToken = _opt(fields.String, metadata={"description": "nextPageToken of the previous page"})
    historyLength = _opt(fields.Integer, metadata=_HISTORY)
    statusTimestampAfter = _opt(
        fields.String,
        metadata={
            "description": "Only tasks whose status changed at or after this RFC 3339 time",
            "format": "date-time",
        },
    )
    includeArtifacts = _opt(
        fields.Boolean, metadata={"description": "Include each task's artifacts", "default": False}
    )
    tenant = _opt(fields.String, metadata=_TENANT)


class CancelTaskRequestSchema(_Request):
    metadata = _opt(fields.Dict)
    tenant = _opt(fields.String, metadata=_TENANT)


class PushConfigRequestSchema(_Request):
    id = _opt(fields.String)
    url = _opt(fields.String)
    token = _opt(fields.String)
    authentication = _opt(fields.Dict)


class PushConfigListQuerySchema(_Request):
    pageSize = _opt(fields.Integer)
    pageToken = _opt(fields.String)


# --- responses (documentation only: views return already-rendered 1.0 JSON) ------------------------------


class TaskStatusSchema(Schema):
    state = fields.String(required=True)
    message = fields.Dict()
    timestamp = fields.String()


class TaskSchema(Schema):
    id = fields.String(required=True)
    contextId = fields.String()
    status = fields.Nested(TaskStatusSchema, required=True)
    artifacts = fields.List(fields.Dict())
    history = fields.List(fields.Dict())
    metadata = fields.Dict(
        metadata={
            "description": "`generation`: how many times the task has changed (the long-poll's "
            "`currentGeneration` waits for a higher one)",
            "example": {"generation": 3},
        }
    )


class SendMessageResponseSchema(Schema):
    task = fields.Nested(TaskSchema)
    message = fields.Dict()


class ListTasksResponseSchema(Schema):
    tasks = fields.List(fields.Nested(TaskSchema), required=True)
    nextPageToken = fields.String(required=True)
    pageSize = fields.Integer(required=True)
    totalSize = fields.Integer(required=True)


class PushConfigSchema(Schema):
    id = fields.String()
    taskId = fields.String()
    url = fields.String()


class StreamResponseSchema(Schema):
    task = fields.Nested(TaskSchema)
    message = fields.Dict()
    statusUpdate = fields.Dict()
    artifactUpdate = fields.Dict()
