"""Redis killed, paused and restarted under a mixed load on a real server (2 gunicorn workers).

Six clients send, get, list, cancel and subscribe over both bindings for 9.5 s while a private Redis
(append-only file, fsync on every write, so an acknowledged write survives a kill) is killed and restarted,
stopped with SIGSTOP for two seconds, and killed and restarted again. Every answer must be a success or the retryable storage
error — HTTP 503 with ``Retry-After``, JSON-RPC -32603 with ``metadata.retryable`` (a stream: its final
``event: error``) — never another 5xx or an unmarked -32603. Afterwards every acknowledged task must be
readable in the state it was acknowledged in (or, after an unacknowledged cancel, canceled), and the first
requests after the last restart must all succeed.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from tests.support.bindings import V1
from tests.support.live import LiveServer, live_server
from tests.support.redis_server import REDIS_SERVER_MARKS, PrivateRedis, private_redis
from tests.support.sse import parse_sse

pytestmark = [pytest.mark.slow, *REDIS_SERVER_MARKS]

CLIENTS = 6
LOAD_SECONDS = 9.5
TIMEOUT = 10  # per HTTP request: a stalled Redis must be answered within its 1 s deadline, never this
WAITING, DONE = "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED"
CANCELED = "TASK_STATE_CANCELED"


def message(thought: str) -> dict[str, Any]:
    return {
        "messageId": f"m-{random.getrandbits(64):016x}",
        "role": "ROLE_USER",
        "parts": [{"mediaType": "application/json", "data": {"operation": "create", "thought": thought}}],
    }


@dataclass
class Ledger:
    """What the clients were told, and every answer that broke the rules."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: dict[str, set[str]] = field(default_factory=dict)  # task id -> states it may be in now
    cancelable: list[str] = field(default_factory=list)
    subscribable: list[str] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)

    def note(self, op: str, outcome: str) -> None:
        with self.lock:
            self.outcomes[f"{op}:{outcome}"] += 1

    def violate(self, op: str, detail: str) -> None:
        with self.lock:
            self.violations.append(f"{op}: {detail[:300]}")


def retryable_info(details: Any) -> bool:
    return any(
        isinstance(d, dict) and (d.get("metadata") or {}).get("retryable") == "true" for d in details or []
    )


class Client:
    def __init__(self, server: LiveServer, ledger: Ledger, rng: random.Random) -> None:
        self.server, self.ledger, self.rng = server, ledger, rng

    # -- one call over either binding: the result, or None after a retryable error -------------------------

    def call(self, op: str, method: str, params: dict[str, Any], rest: tuple[str, str, Any]) -> Any:
        if self.rng.random() < 0.5:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            response = requests.post(self.server.url("/a2a/jsonrpc"), json=body, headers=V1, timeout=TIMEOUT)
            payload = response.json()
            if response.status_code == 200 and "result" in payload:
                self.ledger.note(op, "ok")
                return payload["result"]
            error = payload.get("error", {})
            if (
                response.status_code == 200
                and error.get("code") == -32603
                and retryable_info(error.get("data"))
            ):
                self.ledger.note(op, "retryable")
                return None
            self.ledger.violate(op, f"JSON-RPC {response.status_code} {response.text}")
            return None
        verb, path, body = rest
        response = requests.request(
            verb, self.server.url("/a2a/rest" + path), json=body, headers=V1, timeout=TIMEOUT
        )
        if response.status_code == 200:
            self.ledger.note(op, "ok")
            return response.json()
        error = response.json().get("error", {})
        if (
            response.status_code == 503
            and response.headers.get("Retry-After")
            and retryable_info(error.get("details"))
        ):
            self.ledger.note(op, "retryable")
            return None
        self.ledger.violate(op, f"REST {response.status_code} {response.text}")
        return None

    # -- the operations --------------------------------------------------------------------------------------

    def send(self) -> None:
        waiting = self.rng.random() < 0.7
        params = {"message": message("[1,2,3] | sum" if waiting else "[1] | sum | report t")}
        result = self.call("send", "SendMessage", params, ("POST", "/message:send", params))
        if result is None:
            return
        task = result["task"]
        expected = WAITING if waiting else DONE
        if task["status"]["state"] != expected:
            self.ledger.violate("send", f"state {task['status']['state']}, expected {expected}")
        with self.ledger.lock:
            self.ledger.acked[task["id"]] = {expected}
            if waiting:
                (self.ledger.cancelable if self.rng.random() < 0.5 else self.ledger.subscribable).append(
                    task["id"]
                )

    def pick(self, pool: list[str], pop: bool = False) -> str | None:
        with self.ledger.lock:
            if not pool:
                return None
            index = self.rng.randrange(len(pool))
            return pool.pop(index) if pop else pool[index]

    def get(self) -> None:
        with self.ledger.lock:
            known = list(self.ledger.acked)
        if known:
            task_id = self.rng.choice(known)
            self.call("get", "GetTask", {"id": task_id}, ("GET", f"/tasks/{task_id}", None))

    def list(self) -> None:
        result = self.call("list", "ListTasks", {"pageSize": 20}, ("GET", "/tasks?pageSize=20", None))
        if result is not None:
            stamps = [t["status"]["timestamp"] for t in result["tasks"]]
            if stamps != sorted(stamps, reverse=True):  # one offset (Z), so text order is time order
                self.ledger.violate("list", f"page out of order: {stamps}")

    def cancel(self) -> None:
        task_id = self.pick(self.ledger.cancelable, pop=True)
        if task_id is None:
            return
        with self.ledger.lock:
            self.ledger.acked[task_id] = {WAITING, CANCELED}  # until the answer says which
        result = self.call(
            "cancel", "CancelTask", {"id": task_id}, ("POST", f"/tasks/{task_id}:cancel", None)
        )
        if result is not None:
            with self.ledger.lock:
                self.ledger.acked[task_id] = {CANCELED}

    def subscribe(self) -> None:
        task_id = self.pick(self.ledger.subscribable)
        if task_id is None:
            return
        jsonrpc = self.rng.random() < 0.5
        if jsonrpc:
            body = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
            response = requests.post(
                self.server.url("/a2a/jsonrpc"), json=body, headers=V1, stream=True, timeout=TIMEOUT
            )
        else:
            response = requests.post(
                self.server.url(f"/a2a/rest/tasks/{task_id}:subscribe"),
                headers=V1,
                stream=True,
                timeout=TIMEOUT,
            )
        with response:
            if response.headers.get("Content-Type", "").startswith("application/json"):
                # Refused before the stream started: judged as any other answer.
                payload = response.json()
                error = payload.get("error", {})
                ok = (response.status_code == 503 and retryable_info(error.get("details"))) or (
                    jsonrpc and error.get("code") == -32603 and retryable_info(error.get("data"))
                )
                self.ledger.note("subscribe", "retryable" if ok else "bad")
                if not ok:
                    self.ledger.violate("subscribe", f"{response.status_code} {response.text}")
                return
            stop = time.monotonic() + 1.5

            def chunks() -> Any:  # keep-alives (every 0.5 s) are no events: the clock is checked per chunk
                for chunk in response.iter_content(chunk_size=None):
                    yield chunk
                    if time.monotonic() > stop:
                        return

            for kind, event in parse_sse(chunks()):
                if kind == "error":
                    error = event.get("error", {})
                    ok = retryable_info(error.get("data") if jsonrpc else error.get("details"))
                    self.ledger.note("subscribe", "ended-retryable" if ok else "ended-bad")
                    if not ok:
                        self.ledger.violate("subscribe", f"mid-stream {json.dumps(event)}")
                    return
            self.ledger.note("subscribe", "ok")

    def run(self, deadline: float) -> None:
        ops = [self.send] * 4 + [self.get] * 3 + [self.list] * 2 + [self.cancel] + [self.subscribe]
        while time.monotonic() < deadline:
            op = self.rng.choice(ops)
            try:
                op()
            except requests.RequestException as exc:  # the server itself must keep answering
                self.ledger.violate(op.__name__, f"no answer: {exc!r}")


