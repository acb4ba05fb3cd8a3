"""The gRPC binding as a test adapter with the ``call``/``stream`` methods of :mod:`tests.support.bindings`:
A2A method names and their 1.0 JSON params in, :class:`~tests.support.bindings.Outcome` out, over a stub of
``lf.a2a.v1.A2AService``; and the ErrorInfo of a refused call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
from a2a.types import a2a_pb2
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from quineling.a2a import errors
from quineling.a2a.errors import ERRORS_BY_REASON, A2AError
from tests.support.bindings import Outcome

V1 = (("a2a-version", "1.0"),)
REQUESTS = {
    "SendMessage": a2a_pb2.SendMessageRequest,
    "SendStreamingMessage": a2a_pb2.SendMessageRequest,
    "GetTask": a2a_pb2.GetTaskRequest,
    "ListTasks": a2a_pb2.ListTasksRequest,
    "CancelTask": a2a_pb2.CancelTaskRequest,
    "SubscribeToTask": a2a_pb2.SubscribeToTaskRequest,
    "CreateTaskPushNotificationConfig": a2a_pb2.TaskPushNotificationConfig,
    "GetTaskPushNotificationConfig": a2a_pb2.GetTaskPushNotificationConfigRequest,
    "ListTaskPushNotificationConfigs": a2a_pb2.ListTaskPushNotificationConfigsRequest,
    "DeleteTaskPushNotificationConfig": a2a_pb2.DeleteTaskPushNotificationConfigRequest,
    "GetExtendedAgentCard": a2a_pb2.GetExtendedAgentCardRequest,
}


def error_info(exc: grpc.RpcError) -> tuple[str, str, dict[str, str]]:
    """A refused call's gRPC code name and the reason and metadata of its ErrorInfo detail."""
    status = rpc_status.from_call(exc)
    assert status is not None, exc
    (detail,) = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info)
    return exc.code().name, info.reason, dict(info.metadata)


def error_class(exc: grpc.RpcError) -> type[A2AError]:
    _, reason, _ = error_info(exc)
    standard = {"INVALID_PARAMS": errors.InvalidParamsError, "INVALID_REQUEST": errors.InvalidRequestError}
    return ERRORS_BY_REASON.get(reason) or standard.get(reason, errors.InternalError)


class GrpcBinding:
    name = "grpc"

    def __init__(self, stub: Any, metadata: tuple[tuple[str, str], ...] = V1) -> None:
        self.stub, self.metadata = stub, metadata

    def _request(self, method: str, params: Any) -> Any:
        return json_format.ParseDict(params or {}, REQUESTS[method]())

    def call(self, method: str, params: Any) -> Outcome:
        try:
            answer = getattr(self.stub, method)(self._request(method, params), metadata=self.metadata)
        except grpc.RpcError as exc:
            return Outcome(error=error_class(exc), raw=exc)
        return Outcome(json_format.MessageToDict(answer), raw=answer)

    def stream(self, method: str, params: Any) -> Outcome:
        events = getattr(self.stub, method)(self._request(method, params), metadata=self.metadata)
        try:
            first = next(events)
        except StopIteration:
            return Outcome(iter(()), raw=events)
        except grpc.RpcError as exc:
            return Outcome(error=error_class(exc), raw=exc)

        def rest() -> Iterator[Any]:
            yield json_format.MessageToDict(first)
            for event in events:
                yield json_format.MessageToDict(event)

        return Outcome(rest(), raw=events)
