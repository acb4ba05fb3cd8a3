"""One authenticated caller over one binding, in process (a Flask test client): JSON-RPC 1.0, HTTP+JSON, or
the v0.3 JSON-RPC method family. Every method returns what the wire said — ``(HTTP status, body)`` — so a test
can compare the answer to another principal's id with the answer to an id that never existed, byte for byte.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from quineling.auth.keyfile import add_key
from tests.support.bindings import path_segment
from tests.support.messages import JSON, result_of
from tests.support.sse import parse_sse

Answer = tuple[int, Any]  # HTTP status, parsed body (JSON, or the first SSE frame of a stream)
Outcome = tuple[str, Any]  # ("ok", {operation, result}) or ("error", {code, message, path})

FLAVOURS = ["jsonrpc", "rest", "v03"]


def keys_file(folder: Path, *names: str) -> tuple[Path, dict[str, str]]:
    """A keys file with one key per name (made by ``quineling keys add``'s code); the tokens by name."""
    path = folder / "keys"
    return path, {name: add_key(path, name) for name in names}


def new_task_id() -> str:
    return str(uuid.uuid4())


class Caller:
    """``flavour`` is ``jsonrpc`` (1.0), ``rest`` (HTTP+JSON 1.0) or ``v03`` (JSON-RPC, v0.3 methods)."""

    def __init__(self, client: Any, flavour: str, token: str | None, tenant: str = "") -> None:
        self.client, self.flavour, self.token, self.tenant = client, flavour, token, tenant

    # -- the wire -------------------------------------------------------------------------------------

    def _headers(self, stream: bool = False) -> dict[str, str]:
        headers = {} if self.flavour == "v03" else {"A2A-Version": "1.0"}
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        if stream:
            headers["Accept"] = "text/event-stream"
        return headers

    def _rpc(self, method: str, params: JSON, *, stream: bool = False) -> Answer:
        if self.tenant:
            params = {**params, "tenant": self.tenant}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = self.client.post(
            "/a2a/jsonrpc", json=body, headers=self._headers(stream), buffered=not stream
        )
        return _answer(response)

    def _rest(self, verb: str, path: str, body: JSON | None = None, query: JSON | None = None) -> Answer:
        tenant = f"/{path_segment(self.tenant)}" if self.tenant else ""
        stream = path.endswith(":subscribe") or path.endswith(":stream")
        response = self.client.open(
            f"/a2a/rest{tenant}{path}",
            method=verb,
            json=body,
            query_string=query or {},
            headers=self._headers(stream),
            buffered=not stream,
        )
        return _answer(response)

    # -- operations -----------------------------------------------------------------------------------

    def message(self, part: JSON, task_id: str | None = None) -> JSON:
        message: JSON = {"messageId": f"m-{uuid.uuid4().hex}", "parts": [part]}
        if self.flavour == "v03":
            message.update(kind="message", role="user")
            part.setdefault("kind", "data" if "data" in part else "text")
        else:
            message["role"] = "ROLE_USER"
        if task_id:
            message["taskId"] = task_id
        return message

    def send_part(self, part: JSON, task_id: str | None = None) -> Answer:
        message = self.message(dict(part), task_id)
        if self.flavour == "rest":
            body = {"message": message}
            if self.tenant:
                body["tenant"] = self.tenant
            return self._rest("POST", "/message:send", body)
        return self._rpc("message/send" if self.flavour == "v03" else "SendMessage", {"message": message})

    def task(self, part: JSON, task_id: str | None = None) -> JSON:
        status, body = self.send_part(part, task_id)
        assert status == 200, body
        return _unwrap_task(self.flavour, body)

    def op(self, request: JSON) -> Outcome:
        """One runtime operation as a new task: what ``Runtime.dispatch`` answered."""
        return outcome(self.flavour, self.task({"data": request, "mediaType": "application/json"}))

    def waiting(self) -> str:
        """A new task that waits for input (INPUT_REQUIRED): its id."""
        task = self.task({"text": "[1,2] | sum"})
        assert task["status"]["state"] in ("TASK_STATE_INPUT_REQUIRED", "input-required"), task
        return str(task["id"])

    def get(self, task_id: str) -> Answer:
        if self.flavour == "rest":
            return self._rest("GET", f"/tasks/{path_segment(task_id)}")
        return self._rpc("tasks/get" if self.flavour == "v03" else "GetTask", {"id": task_id})

    def cancel(self, task_id: str) -> Answer:
        if self.flavour == "rest":
            return self._rest("POST", f"/tasks/{path_segment(task_id)}:cancel", {})
        return self._rpc("tasks/cancel" if self.flavour == "v03" else "CancelTask", {"id": task_id})

    def follow_up(self, task_id: str) -> Answer:
        return self.send_part({"text": "[1,2] | sum | report total"}, task_id)

    def subscribe(self, task_id: str, verb: str = "POST") -> Answer:
        if self.flavour == "rest":
            return self._rest(verb, f"/tasks/{path_segment(task_id)}:subscribe")
        method = "tasks/resubscribe" if self.flavour == "v03" else "SubscribeToTask"
        return self._rpc(method, {"id": task_id}, stream=True)

    def list(self, **query: Any) -> Answer:
        assert self.flavour != "v03", "v0.3 has no ListTasks"
        if self.flavour == "rest":
            return self._rest("GET", "/tasks", query={k: str(v) for k, v in query.items()})
        return self._rpc("ListTasks", query)


def _answer(response: Any) -> Answer:
    if response.mimetype == "text/event-stream":
        frames = parse_sse(response.response)
        try:
            kind, first = next(frames)
        finally:
            response.close()
        return response.status_code, {"sse": kind, "frame": first}
    return response.status_code, json.loads(response.get_data(as_text=True))


def _unwrap_task(flavour: str, body: Any) -> JSON:
    if flavour == "rest":
        return body["task"]  # type: ignore[no-any-return]
    assert "result" in body, body
    result = body["result"]
    return result if flavour == "v03" else result["task"]  # type: ignore[no-any-return]


def outcome(flavour: str, task: JSON) -> Outcome:
    """What the runtime answered, from a finished task of either generation."""
    if task["status"]["state"] in ("TASK_STATE_FAILED", "failed"):
        return "error", task["status"]["message"]["metadata"]["quinelingError"]
    if flavour != "v03":
        return "ok", result_of(task)
    (artifact,) = [a for a in task["artifacts"] if a["artifactId"] == "quineling-result"]
    return "ok", artifact["parts"][0]["data"]
