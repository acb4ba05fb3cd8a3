"""A2A client adapters over a Flask test client: one per binding, with the same ``call``/``stream`` methods.

``call(method, params)`` and ``stream(method, params)`` take an A2A method name and its JSON-RPC ``params`` and
return an :class:`Outcome`, so one scenario runs unchanged over JSON-RPC and over HTTP+JSON. Errors come back as
the :class:`~quineling.a2a.errors.A2AError` class the answer names. :func:`rest_route` is the one table from
A2A method to HTTP+JSON request; the live-server adapters (:mod:`tests.support.http_bindings`) use it too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from quineling.a2a import errors
from quineling.a2a.errors import ERRORS_BY_CODE, ERRORS_BY_REASON, A2AError
from tests.support.sse import parse_sse

V1 = {"A2A-Version": "1.0"}

Route = tuple[str, str, dict[str, Any] | None, dict[str, Any]]


def path_segment(value: Any) -> str:
    return quote(str(value), safe="")


def rest_route(method: str, params: dict[str, Any]) -> Route:
    """``(HTTP verb, path under /a2a/rest, JSON body or None, query)`` for an A2A method and its params."""
    params = dict(params)
    if method in ("SendMessage", "SendStreamingMessage"):
        path = "/message:send" if method == "SendMessage" else "/message:stream"
        return "POST", path, params, {}
    if method == "GetTask":
        return "GET", f"/tasks/{path_segment(params.pop('id'))}", None, params
    if method == "ListTasks":
        return "GET", "/tasks", None, params
    if method == "CancelTask":
        return "POST", f"/tasks/{path_segment(params.pop('id'))}:cancel", params, {}
    if method == "SubscribeToTask":
        return "POST", f"/tasks/{path_segment(params.pop('id'))}:subscribe", None, {}
    if method == "CreateTaskPushNotificationConfig":
        return "POST", f"/tasks/{path_segment(params.pop('taskId'))}/pushNotificationConfigs", params, {}
    if method == "ListTaskPushNotificationConfigs":
        return "GET", f"/tasks/{path_segment(params.pop('taskId'))}/pushNotificationConfigs", None, params
    if method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        verb = "GET" if method == "GetTaskPushNotificationConfig" else "DELETE"
        task, config = path_segment(params["taskId"]), path_segment(params["id"])
        return verb, f"/tasks/{task}/pushNotificationConfigs/{config}", None, {}
    if method == "GetExtendedAgentCard":
        return "GET", "/extendedAgentCard", None, {}
    raise AssertionError(f"no HTTP+JSON route for {method}")


@dataclass
class Outcome:
    value: Any = None
    error: type[A2AError] | None = None
    raw: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None


class JsonRpcBinding:
    name = "jsonrpc"

    def __init__(self, client: Any) -> None:
        self.client = client

    def call(self, method: str, params: Any) -> Outcome:
        body = {"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params}
        response = self.client.post("/a2a/jsonrpc", json=body, headers=V1)
        payload = response.get_json()
        assert payload["id"] == "req-1"
        if "error" in payload:
            return Outcome(error=ERRORS_BY_CODE[payload["error"]["code"]], raw=payload)
        return Outcome(payload["result"], raw=payload)

    def stream(self, method: str, params: Any) -> Outcome:
        body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
        response = self.client.post("/a2a/jsonrpc", json=body, headers={**V1, "Accept": "text/event-stream"})
        if not response.mimetype == "text/event-stream":
            return Outcome(
                error=ERRORS_BY_CODE[response.get_json()["error"]["code"]], raw=response.get_json()
            )
        return Outcome(self._events(response), raw=response)

    @staticmethod
    def _events(response: Any) -> Iterator[Any]:
        for kind, envelope in parse_sse(response.response):
            assert kind == "message" and envelope["id"] == 9
            yield envelope["result"]


class RestBinding:
    name = "rest"

    def __init__(self, client: Any) -> None:
        self.client = client

    def _request(self, method: str, params: dict[str, Any]) -> Any:
        verb, path, body, query = rest_route(method, params)
        query = {k: (json.dumps(v) if isinstance(v, bool) else v) for k, v in query.items()}
        return self.client.open("/a2a/rest" + path, method=verb, json=body, query_string=query, headers=V1)

    @staticmethod
    def _error(response: Any) -> Outcome:
        assert response.mimetype == "application/json"
        error = response.get_json()["error"]
        assert error["code"] == response.status_code
        return Outcome(
            error=ERRORS_BY_REASON.get(error["details"][0]["reason"]) or _standard(error), raw=error
        )

    def call(self, method: str, params: Any) -> Outcome:
        response = self._request(method, params)
        if response.status_code >= 400:
            return self._error(response)
        return Outcome(response.get_json(), raw=response.get_json())

    def stream(self, method: str, params: Any) -> Outcome:
        response = self._request(method, params)
        if response.status_code >= 400:
            return self._error(response)
        assert response.mimetype == "text/event-stream"
        return Outcome((event for _kind, event in parse_sse(response.response)), raw=response)


def _standard(error: dict[str, Any]) -> type[A2AError]:
    reason = error["details"][0]["reason"]
    return {"INVALID_PARAMS": errors.InvalidParamsError, "INVALID_REQUEST": errors.InvalidRequestError}.get(
        reason, errors.InternalError
    )
