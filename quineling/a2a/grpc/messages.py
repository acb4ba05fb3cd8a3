"""Proto messages ⇄ the 1.0 JSON the service speaks, through protobuf's JSON mapping: A2A 1.0's JSON *is*
the proto3 JSON of ``a2a.proto`` (camelCase names, enum names, ``google.protobuf.Value`` data parts), so
``json_format`` gives exactly the request JSON the HTTP bindings hand the service, and parses its answers
strictly (a field the proto lacks is a bug here, never dropped silently)."""

from __future__ import annotations

from typing import Any

from a2a.types import a2a_pb2
from google.protobuf import empty_pb2, json_format
from google.protobuf.message import Message

from quineling.a2a.event_ids import StreamEvent

# What each unary method answers with (the streaming ones answer StreamResponse messages).
RESPONSES: dict[str, type[Message]] = {
    "SendMessage": a2a_pb2.SendMessageResponse,
    "GetTask": a2a_pb2.Task,
    "ListTasks": a2a_pb2.ListTasksResponse,
    "CancelTask": a2a_pb2.Task,
    "CreateTaskPushNotificationConfig": a2a_pb2.TaskPushNotificationConfig,
    "GetTaskPushNotificationConfig": a2a_pb2.TaskPushNotificationConfig,
    "ListTaskPushNotificationConfigs": a2a_pb2.ListTaskPushNotificationConfigsResponse,
    "GetExtendedAgentCard": a2a_pb2.AgentCard,
    "DeleteTaskPushNotificationConfig": empty_pb2.Empty,
}
# Where a streamed event carries its resumable-stream id: in the metadata of the object it holds (a Task, a
# status or an artifact update), since a gRPC message has no frame id of its own as an SSE event has.
EVENT_ID_KEY = "eventId"


def params_of(request: Message) -> dict[str, Any]:
    """A request message as the service's ``params`` (fields left at their defaults are absent, as a JSON
    client would leave them out)."""
    params: dict[str, Any] = json_format.MessageToDict(request)
    return params


def response_of(method: str, result: Any) -> Message:
    return json_format.ParseDict(result, RESPONSES[method]())


def stream_response(event: Any) -> Message:
    """One stream event; a :class:`StreamEvent`'s id goes into the metadata of the object it carries."""
    event_id = getattr(event, "event_id", None) if isinstance(event, StreamEvent) else None
    if event_id:
        event = {
            kind: {**body, "metadata": {**body.get("metadata", {}), EVENT_ID_KEY: event_id}}
            if isinstance(body, dict)
            else body
            for kind, body in event.items()
        }
    return json_format.ParseDict(event, a2a_pb2.StreamResponse())
