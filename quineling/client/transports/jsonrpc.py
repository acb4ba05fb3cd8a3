"""JSON-RPC 2.0 binding, A2A 1.0: ``POST <url>`` with ``{"jsonrpc","id","method","params"}``; streams answer
``text/event-stream`` whose every ``data:`` is a JSON-RPC response carrying a StreamResponse."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from quineling.client.errors import A2A_REASONS, AgentError, error_info_reasons
from quineling.client.http import HttpCall, SSEItem
from quineling.client.transports.base import JSONDict, Route, Transport

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

    def route(self, op: str, params: JSONDict) -> Route:
        envelope = {"jsonrpc": "2.0", "id": next(_ids), "method": self.method(op),
                    "params": self.params(op, params)}  # fmt: skip
        return "POST", self.interface.url, envelope, {}

    def answer(self, response: httpx.Response, http: HttpCall) -> Any:
        return self.translate(http.operation, self._result(response, http, http.body["id"]))

    def event(self, item: SSEItem, response: httpx.Response, http: HttpCall) -> SSEItem:
        return SSEItem(
            item.id, item.event, self.translate(http.operation, self._envelope(item.data, http, None))
        )

    def _result(self, response: httpx.Response, http: HttpCall, rid: int) -> Any:
        status = response.status_code
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
    reasons = error_info_reasons(error.get("data"))  # of several, the last (a REST status: the first)
    reason = (
        reasons[-1]
        if reasons
        else (A2A_REASONS.get(code) if code is not None else None) or f"JSON-RPC {code}"
    )
    message = redact(str(error.get("message", "")))
    return AgentError(
        f"{op}: {reason}: {message}" if message else f"{op}: {reason}", reason=reason, a2a_code=code
    )
