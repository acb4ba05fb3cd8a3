"""marshmallow schemas for the HTTP+JSON binding: light wire checks at the boundary plus the generated
OpenAPI document. Deep validation (camelCase *or* snake_case names, enums, oneofs) is the service's, so the
request schemas pass unknown keys through (``INCLUDE``) and treat ``null`` as absent (docs/decisions-a2a.md, "Wire shapes")."""

from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, fields


class _Request(Schema):
    class Meta:
        unknown = INCLUDE


def _opt(field_cls: type[fields.Field[Any]], **kwargs: object) -> fields.Field[Any]:
    return field_cls(allow_none=True, load_default=None, **kwargs)  # type: ignore[arg-type]


class SendMessageRequestSchema(_Request):
    message = _opt(
        fields.Dict, metadata={"description": "Message: messageId, role, parts, contextId, taskId"}
    )
    configuration = _opt(
        fields.Dict, metadata={"description": "historyLength, returnImmediately, acceptedOutputModes"}
    )
    metadata = _opt(fields.Dict)
    tenant = _opt(fields.String)


class GetTaskQuerySchema(_Request):
    historyLength = _opt(fields.Integer, metadata={"description": "0 omits history; N keeps the last N"})


class ListTasksQuerySchema(_Request):
    contextId = _opt(fields.String)
    status = _opt(fields.String, metadata={"description": "TaskState name or number"})
    pageSize = _opt(fields.Integer, metadata={"description": "1..100, default 50"})
    pageToken = _opt(fields.String)
    historyLength = _opt(fields.Integer)
    statusTimestampAfter = _opt(fields.String, metadata={"description": "RFC 3339; inclusive"})
    includeArtifacts = _opt(fields.Boolean)


class CancelTaskRequestSchema(_Request):
    metadata = _opt(fields.Dict)


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
    metadata = fields.Dict()


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