def chaos(redis_server: PrivateRedis, start: float, log: list[str]) -> None:
    """kill + restart at 1.5 s, SIGSTOP for 2 s at 4 s, kill + restart at 7 s; then 2 s of load on the
    recovered server."""

    def at(offset: float) -> None:
        time.sleep(max(0.0, start + offset - time.monotonic()))

    def note(what: str) -> None:
        log.append(f"{time.monotonic() - start:.1f}s {what}")

    at(1.5)
    redis_server.kill()
    note("killed")
    time.sleep(1.0)
    redis_server.start()
    note("restarted")
    at(4.0)
    with redis_server.paused():
        note("paused")
        time.sleep(2.0)
    note("resumed")
    at(7.0)
    redis_server.kill()
    note("killed")
    time.sleep(0.5)
    redis_server.start()
    note("restarted")


def test_kill_pause_and_restart_under_mixed_load() -> None:
    started = time.monotonic()
    with (
        private_redis(aof=True) as redis_server,
        live_server(
            store_url=redis_server.url,
            workers=2,
            threads=8,
            redis_timeout_seconds=1,
            redis_connect_timeout_seconds=0.5,
            keepalive_seconds=0.5,
            task_max=100_000,
        ) as server,
    ):
        ledger = Ledger()
        log: list[str] = []
        start = time.monotonic()
        deadline = start + LOAD_SECONDS
        clients = [Client(server, ledger, random.Random(seed)) for seed in range(CLIENTS)]
        threads = [threading.Thread(target=c.run, args=(deadline,)) for c in clients]
        threads.append(threading.Thread(target=chaos, args=(redis_server, start, log)))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=LOAD_SECONDS + 30)
        assert not any(thread.is_alive() for thread in threads)

        summary = f"{dict(sorted(ledger.outcomes.items()))}; chaos: {log}"
        print(summary, f"load done at {time.monotonic() - started:.1f}s")  # shown with -s: what the run saw
        assert ledger.violations == [], (
            f"{len(ledger.violations)} violations, e.g. {ledger.violations[:5]}; {summary}"
        )
        retryable = sum(n for key, n in ledger.outcomes.items() if "retryable" in key)
        assert retryable > 0 and ledger.outcomes["send:ok"] > 20, summary  # the chaos was felt, work got done

        # Recovered: every acknowledged task is there, in the state it was acknowledged in; and since Redis
        # is back, every one of these requests (on every worker thread's connection) succeeds.
        wrong = {}
        for task_id, allowed in ledger.acked.items():
            response = requests.get(server.url(f"/a2a/rest/tasks/{task_id}"), headers=V1, timeout=TIMEOUT)
            if response.status_code != 200:
                wrong[task_id] = f"HTTP {response.status_code} {response.text[:200]}"
            elif response.json()["status"]["state"] not in allowed:
                wrong[task_id] = f"{response.json()['status']['state']} not in {allowed}"
        assert wrong == {}, (
            f"{len(wrong)} of {len(ledger.acked)} acknowledged tasks: {list(wrong.items())[:5]}"
        )
        print(f"{len(ledger.acked)} acknowledged tasks checked at {time.monotonic() - started:.1f}s")
        # An outage is one warning line per request, never a traceback (those are for real failures).
        log_text = server.log_text()
        assert "store unavailable" in log_text and "Traceback" not in log_text, log_text[-3000:]
    assert time.monotonic() - started < 45
