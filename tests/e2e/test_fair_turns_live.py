"""A busy connection cannot hold a gevent worker (quineling.server.hooks.take_turn, docs/deployment.md, "Worker
model"): a greenlet gives up the worker only where it waits, and a request on the memory store waits
for nothing. A client that pipelines many requests on one connection had them all served back to back, since
gunicorn parses each next one from its buffer, while a request on another connection waited for the whole
run. Each answered request now gives the other connections one turn of the loop."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

from quineling.server.hooks import take_turn
from quineling.server.options import gunicorn_options
from quineling.settings import load_settings
from tests.support.bindings import V1
from tests.support.live import live_server
from tests.support.messages import data, user_message

PIPELINED = 400
STATUS = b"HTTP/1.1 200 "


def rpc_body(method: str, params: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def raw_request(body: bytes) -> bytes:
    head = (
        f"POST /a2a/jsonrpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"A2A-Version: {V1['A2A-Version']}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def test_the_turn_is_taken_under_gevent_only() -> None:
    assert gunicorn_options(load_settings(env={}))["post_request"] is take_turn
    gthread = load_settings(env={"QUINELING_WORKER_CLASS": "gthread"})
    assert "post_request" not in gunicorn_options(gthread)  # threads are preempted


def test_a_request_on_another_connection_is_served_during_a_pipelined_run() -> None:
    with live_server(worker_class="gevent") as server:
        setup = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        message = user_message(data({"operation": "parse", "thought": "[1] | sum"}))
        body = rpc_body("SendMessage", {"message": message})
        setup.request("POST", "/a2a/jsonrpc", body, {"Content-Type": "application/json", **V1})
        task_id = json.loads(setup.getresponse().read())["result"]["task"]["id"]
        setup.close()
        get = rpc_body("GetTask", {"id": task_id})

        busy = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        answered = [0]  # the busy connection's answers received so far
        done = threading.Event()

        def read_busy() -> None:
            # The end of what was read, shorter than a status line: one split by a read counts once.
            tail = b""
            while answered[0] < PIPELINED:
                chunk = busy.recv(1 << 16)
                if not chunk:
                    break
                seen = tail + chunk
                answered[0] += seen.count(STATUS)
                tail = seen[-(len(STATUS) - 1) :]
            done.set()

        reader = threading.Thread(target=read_busy, daemon=True)
        reader.start()
        busy.sendall(
            raw_request(get) * PIPELINED
        )  # every request at once: the worker never has to wait for the next
        other = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        started = time.monotonic()
        other.request("POST", "/a2a/jsonrpc", get, {"Content-Type": "application/json", **V1})
        reply = json.loads(other.getresponse().read())
        waited, busy_answered = time.monotonic() - started, answered[0]
        assert reply["result"]["id"] == task_id
        assert done.wait(60), "the pipelined requests were not all answered"
        other.close()
        busy.close()
    # Without the turn it waited for (nearly) the whole run: 370-400 of the 400.
    assert busy_answered < PIPELINED // 2, f"answered after {busy_answered} of {PIPELINED} ({waited:.3f} s)"
