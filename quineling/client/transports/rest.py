"""HTTP+JSON binding, A2A 1.0: REST routes under the interface URL (``/message:send``, ``/tasks/{id}``, …),
``google.rpc.Status`` error bodies, and streams whose ``data:`` is a bare StreamResponse. A tenant becomes the
``/{tenant}`` path prefix."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx

from quineling.client.errors import AgentError
from quineling.client.http import HttpCall, SSEItem
from quineling.client.transports.base import JSONDict, Route, Transport

_NOT_HERE = frozenset({405, 415, 501})


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
    accept = "application/a2a+json, application/json"

    def route(self, op: str, params: JSONDict) -> Route:
        verb, path, body, query = self._route(op, params)
        tenant = f"/{_q(self.interface.tenant)}" if self.interface.tenant else ""
        return verb, self.interface.url.rstrip("/") + tenant + path, body, query

    def _route(self, op: str, p: JSONDict) -> Route:
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

    def answer(self, response: httpx.Response, http: HttpCall) -> Any:
        status = response.status_code
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

    def event(self, item: SSEItem, response: httpx.Response, http: HttpCall) -> SSEItem:
        if item.event == "error" or (isinstance(item.data, dict) and "error" in item.data):
            raise self.channel.http_error(response, http, item.data)
        return item


def _a2a_error(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("error"), dict)
