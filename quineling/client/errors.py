"""What a call to another agent can fail with: one base class, a kind per exit code, the agent's own errors.

Every error carries a ``hint`` (what to do next) and, for the agent's A2A errors, the JSON-RPC code in
``a2a_code``. Messages never hold credentials: they are built from the agent's reply and the request's URL
without its query string, and :mod:`quineling.client.credentials` redacts any secret the agent echoes back.
"""

from __future__ import annotations

from typing import Any

from quineling.protocol.errors import ERRORS

# The name of each JSON-RPC code (its ErrorInfo reason, the same on both bindings), and back.
A2A_REASONS: dict[int, str] = {spec.code: spec.name for spec in ERRORS}
A2A_CODES: dict[str, int] = {spec.name: spec.code for spec in ERRORS}
A2A_CODES["INVALID_ARGUMENT"] = -32602  # a REST status name some servers put where the reason goes


def error_info_reasons(details: Any) -> list[str]:
    """The reasons of the google.rpc.ErrorInfo entries among an error's details (JSON-RPC ``data``, an HTTP+JSON
    status's ``details``), in order."""
    entries = details if isinstance(details, list) else []
    return [str(d["reason"]) for d in entries
            if isinstance(d, dict) and str(d.get("@type", "")).endswith("ErrorInfo") and d.get("reason")]  # fmt: skip


class A2AClientError(Exception):
    """Base of every client error. ``exit_code`` is what the command line exits with."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        a2a_code: int | None = None,
        exit_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.a2a_code = a2a_code
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message


class AgentUnreachable(A2AClientError):
    """No answer: the connection failed, the agent answered 502/503/504, or its circuit breaker is open."""

    exit_code = 3


class AuthenticationFailed(A2AClientError):
    """The agent refused the credentials (HTTP 401/403), or it needs some the caller did not give."""

    exit_code = 4


class InvalidCredentials(A2AClientError):
    """A credential the client cannot send: HTTP header values carry printable ASCII only, so a token with any
    other character is refused before a request is made (the message never contains the token)."""

    exit_code = 2


class ClientTimeout(A2AClientError):
    """A connect, read or stream timeout, or a ``delegate`` deadline, passed."""

    exit_code = 5


class ProtocolError(A2AClientError):
    """The agent's answer breaks the protocol: not JSON, the wrong envelope, an illegal task state transition."""


class CardError(ProtocolError):
    """The agent card cannot be used: unreadable, no name, or no endpoint this client can speak."""


class AgentError(A2AClientError):
    """An A2A error the agent answered with. ``reason`` is its ErrorInfo reason (``TASK_NOT_FOUND``, …), or
    ``HTTP <status>`` when the agent gave none; ``http_status`` the HTTP status it came with."""

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        a2a_code: int | None = None,
        http_status: int | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(
            message, hint=hint, a2a_code=a2a_code if a2a_code is not None else A2A_CODES.get(reason)
        )
        self.reason = reason
        self.http_status = http_status


def not_supported(operation: str, capability: str, code: int) -> AgentError:
    """The error an agent would answer for an operation its card says it does not offer; raised locally."""
    reason = A2A_REASONS[code]
    return AgentError(
        f"{operation}: the agent's card declares capabilities.{capability} false",
        reason=reason,
        a2a_code=code,
        hint="the agent does not offer this; no request was sent",
    )
