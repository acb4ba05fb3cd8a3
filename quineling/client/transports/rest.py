"""HTTP+JSON binding, A2A 1.0: REST routes under the interface URL (``/message:send``, ``/tasks/{id}``, …),
``google.rpc.Status`` error bodies, and streams whose ``data:`` is a bare StreamResponse. A tenant becomes the
``/{tenant}`` path prefix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx

from quineling.client.errors import AgentError
from quineling.client.http import HttpCall, SSEItem, is_event_stream
from quineling.client.transports.base import STREAMING, JSONDict, Transport

_NOT_HERE = frozenset({405, 415, 501})
_ACCEPT = "application/a2a+json, application/json"


def _q(value: Any) -> str:
    return quote(str(value), safe="")


def _query(params: JSONDict, *names: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in names:
        value = params.get(name)
        if value is None:
            continue
        out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class RestTransport(Transport):
    binding = "HTTP+JSON"

    def route(self, op: str, p: JSONDict) -> tuple[str, str, Any, dict[str, str]]:
        """(verb, path, body, query) of ``op``."""
        task = f"/tasks/{_q(p.get('id', ''))}"
        configs = f"/tasks/{_q(p.get('taskId', ''))}/pushNotificationConfigs"
        body = {k: v for k, v in p.items() if k != "tenant"}
        if op == "SendMessage":
            return "POST", "/message:send", body, {}
        if op == "SendStreamingMessage":
            return "POST", "/message:stream", body, {}
        if op == "GetTask":
            return "GET", task, None, _query(p, "historyLength", "currentGeneration")
        if op == "ListTasks":
            names = ("contextId", "status", "pageSize", "pageToken", "historyLength", "statusTimestampAfter",
                     "includeArtifacts")  # fmt: skip
            return "GET", "/tasks", None, _query(p, *names)
        if op == "CancelTask":
            return "POST", f"{task}:cancel", {k: v for k, v in body.items() if k == "metadata"}, {}
        if op == "SubscribeToTask":
            return "POST", f"{task}:subscribe", None, {}
        if op == "CreateTaskPushNotificationConfig":
            return "POST", configs, body, {}
        if op == "GetTaskPushNotificationConfig":
            return "GET", f"{configs}/{_q(p.get('id', ''))}", None, {}
        if op == "ListTaskPushNotificationConfigs":
            return "GET", configs, None, _query(p, "pageSize", "pageToken")
        if op == "DeleteTaskPushNotificationConfig":
            return "DELETE", f"{configs}/{_q(p.get('id', ''))}", None, {}
        if op == "GetExtendedAgentCard":
            return "GET", "/extendedAgentCard", None, {}
        raise AgentError(f"{op}: no HTTP+JSON route", reason="UNSUPPORTED_OPERATION")

    def _call(self, op: str, params: JSONDict, idempotency_key: str | None, **extra: str) -> HttpCall:
        verb, path, body, query = self.route(op, params)
        tenant = f"/{_q(self.interface.tenant)}" if self.interface.tenant else ""
        stream = op in STREAMING
        headers = {**self.headers(stream=stream, idempotency_key=idempotency_key),
                   "Accept": "text/event-stream" if stream else _ACCEPT, **extra}  # fmt: skip
        return HttpCall(verb, self.interface.url.rstrip("/") + tenant + path, body=body, params=query,
                        headers=headers, repeatable=self.repeatable(op, idempotency_key), stream=stream,
                        operation=op)  # fmt: skip

    def call(
        self,
        op: str,
        params: JSONDict,
        *,
        idempotency_key: str | None = None,
        read_timeout: float | None = None,
    ) -> Any:
        http = self._call(op, params, idempotency_key)
        http.read_timeout = read_timeout
        return self._result(self.channel.send(http), http)

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
        http = self._call(op, params, idempotency_key, **extra)
        http.read_timeout = read_timeout
        with self.channel.open_stream(http) as response:
            if not is_event_stream(response):
                response.read()
                yield SSEItem("", "message", self._result(response, http))
                return
            for item in self.channel.events(response, http):
                if item.event == "error" or (isinstance(item.data, dict) and "error" in item.data):
                    raise self.channel.http_error(response, http, item.data)
                yield item

    def _result(self, response: httpx.Response, http: HttpCall) -> Any:
        status = response.status_code
        if status in (401, 403):
            raise self.channel.http_error(response, http, _json_or_none(response))
        if status == 204 or (status < 300 and not response.content):
            return {}
        try:
            body = response.json()
        except ValueError:
            if status < 300 or status in _NOT_HERE or status == 404:
                raise self.mismatch(f"it answered HTTP {status} {response.headers.get('content-type', '')} "
                                    "that is not JSON") from None  # fmt: skip
            raise self.channel.http_error(response, http) from None
        if status < 300:
            if isinstance(body, dict) and body.get("jsonrpc") == "2.0":
                raise self.mismatch("it answered with a JSON-RPC envelope")
            return body
        if status in _NOT_HERE or (status == 404 and not _a2a_error(body)):
            raise self.mismatch(f"it answered HTTP {status} without an A2A error")
        raise self.channel.http_error(response, http, body)


def _a2a_error(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("error"), dict)


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
