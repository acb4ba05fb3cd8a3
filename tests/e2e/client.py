"""Raw-HTTP A2A clients for the end-to-end tests: one JSON-RPC and one HTTP+JSON adapter with the same
methods, a tiny SSE reader, and a way to learn which gunicorn worker served each request.

Every request uses a fresh connection (``Connection: close``, no ``requests.Session``), so consecutive requests
are accepted by whichever worker process wins the listening socket. Each request carries an ``X-Test-Request``
tag; :func:`traced_server` starts gunicorn with an access-log format of ``<pid> <tag>`` (through gunicorn's own
``GUNICORN_CMD_ARGS``; the production code is untouched), so :meth:`WorkerTrace.pid` maps a tag to the worker
that served it.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
import requests

from tests.support.live import LiveServer, live_server

JSON = dict[str, Any]
V1 = {"A2A-Version": "1.0"}
TAG_HEADER = "X-Test-Request"
TIMEOUT = 20
SQUARE_SUM = "[2,3,4] | square | sum | report total"
_LOG_LINE = re.compile(r"^<(\d+)> ([0-9a-f]{32})$", re.MULTILINE)


@contextmanager
def traced_server(**kwargs: Any) -> Iterator[LiveServer]:
    """``live_server`` with an access log of ``<worker pid> <X-Test-Request tag>`` lines."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GUNICORN_CMD_ARGS", f"--access-logformat='%(p)s %({{{TAG_HEADER.lower()}}}i)s'")
        starting = live_server(access_log=1, **kwargs)
        server = starting.__enter__()
    try:
        yield server
    finally:
        starting.__exit__(None, None, None)


class WorkerTrace:
    """Reads the traced access log: which worker pid served the request with a given tag."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server

    def pids(self) -> dict[str, int]:
        return {tag: int(pid) for pid, tag in _LOG_LINE.findall(self.server.log_text())}

    def pid(self, tag: str, wait: float = 5.0) -> int:
        """The pid that served ``tag`` (gunicorn logs a request when its response is finished)."""
        deadline = time.monotonic() + wait
        while True:
            found = self.pids().get(tag)
            if found is not None:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"request {tag} is not in the access log")
            time.sleep(0.05)


def new_tag() -> str:
    return uuid.uuid4().hex


def headers(tag: str | None = None, **extra: str) -> dict[str, str]:
    return {**V1, "Connection": "close", TAG_HEADER: tag or new_tag(), **extra}


def user_message(*parts: JSON, task_id: str | None = None, context_id: str | None = None) -> JSON:
    message: JSON = {"messageId": f"msg-{uuid.uuid4().hex}", "role": "ROLE_USER", "parts": list(parts)}
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    return message


def text(value: str) -> JSON:
    return {"text": value}


def data(value: JSON) -> JSON:
    return {"data": value, "mediaType": "application/json"}


def result_of(task: JSON) -> JSON:
    """The ``{operation, result}`` payload of the task's ``quineling-result`` artifact."""
    (artifact,) = [a for a in task["artifacts"] if a["artifactId"] == "quineling-result"]
    return artifact["parts"][0]["data"]


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


def sse_events(response: requests.Response) -> Iterator[tuple[str, Any]]:
    """``(event type, parsed data)`` per SSE event; comment lines (keep-alives) are skipped."""
    kind, lines = "message", []
    for raw in response.iter_lines(decode_unicode=True):
        if raw is None:
            continue
        if raw == "":
            if lines:
                yield kind, json.loads("\n".join(lines))
            kind, lines = "message", []
        elif raw.startswith(":"):
            continue
        elif raw.startswith("event:"):
            kind = raw[6:].strip()
        elif raw.startswith("data:"):
            lines.append(raw[5:].lstrip())
    if lines:
        yield kind, json.loads("\n".join(lines))


