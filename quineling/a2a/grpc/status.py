"""A2A errors as gRPC statuses: the code is the error table's ``google.rpc`` status name
(:mod:`quineling.protocol.errors`: ``NOT_FOUND`` for TaskNotFoundError, ``FAILED_PRECONDITION`` for an
unsupported operation, …), and the ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer carries the
same ``ErrorInfo`` (reason, domain, metadata) the HTTP+JSON binding puts in its body."""

from __future__ import annotations

from typing import Any, ClassVar

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from quineling.a2a.errors import A2AError, UnavailableError


class UnauthenticatedError(A2AError):
    """No valid credential in the ``authorization`` metadata: ``UNAUTHENTICATED``, as HTTP's 401."""

    http_status: ClassVar[int] = 401
    status: ClassVar[str] = "UNAUTHENTICATED"
    reason: ClassVar[str] = "UNAUTHENTICATED"
    default_message: ClassVar[str] = (
        "Authentication required: send the metadata 'authorization: Bearer <token>' with a valid token"
    )


class CredentialsUnavailableError(UnavailableError):
    """No credential can be checked right now (the JWKS URL does not answer): a server-side outage."""

    status: ClassVar[str] = "UNAVAILABLE"
    default_message: ClassVar[str] = "Credentials cannot be checked right now; retry later"


def grpc_code(error: A2AError) -> grpc.StatusCode:
    """The gRPC code of ``error``: its ``google.rpc`` status name; ``INTERNAL`` for a name gRPC lacks."""
    code: grpc.StatusCode = getattr(grpc.StatusCode, error.status, grpc.StatusCode.INTERNAL)
    return code


def status_of(error: A2AError) -> grpc.Status:
    """``error`` as the rich status to abort a call with (code, message, ``ErrorInfo`` detail)."""
    info = error.error_info()
    detail = any_pb2.Any()
    detail.Pack(
        error_details_pb2.ErrorInfo(
            reason=info["reason"], domain=info["domain"], metadata=info.get("metadata", {})
        )
    )
    code = grpc_code(error)
    status: Any = status_pb2.Status(code=code.value[0], message=error.message, details=[detail])
    rich: grpc.Status = rpc_status.to_status(status)
    return rich
