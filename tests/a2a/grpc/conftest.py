"""An app with its gRPC server on a free loopback port, in this process, and a blocking stub to call it;
helpers to build requests and read a refusal's code and ErrorInfo."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf import json_format

from quineling.app import create_app
from quineling.server.grpc_server import GrpcServer
from tests.support.grpc_binding import error_info

SQUARE_SUM = "[2,3,4] | square | sum | report total"
V1 = (("a2a-version", "1.0"),)


@dataclass
class Stack:
    app: Any
    server: GrpcServer
    stub: Any
    channel: Any
    port: int

    def send(self, part: dict[str, Any], metadata: Any = V1, **fields: str) -> dict[str, Any]:
        answer = self.stub.SendMessage(message(part, **fields), metadata=metadata)
        task: dict[str, Any] = json_format.MessageToDict(answer)["task"]
        return task

    def http(self) -> Any:
        return self.app.test_client()


@contextmanager
def grpc_stack(credentials: Any = None, **config: Any) -> Iterator[Stack]:
    """``create_app(config=…)`` and a GrpcServer over it; ``credentials``: TLS channel credentials."""
    app = create_app(config={"tenants": "*", **config})
    server = GrpcServer(app, app.extensions["quineling"].extras["settings"], port=0)
    port = server.start()
    target = f"127.0.0.1:{port}"
    channel = (
        grpc.insecure_channel(target) if credentials is None else grpc.secure_channel(target, credentials)
    )
    try:
        yield Stack(app, server, a2a_pb2_grpc.A2AServiceStub(channel), channel, port)
    finally:
        channel.close()
        server.stop(1.0)


def message(part: dict[str, Any], **fields: str) -> Any:
    body = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [part], **fields}}
    return json_format.ParseDict(body, a2a_pb2.SendMessageRequest())


def data(payload: dict[str, Any]) -> dict[str, Any]:
    return {"data": payload}


def result_of(task: dict[str, Any]) -> Any:
    return task["artifacts"][0]["parts"][0]["data"]


def refusal(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str, dict[str, str]]:
    """Call and expect a refusal: its gRPC code name, its ErrorInfo reason and metadata."""
    with pytest.raises(grpc.RpcError) as info:
        result = call(*args, **kwargs)
        if not hasattr(result, "SerializeToString"):  # a stream: the refusal comes as it is read
            list(result)
    return error_info(info.value)
