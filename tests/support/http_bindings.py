"""A2A clients over real HTTP to a :class:`~tests.support.live.LiveServer`: one JSON-RPC and one HTTP+JSON
adapter with the same methods.

Every request uses a fresh connection (``Connection: close``, no ``requests.Session``), so consecutive requests
are accepted by whichever worker process wins the listening socket, and carries an ``X-Test-Request`` tag
(:attr:`Binding.tags`), which ``tests/e2e/client.py`` maps to the worker that served it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import requests

from tests.support.bindings import V1, path_segment, rest_route
from tests.support.live import LiveServer
from tests.support.messages import JSON, data, user_message
from tests.support.sse import parse_sse

TAG_HEADER = "X-Test-Request"
TIMEOUT = 20


def new_tag() -> str:
    return uuid.uuid4().hex


def headers(tag: str | None = None, **extra: str) -> dict[str, str]:
    return {**V1, "Connection": "close", TAG_HEADER: tag or new_tag(), **extra}


@dataclass
class CallFailed(Exception):
    """An A2A error answer: HTTP status, JSON-RPC code (``None`` over REST) and the ErrorInfo reason."""

    http_status: int
    code: int | None
    reason: str | None
    body: Any = field(repr=False, default=None)


def _reason(details: Any) -> str | None:
    for item in details or []:
        if isinstance(item, dict) and item.get("@type", "").endswith("google.rpc.ErrorInfo"):
            return item.get("reason")
    return None


class Stream:
    """An open SSE response yielding StreamResponse objects (JSON-RPC envelopes unwrapped)."""

    def __init__(self, response: requests.Response, jsonrpc: bool, tag: str) -> None:
        self.response, self.jsonrpc, self.tag = response, jsonrpc, tag
        # 512-byte reads, as requests' iter_lines does: each event is handed over as soon as it arrives.
        self._events = parse_sse(response.iter_content(chunk_size=512))

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> JSON:
        kind, payload = next(self._events)
        if kind == "error":
            raise AssertionError(f"mid-stream error: {payload}")
        return payload["result"] if self.jsonrpc else payload

    def close(self) -> None:
        self.response.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class Binding:
    """The operations the tests need, over one binding, optionally inside one tenant."""

    name = ""

    def __init__(
        self, server: LiveServer, tenant: str = "", timeout: float = TIMEOUT, token: str | None = None
    ) -> None:
        self.server, self.tenant, self.timeout = server, tenant, timeout
        self.token = token  # sent as Authorization: Bearer, when set
        self.tags: list[str] = []  # every request's X-Test-Request tag, in order

    def _headers(self, tag: str) -> dict[str, str]:
        return headers(tag, **({"Authorization": f"Bearer {self.token}"} if self.token else {}))

    @property
    def last_tag(self) -> str:
        return self.tags[-1] if self.tags else ""

    def _tag(self) -> str:
        tag = new_tag()
        self.tags.append(tag)
        return tag

    def call(self, method: str, params: JSON) -> Any:
        """The result of one A2A method with its JSON-RPC ``params``; an error answer raises CallFailed."""
        raise NotImplementedError

    def send(self, message: JSON, **configuration: Any) -> JSON:
        params: JSON = {"message": message}
        if configuration:
            params["configuration"] = configuration
        return self.call("SendMessage", params)["task"]

    def get_task(self, task_id: str, history_length: int | None = None) -> JSON:
        params: JSON = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return self.call("GetTask", params)

    def cancel(self, task_id: str) -> JSON:
        return self.call("CancelTask", {"id": task_id})

    def list_tasks(self, page_size: int, page_token: str = "") -> JSON:
        params: JSON = {"pageSize": page_size}
        if page_token:
            params["pageToken"] = page_token
        return self.call("ListTasks", params)

    def stream(self, message: JSON) -> Stream:
        raise NotImplementedError

    def subscribe(self, task_id: str) -> Stream:
        raise NotImplementedError

    def run_op(self, request: JSON) -> JSON:
        """Send one structured request as a new task; the completed task."""
        task = self.send(user_message(data(request)))
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
        return task


class JsonRpc(Binding):
    name = "jsonrpc"

    def _post(self, method: str, params: JSON, *, stream: bool) -> tuple[str, requests.Response]:
        if self.tenant:
            params = {**params, "tenant": self.tenant}
        tag = self._tag()
        body = {"jsonrpc": "2.0", "id": tag, "method": method, "params": params}
        reply = requests.post(
            self.server.url("/a2a/jsonrpc"),
            json=body,
            headers=self._headers(tag),
            stream=stream,
            timeout=self.timeout,
        )
        return tag, reply

    def call(self, method: str, params: JSON) -> Any:
        tag, reply = self._post(method, params, stream=False)
        payload = reply.json()
        assert payload["id"] == tag
        if "error" in payload:
            error = payload["error"]
            raise CallFailed(reply.status_code, error["code"], _reason(error.get("data")), payload)
        assert reply.status_code == 200
        return payload["result"]

    def _open(self, method: str, params: JSON) -> Stream:
        tag, reply = self._post(method, params, stream=True)
        assert reply.status_code == 200
        if not reply.headers["Content-Type"].startswith("text/event-stream"):
            payload = reply.json()
            error = payload["error"]
            raise CallFailed(reply.status_code, error["code"], _reason(error.get("data")), payload)
        return Stream(reply, True, tag)

    def stream(self, message: JSON) -> Stream:
        return self._open("SendStreamingMessage", {"message": message})

    def subscribe(self, task_id: str) -> Stream:
        return self._open("SubscribeToTask", {"id": task_id})


class Rest(Binding):
    name = "rest"

    def _request(self, verb: str, path: str, *, stream: bool = False, **kwargs: Any) -> requests.Response:
        tenant = f"/{path_segment(self.tenant)}" if self.tenant else ""
        return requests.request(
            verb,
            self.server.url(f"/a2a/rest{tenant}{path}"),
            headers=self._headers(self._tag()),
            stream=stream,
            timeout=self.timeout,
            **kwargs,
        )

    def call(self, method: str, params: JSON) -> Any:
        verb, path, body, query = rest_route(method, params)
        return self._answer(self._request(verb, path, json=body, params=query))

    @staticmethod
    def _answer(reply: requests.Response) -> Any:
        payload = reply.json()
        if reply.status_code != 200:
            error = payload["error"]
            assert error["code"] == reply.status_code
            raise CallFailed(reply.status_code, None, _reason(error.get("details")), payload)
        return payload

    def _open(self, verb: str, path: str, **kwargs: Any) -> Stream:
        reply = self._request(verb, path, stream=True, **kwargs)
        if reply.status_code != 200 or not reply.headers["Content-Type"].startswith("text/event-stream"):
            self._answer(reply)
            raise AssertionError(f"expected an SSE stream, got {reply.headers['Content-Type']}")
        return Stream(reply, False, self.last_tag)

    def stream(self, message: JSON) -> Stream:
        verb, path, body, _query = rest_route("SendStreamingMessage", {"message": message})
        return self._open(verb, path, json=body)

    def subscribe(self, task_id: str) -> Stream:
        # GET, the other verb the server accepts for a subscription (the in-process adapter uses POST).
        _verb, path, _body, _query = rest_route("SubscribeToTask", {"id": task_id})
        return self._open("GET", path)


BINDINGS: dict[str, type[Binding]] = {"jsonrpc": JsonRpc, "rest": Rest}


def expect_not_found(binding: Binding, failure: CallFailed) -> None:
    """The protocol's task-not-found answer for the binding (-32001, or HTTP 404), with its ErrorInfo."""
    assert failure.reason == "TASK_NOT_FOUND", failure.body
    if isinstance(binding, JsonRpc):
        assert (failure.http_status, failure.code) == (200, -32001), failure.body
    else:
        assert failure.http_status == 404, failure.body
