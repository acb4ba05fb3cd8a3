"""JSON-RPC 2.0 binding, A2A 1.0: ``POST <url>`` with ``{"jsonrpc","id","method","params"}``; streams answer
``text/event-stream`` whose every ``data:`` is a JSON-RPC response carrying a StreamResponse."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx

from quineling.client.errors import A2A_REASONS, AgentError
from quineling.client.http import HttpCall, SSEItem, is_event_stream
from quineling.client.transports.base import STREAMING, JSONDict, Transport

_ids = itertools.count(1)
_NOT_HERE = frozenset({404, 405, 415, 501})


class JsonRpcTransport(Transport):
    binding = "JSONRPC"

    def method(self, op: str) -> str:
        return op

    def params(self, op: str, params: JSONDict) -> JSONDict:
        return self.with_tenant(params)

    def translate(self, op: str, result: Any) -> Any:
        return result

    def _call(
        self, op: str, params: JSONDict, idempotency_key: str | None, **extra: str
    ) -> tuple[HttpCall, int]:
        rid = next(_ids)
        stream = op in STREAMING
        headers = {**self.headers(stream=stream, idempotency_key=idempotency_key),
                   "Accept": "text/event-stream" if stream else "application/json", **extra}  # fmt: skip
        envelope = {"jsonrpc": "2.0", "id": rid, "method": self.method(op), "params": self.params(op, params)}
        return HttpCall("POST", self.interface.url, body=envelope, headers=headers,
                        repeatable=self.repeatable(op, idempotency_key), stream=stream, operation=op), rid  # fmt: skip

    def call(
        self,
        op: str,
        params: JSONDict,
        *,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
    ) -> Any:
        http, rid = self._call(op, params, idempotency_key)
        http.read_timeout = read_timeout
        response = self.channel.send(http)
        return self.translate(op, self._result(response, http, rid))

    def stream(
        self,
        op: str,
        params: JSONDict,
        *,
        last_event_id: str | None = None,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
    ) -> Iterator[SSEItem]:
        extra = {"Last-Event-ID": last_event_id} if last_event_id else {}
        http, rid = self._call(op, params, idempotency_key, **extra)
        http.read_timeout = read_timeout
        with self.channel.open_stream(http) as response:
            if not is_event_stream(response):
                response.read()
                result = self._result(response, http, rid)  # raises the agent's error, if that is what it is
                yield SSEItem("", "message", self.translate(op, result))
                return
            for item in self.channel.events(response, http):
                yield SSEItem(item.id, item.event, self.translate(op, self._envelope(item.data, http, None)))

    def _result(self, response: httpx.Response, http: HttpCall, rid: int) -> Any:
        status = response.status_code
        if status in (401, 403):
            raise self.channel.http_error(response, http, _json_or_none(response))
        try:
            body = response.json()
        except ValueError:
            if status < 300 or status in _NOT_HERE:
                raise self.mismatch(f"it answered HTTP {status} {response.headers.get('content-type', '')} "
                                    "that is not JSON-RPC") from None  # fmt: skip
            raise self.channel.http_error(response, http) from None
        if isinstance(body, dict) and body.get("jsonrpc") == "2.0" and ("result" in body or "error" in body):
            return self._envelope(body, http, rid)
        if status < 300 or status in _NOT_HERE:
            raise self.mismatch(f"it answered HTTP {status} with JSON that is not a JSON-RPC response")
        raise self.channel.http_error(response, http, body)

    def _envelope(self, body: Any, http: HttpCall, rid: int | None) -> Any:
        if not isinstance(body, dict) or ("result" not in body and "error" not in body):
            raise self.mismatch("an event is not a JSON-RPC response")
        error = body.get("error")
        if error is not None:
            raise rpc_error(error, http.operation, self.channel.redact)
        if rid is not None and body.get("id") not in (rid, str(rid)):
            raise self.mismatch(f"the response id {body.get('id')!r} is not the request's ({rid})")
        return body["result"]


def rpc_error(error: Any, op: str, redact: Any) -> AgentError:
    if not isinstance(error, dict):
        return AgentError(
            f"{op}: the agent answered a malformed error: {error!r}"[:300], reason="MALFORMED_ERROR"
        )
    code = error.get("code")
    code = code if isinstance(code, int) else None
    reason = None
    data = error.get("data")
    for detail in data if isinstance(data, list) else []:
        if (
            isinstance(detail, dict)
            and str(detail.get("@type", "")).endswith("ErrorInfo")
            and detail.get("reason")
        ):
            reason = str(detail["reason"])
    reason = reason or (A2A_REASONS.get(code) if code is not None else None) or f"JSON-RPC {code}"
    message = redact(str(error.get("message", "")))
    return AgentError(
        f"{op}: {reason}: {message}" if message else f"{op}: {reason}", reason=reason, a2a_code=code
    )


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
