"""What a binding does: one operation in, a 1.0-shaped result (or event stream) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from quineling.client.card import Interface
from quineling.client.errors import ProtocolError
from quineling.client.http import Channel, SSEItem

JSONDict = dict[str, Any]

# Operations safe to send twice (http.py, "The retry rule"); a send joins them with an idempotency key.
REPEATABLE = frozenset({
    "GetTask", "ListTasks", "SubscribeToTask", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard",
})  # fmt: skip
STREAMING = frozenset({"SendStreamingMessage", "SubscribeToTask"})


class InterfaceMismatch(ProtocolError):
    """The URL the card gave for this binding does not speak it (404, 405, 415, 501, HTML, a foreign
    envelope). Nothing was processed, so the client may try the card's next interface."""


class Transport(ABC):
    binding = ""
    version = "1.0"

    def __init__(self, channel: Channel, interface: Interface) -> None:
        self.channel = channel
        self.interface = interface

    def headers(self, *, stream: bool = False, idempotency_key: str | None = None) -> dict[str, str]:
        headers = {"A2A-Version": self.interface.protocol_version if self.interface.legacy else self.version}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        return headers

    def with_tenant(self, params: JSONDict) -> JSONDict:
        tenant = self.interface.tenant
        return {**params, "tenant": tenant} if tenant else params

    @staticmethod
    def repeatable(op: str, idempotency_key: str | None) -> bool:
        return op in REPEATABLE or (
            idempotency_key is not None and op in ("SendMessage", "SendStreamingMessage")
        )

    def mismatch(self, what: str) -> InterfaceMismatch:
        return InterfaceMismatch(
            f"the card declares {self.interface.protocol_binding} {self.interface.protocol_version} at "
            f"{self.interface.url}, but {what}",
            hint="the agent card does not match what the agent serves",
        )

    @abstractmethod
    def call(
        self,
        op: str,
        params: JSONDict,
        *,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
    ) -> Any:
        """Run ``op`` (a 1.0 method name) with 1.0 ``params``; the 1.0-shaped result. ``read_timeout``
        overrides the channel's (a long-poll GetTask waits up to the server's bound)."""

    @abstractmethod
    def stream(
        self,
        op: str,
        params: JSONDict,
        *,
        last_event_id: str | None = None,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
    ) -> Iterator[SSEItem]:
        """Run a streaming ``op``; yields events whose ``data`` is a 1.0 StreamResponse dict."""
