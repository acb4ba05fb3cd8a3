"""The OpenAPI schemas the marshmallow schemas (:mod:`quineling.a2a.http.schemas`) cannot say: what the service
really reads in a message, its parts and the send configuration, a protobuf enum, the ``A2A-Version`` values,
and one Server-Sent Event.

flask-smorest sees the message and configuration as free-form objects (the service validates them, see
quineling/a2a/wire.py and model.py). These schemas say what the service accepts, so a generated request that
matches them is accepted and one that breaks them is refused (tests/a2a/http/test_schemathesis.py checks both).
Field names are the camelCase ones; that the service also takes their snake_case spellings, and ``null`` for
an absent optional field, the document's introduction says.
"""

from __future__ import annotations

from typing import Any

from quineling.a2a.http.error_answers import ERROR_SCHEMA
from quineling.a2a.wire import ROLES

JSON = dict[str, Any]

INT32_MAX = 2**31 - 1
# An int32 may also be sent as a decimal string, as ProtoJSON allows (query values always are strings).
_DECIMAL_STRING = {"type": "string", "pattern": r"^\s*[+]?\d{1,9}\s*$"}
_BOOLEAN_STRING = {"type": "string", "pattern": "^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"}
# Standard or URL-safe base64, padded or not (model._raw): groups of four, then a tail of two or three.
_B64 = "[A-Za-z0-9+/_-]"
_BASE64_PATTERN = rf"^\s*(?:{_B64}{{4}})*(?:{_B64}{{2}}(?:==?)?|{_B64}{{3}}=?)?\s*$"
_NOT_NULL = {  # any JSON value but null
    "anyOf": [
        {"type": "object"},
        {"type": "array"},
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
    ]
}


def enum_schema(names: tuple[str, ...], *, nullable: bool) -> JSON:
    """A protobuf enum as the service reads it (wire.enum): its name, or its number as a JSON number or a
    decimal string."""
    schema: JSON = {
        "anyOf": [
            {"type": "string", "enum": [*names, *(str(i) for i in range(len(names)))]},
            {"type": "integer", "minimum": 0, "maximum": len(names) - 1},
        ]
    }
    if nullable:
        schema["nullable"] = True
    return schema


def _int32(minimum: int, description: str) -> JSON:
    return {
        "description": description,
        "nullable": True,
        "anyOf": [
            {"type": "integer", "format": "int32", "minimum": minimum, "maximum": INT32_MAX},
            _DECIMAL_STRING,
        ],
    }


def request_components() -> dict[str, JSON]:
    """The schemas of the message, its parts and the send configuration."""
    text = {"type": "string", "nullable": True}
    strings = {"type": "array", "items": {"type": "string"}, "nullable": True}
    obj = {"type": "object", "additionalProperties": {}, "nullable": True, "example": {}}
    return {
        "Part": {
            "type": "object",
            "description": "One piece of content: exactly one of `text`, `raw` (base64), `url` or `data`. This "
            "agent acts on a text part (a thought) or a JSON data part (a runtime request); a `raw` or `url` "
            "part is accepted on the wire and fails the task.",
            "properties": {
                "text": text,
                "raw": {
                    **text,
                    "format": "byte",
                    "pattern": _BASE64_PATTERN,
                    "description": "Base64, standard or URL-safe, padded or not",
                },
                "url": text,
                "data": {"nullable": True, "description": "Any JSON value"},
                "metadata": obj,
                "filename": text,
                "mediaType": {**text, "example": "application/json"},
            },
            "oneOf": [
                {"required": ["text"], "properties": {"text": {"type": "string"}}},
                {"required": ["raw"], "properties": {"raw": {"type": "string"}}},
                {"required": ["url"], "properties": {"url": {"type": "string"}}},
                {"required": ["data"], "properties": {"data": _NOT_NULL}},
            ],
        },
        "Message": {
            "type": "object",
            "description": "The user message. The agent acts on a message with role `ROLE_USER` and exactly "
            "one part; any other message is accepted on the wire and fails the task, not the request. "
            "`taskId` continues a task (404 if this tenant has no such task, 400 if it is final), "
            "`contextId` must then be the task's.",
            "required": ["messageId"],
            "properties": {
                "messageId": {"type": "string", "minLength": 1},
                "contextId": text,
                "taskId": text,
                "role": enum_schema(ROLES, nullable=True),
                "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}, "nullable": True},
                "metadata": obj,
                "extensions": strings,
                "referenceTaskIds": strings,
            },
        },
        "SendMessageConfiguration": {
            "type": "object",
            "nullable": True,
            "description": "How to answer. The work runs within the request, so `returnImmediately` changes "
            "nothing.",
            "properties": {
                "historyLength": _int32(
                    0,
                    "How many of the most recent history messages the answer keeps: 0 none, above 1000 "
                    "is cut to 1000; absent keeps all",
                ),
                "returnImmediately": {"nullable": True, "anyOf": [{"type": "boolean"}, _BOOLEAN_STRING]},
                "acceptedOutputModes": {
                    "type": "array",
                    "nullable": True,
                    "items": {"type": "string"},
                    "description": "Media types the result may come as: `application/json` (the result, the "
                    "default) and `text/plain` (a one-line summary) are produced, each named one as a part of "
                    "the `quineling-result` artifact; naming only others is 400 CONTENT_TYPE_NOT_SUPPORTED",
                },
                "ifGenerationMatch": _int32(
                    0,
                    "Draft A2A 1.1 precondition: a follow-up (`message.taskId`) runs only if the task is at this "
                    "generation (its `metadata.generation`), else 409 TASK_GENERATION_MISMATCH; ignored for a "
                    "message that creates a task",
                ),
            },
        },
    }