class Stream:
    """An open SSE response yielding StreamResponse objects (JSON-RPC envelopes unwrapped)."""

    def __init__(self, response: requests.Response, jsonrpc: bool, tag: str) -> None:
        self.response, self.jsonrpc, self.tag = response, jsonrpc, tag
        self._events = sse_events(response)

    def __iter__(self) -> Iterator[JSON]:
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

    def __init__(self, server: LiveServer, tenant: str = "") -> None:
        self.server, self.tenant = server, tenant
        self.tags: list[str] = []  # every request's X-Test-Request tag, in order

    @property
    def last_tag(self) -> str:
        return self.tags[-1] if self.tags else ""

    def _tag(self) -> str:
        tag = new_tag()
        self.tags.append(tag)
        return tag

    def send(self, message: JSON, **configuration: Any) -> JSON:
        raise NotImplementedError

    def get_task(self, task_id: str, history_length: int | None = None) -> JSON:
        raise NotImplementedError

    def cancel(self, task_id: str) -> JSON:
        raise NotImplementedError

    def list_tasks(self, page_size: int, page_token: str = "") -> JSON:
        raise NotImplementedError

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

    def call(self, method: str, params: JSON) -> Any:
        if self.tenant:
            params = {**params, "tenant": self.tenant}
        tag = self._tag()
        body = {"jsonrpc": "2.0", "id": tag, "method": method, "params": params}
        reply = requests.post(
            self.server.url("/a2a/jsonrpc"), json=body, headers=headers(tag), timeout=TIMEOUT
        )
        payload = reply.json()
        assert payload["id"] == tag
        if "error" in payload:
            error = payload["error"]
            raise CallFailed(reply.status_code, error["code"], _reason(error.get("data")), payload)
        assert reply.status_code == 200
        return payload["result"]

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

    def _open(self, method: str, params: JSON) -> Stream:
        if self.tenant:
            params = {**params, "tenant": self.tenant}
        tag = self._tag()
        body = {"jsonrpc": "2.0", "id": tag, "method": method, "params": params}
        reply = requests.post(
            self.server.url("/a2a/jsonrpc"), json=body, headers=headers(tag), stream=True, timeout=TIMEOUT
        )
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

    def path(self, suffix: str) -> str:
        tenant = f"/{quote(self.tenant, safe='')}" if self.tenant else ""
        return self.server.url(f"/a2a/rest{tenant}{suffix}")

    def request(self, verb: str, suffix: str, *, stream: bool = False, **kwargs: Any) -> requests.Response:
        tag = self._tag()
        return requests.request(
            verb, self.path(suffix), headers=headers(tag), stream=stream, timeout=TIMEOUT, **kwargs
        )

    @staticmethod
    def _answer(reply: requests.Response) -> Any:
        payload = reply.json()
        if reply.status_code != 200:
            error = payload["error"]
            assert error["code"] == reply.status_code
            raise CallFailed(reply.status_code, None, _reason(error.get("details")), payload)
        return payload

    def send(self, message: JSON, **configuration: Any) -> JSON:
        body: JSON = {"message": message}
        if configuration:
            body["configuration"] = configuration
        return self._answer(self.request("POST", "/message:send", json=body))["task"]

    def get_task(self, task_id: str, history_length: int | None = None) -> JSON:
        query = {} if history_length is None else {"historyLength": str(history_length)}
        return self._answer(self.request("GET", f"/tasks/{quote(task_id, safe='')}", params=query))

    def cancel(self, task_id: str) -> JSON:
        return self._answer(self.request("POST", f"/tasks/{quote(task_id, safe='')}:cancel", json={}))

    def list_tasks(self, page_size: int, page_token: str = "") -> JSON:
        query = {"pageSize": str(page_size)}
        if page_token:
            query["pageToken"] = page_token
        return self._answer(self.request("GET", "/tasks", params=query))

    def _open(self, verb: str, suffix: str, **kwargs: Any) -> Stream:
        reply = self.request(verb, suffix, stream=True, **kwargs)
        if reply.status_code != 200 or not reply.headers["Content-Type"].startswith("text/event-stream"):
            self._answer(reply)
            raise AssertionError(f"expected an SSE stream, got {reply.headers['Content-Type']}")
        return Stream(reply, False, self.last_tag)

    def stream(self, message: JSON) -> Stream:
        return self._open("POST", "/message:stream", json={"message": message})

    def subscribe(self, task_id: str) -> Stream:
        return self._open("GET", f"/tasks/{quote(task_id, safe='')}:subscribe")


BINDINGS: dict[str, type[Binding]] = {"jsonrpc": JsonRpc, "rest": Rest}


def expect_not_found(binding: Binding, failure: CallFailed) -> None:
    """The protocol's task-not-found answer for the binding (-32001, or HTTP 404), with its ErrorInfo."""
    assert failure.reason == "TASK_NOT_FOUND", failure.body
    if isinstance(binding, JsonRpc):
        assert (failure.http_status, failure.code) == (200, -32001), failure.body
    else:
        assert failure.http_status == 404, failure.body
