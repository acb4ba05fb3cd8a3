"""What a binding does: one operation in, a 1.0-shaped result (or event stream) out.

The steps every binding shares live here, once: the request's headers (A2A-Version, Idempotency-Key, Accept,
Last-Event-ID), whether a retry may repeat it, sending it or opening its stream, and the 401/403 answer. A
binding says only where an operation goes (:meth:`Transport.route`) and how to read what comes back
(:meth:`Transport.answer`, :meth:`Transport.event`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, TypedDict, Unpack

import httpx

from quineling.client.card import Interface
from quineling.client.errors import ProtocolError
from quineling.client.http import Channel, HttpCall, SSEItem, is_event_stream

JSONDict = dict[str, Any]
Route = tuple[str, str, Any, dict[str, str]]  # (verb, URL, JSON body or None, query)

# Operations safe to send twice (http.py, "The retry rule"); a send joins them with an idempotency key.
REPEATABLE = frozenset({
    "GetTask", "ListTasks", "SubscribeToTask", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard",
})  # fmt: skip
STREAMING = frozenset({"SendStreamingMessage", "SubscribeToTask"})


class CallOptions(TypedDict, total=False):
    """The options of :meth:`Transport.call`, for callers that pass them through."""

    idempotency_key: str | None
    read_timeout: float | None  # overrides the channel's (a long-poll GetTask waits up to the server's bound)


class StreamOptions(CallOptions, total=False):
    """The options of :meth:`Transport.stream`: a resumed stream names the last event it saw."""

    last_event_id: str | None


class InterfaceMismatch(ProtocolError):
    """The URL the card gave for this binding does not speak it (404, 405, 415, 501, HTML, a foreign
    envelope). Nothing was processed, so the client may try the card's next interface."""


class Transport(ABC):
    binding = ""
    version = "1.0"
    accept = "application/json"  # the Accept of a call that is not a stream

    def __init__(self, channel: Channel, interface: Interface) -> None:
        self.channel = channel
        self.interface = interface

    def request(self, op: str, params: JSONDict, **options: Unpack[StreamOptions]) -> HttpCall:
        """The HTTP request that runs ``op``: the binding's route, the headers every binding sends."""
        verb, url, body, query = self.route(op, params)
        stream, key, last_id = op in STREAMING, options.get("idempotency_key"), options.get("last_event_id")
        headers = {"A2A-Version": self.interface.protocol_version if self.interface.legacy else self.version}
        if key:
            headers["Idempotency-Key"] = key
        headers["Accept"] = "text/event-stream" if stream else self.accept
        if last_id:
            headers["Last-Event-ID"] = last_id
        return HttpCall(verb, url, body=body, params=query, headers=headers, stream=stream, operation=op,
                        repeatable=self.repeatable(op, key), read_timeout=options.get("read_timeout"))  # fmt: skip

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
        http = self.request(op, params, idempotency_key=idempotency_key, read_timeout=read_timeout)
        return self.result(self.channel.send(http), http)

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
        http = self.request(op, params, idempotency_key=idempotency_key, last_event_id=last_event_id,
                            read_timeout=read_timeout)  # fmt: skip
        with self.channel.open_stream(http) as response:
            if not is_event_stream(response):
                response.read()
                yield SSEItem(
                    "", "message", self.result(response, http)
                )  # raises the agent's error, if it is one
                return
            for item in self.channel.events(response, http):
                yield self.event(item, response, http)

    def result(self, response: httpx.Response, http: HttpCall) -> Any:
        """The 1.0-shaped result of a whole (not streamed) answer, or the error it carries."""
        if response.status_code in (401, 403):
            raise self.channel.http_error(response, http, json_or_none(response))
        return self.answer(response, http)

    @abstractmethod
    def route(self, op: str, params: JSONDict) -> Route:
        """Where ``op`` goes on this binding, and what it carries."""

    @abstractmethod
    def answer(self, response: httpx.Response, http: HttpCall) -> Any:
        """The result of an answer that is neither 401 nor 403, or the error it carries (the agent's, or
        :class:`InterfaceMismatch` when the answer is not this binding's)."""

    @abstractmethod
    def event(self, item: SSEItem, response: httpx.Response, http: HttpCall) -> SSEItem:
        """One event of a stream, its ``data`` made a 1.0 StreamResponse (or the error it carries raised)."""


def json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