# Body fields that flask-smorest documents as free-form objects, and the exact schema of each.
BODY_FIELDS = {
    ("SendMessageRequest", "message"): "Message",
    ("SendMessageRequest", "configuration"): "SendMessageConfiguration",
}


def response_components() -> dict[str, JSON]:
    """The schemas nested in answers that the response schemas (quineling/a2a/http/schemas.py) leave free-form."""
    text = {"type": "string"}
    obj = {"type": "object", "additionalProperties": {}, "example": {}}
    status = {"$ref": "#/components/schemas/TaskStatus"}
    return {
        "Artifact": {
            "type": "object",
            "description": "An output of the task; this agent's result is the `quineling-result` artifact, one "
            "data part holding `{operation, result}` (docs/runtime-operations.md).",
            "required": ["artifactId", "parts"],
            "properties": {
                "artifactId": {**text, "example": "quineling-result"},
                "name": text,
                "description": text,
                "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Part"}},
                "metadata": obj,
                "extensions": {"type": "array", "items": text},
            },
        },
        "TaskStatusUpdateEvent": {
            "type": "object",
            "description": "The task's status changed.",
            "required": ["taskId", "contextId", "status"],
            "properties": {"taskId": text, "contextId": text, "status": status, "metadata": obj},
        },
        "TaskArtifactUpdateEvent": {
            "type": "object",
            "description": "An artifact of the task was added or extended.",
            "required": ["taskId", "contextId", "artifact"],
            "properties": {
                "taskId": text,
                "contextId": text,
                "artifact": {"$ref": "#/components/schemas/Artifact"},
                "append": {"type": "boolean"},
                "lastChunk": {"type": "boolean"},
                "metadata": obj,
            },
        },
    }


def _ref(name: str) -> JSON:
    return {"$ref": f"#/components/schemas/{name}"}


# Answer fields the same: documented by their real schema, so the page shows their fields (a free-form
# object would show Swagger UI's placeholder `additionalProp1`).
RESPONSE_FIELDS: dict[tuple[str, str], JSON] = {
    ("TaskStatus", "message"): _ref("Message"),
    ("Task", "artifacts"): {"type": "array", "items": _ref("Artifact")},
    ("Task", "history"): {"type": "array", "items": _ref("Message")},
    ("SendMessageResponse", "message"): _ref("Message"),
    ("StreamResponse", "message"): _ref("Message"),
    ("StreamResponse", "statusUpdate"): _ref("TaskStatusUpdateEvent"),
    ("StreamResponse", "artifactUpdate"): _ref("TaskArtifactUpdateEvent"),
}


def version_pattern(versions: tuple[str, ...]) -> str:
    """Every ``A2A-Version`` value the binding takes for ``versions`` (versions.normalize_version: blanks
    around the parts, ``1`` for ``1.0``, anything after ``Major.Minor.``)."""
    forms = []
    for version in versions:
        major, minor = version.split(".")
        bare = "?" if minor == "0" else ""
        forms.append(rf"{major}\s*(?:\.\s*{minor}\s*(?:\..*)?){bare}")
    return r"^\s*(?:" + "|".join(forms) + r")\s*$"


def stream_event_schema() -> JSON:
    """One Server-Sent Event as OpenAPI 3.0 tools read a ``text/event-stream`` schema: the event's fields.
    ``x-data-schema`` says what the JSON in ``data`` is (OpenAPI 3.0 has no keyword for it)."""
    return {
        "type": "object",
        "required": ["data"],
        "properties": {
            "event": {
                "type": "string",
                "enum": ["message", "error"],
                "description": "`message` (the default): `data` is a StreamResponse; `error`: the stream "
                "failed after it started, `data` is an ErrorResponse and the stream ends",
            },
            "data": {"type": "string", "description": "One JSON object on one line"},
        },
        "x-data-schema": {
            "message": {"$ref": "#/components/schemas/StreamResponse"},
            "error": {"$ref": f"#/components/schemas/{ERROR_SCHEMA}"},
        },
    }
