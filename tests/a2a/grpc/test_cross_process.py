"""gRPC on one process, JSON-RPC on another, one Redis between them: one task followed across both, with the
same principals (an API key) and isolation, idempotency keys and resumable streams; then SIGTERM stops the
gRPC process gracefully. ``quineling serve-grpc`` runs as a second host would run it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.a2a.grpc.conftest import SQUARE_SUM, message, refusal
from tests.conftest import REDIS_URL, needs_redis
from tests.support.live import ROOT, LiveServer, free_port, live_server
from tests.support.principals import keys_file
from tests.support.sse import parse_sse

pytestmark = [pytest.mark.slow, pytest.mark.redis, needs_redis]


@dataclass
class Pair:
    http: LiveServer
    grpc_proc: subprocess.Popen[bytes]
    stub: Any
    channel: Any
    tokens: dict[str, str]
    log: Path


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"), ("a2a-version", "1.0"))


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    folder = Path(tempfile.mkdtemp(prefix="quineling-grpc-"))
    path, tokens = keys_file(folder, "alice", "bob")
    with live_server(store_url=REDIS_URL, workers=2, auth_keys_file=str(path)) as http:
        port = free_port()
        env = {
            **os.environ,
            "QUINELING_STORE_URL": REDIS_URL,
            "QUINELING_STORE_PREFIX": http.prefix,
            "QUINELING_AUTH_KEYS_FILE": str(path),
            "QUINELING_TENANTS": "*",
            "QUINELING_GRPC_PORT": str(port),
            "PYTHONPATH": str(ROOT),
        }
        log = folder / "grpc.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "quineling", "serve-grpc"], cwd=ROOT, env=env, stdout=sink, stderr=sink
            )
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        try:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 20
            while True:
                assert proc.poll() is None, log.read_text()
                try:
                    if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                        break
                except grpc.RpcError:
                    assert time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
            yield Pair(http, proc, a2a_pb2_grpc.A2AServiceStub(channel), channel, tokens, log)
        finally:
            channel.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def rpc(pair: Pair, who: str, method: str, params: dict[str, Any], **headers: str) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = requests.post(
        pair.http.url("/a2a/jsonrpc"),
        json=body,
        headers={"A2A-Version": "1.0", "Authorization": f"Bearer {pair.tokens[who]}", **headers},
        timeout=10,
    )
    return answer.json()


def states(events: list[dict[str, Any]]) -> list[str]:
    return [
        e.get("task", e.get("statusUpdate", {})).get("status", {}).get("state", "artifact") for e in events
    ]


def test_one_task_followed_across_the_grpc_and_the_json_rpc_process(pair: Pair) -> None:
    alice = bearer(pair.tokens["alice"])
    asked = pair.stub.SendMessage(message({"text": " "}), metadata=alice).task
    seen = rpc(pair, "alice", "GetTask", {"id": asked.id})["result"]
    assert seen["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "error" in rpc(pair, "bob", "GetTask", {"id": asked.id})
    assert refusal(
        pair.stub.GetTask, a2a_pb2.GetTaskRequest(id=asked.id), metadata=bearer(pair.tokens["bob"])
    )[0] == ("NOT_FOUND")

    stream = pair.stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id=asked.id), metadata=alice)
    followed = [json_format.MessageToDict(next(stream))]
    reader = threading.Thread(target=lambda: followed.extend(json_format.MessageToDict(e) for e in stream))
    reader.start()
    follow_up = {
        "message": {**json_format.MessageToDict(message({"text": SQUARE_SUM}).message), "taskId": asked.id}
    }
    done = rpc(pair, "alice", "SendMessage", follow_up)["result"]["task"]
    reader.join(15)
    assert not reader.is_alive()
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (
        states(followed)[0] == "TASK_STATE_INPUT_REQUIRED" and states(followed)[-1] == "TASK_STATE_COMPLETED"
    )

    # The gRPC stream's first event id resumes the same task on the JSON-RPC process, from the store's log.
    first_id = followed[0]["task"]["metadata"]["eventId"]
    body = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": asked.id}}
    headers = {
        "A2A-Version": "1.0",
        "Authorization": f"Bearer {pair.tokens['alice']}",
        "Accept": "text/event-stream",
        "Last-Event-ID": first_id,
    }
    with requests.post(
        pair.http.url("/a2a/jsonrpc"), json=body, headers=headers, stream=True, timeout=15
    ) as sse:
        resumed = [envelope["result"] for _kind, envelope in parse_sse(sse.iter_content(None))]
    assert states(resumed) == states(followed)[1:]


def test_an_idempotency_key_spans_the_processes(pair: Pair) -> None:
    alice = bearer(pair.tokens["alice"])
    request = message({"data": {"operation": "worldCreate", "worldKey": "cross", "seed": 7}})
    first = pair.stub.SendMessage(request, metadata=(*alice, ("idempotency-key", "cross-1"))).task
    again = rpc(
        pair, "alice", "SendMessage", json_format.MessageToDict(request), **{"Idempotency-Key": "cross-1"}
    )
    assert again["result"]["task"]["id"] == first.id


def test_sigterm_stops_the_grpc_process_gracefully(pair: Pair) -> None:
    pair.grpc_proc.send_signal(signal.SIGTERM)
    assert pair.grpc_proc.wait(10) == 0
    assert "gRPC server stopped" in pair.log.read_text()


def test_quineling_serve_runs_grpc_as_a_sibling_on_redis() -> None:
    """gunicorn's master (deploy/gunicorn.conf.py, as quineling serve) starts serve-grpc beside its workers on
    Redis: the card lists it, its calls join /metrics, and it stops with the master."""
    port = free_port()
    with live_server(store_url=REDIS_URL, workers=1, grpc_port=port) as http:
        card = requests.get(
            http.url("/.well-known/agent-card.json"), headers={"A2A-Version": "1.0"}, timeout=5
        )
        assert {
            "url": f"127.0.0.1:{port}",
            "protocolBinding": "GRPC",
            "protocolVersion": "1.0",
        } in card.json()["supportedInterfaces"]
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=20)
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            assert refusal(stub.GetTask, a2a_pb2.GetTaskRequest(id="sibling"))[0] == "NOT_FOUND"
        scraped = requests.get(http.url("/metrics"), timeout=5).text
        assert (
            'quineling_requests_total{binding="grpc",method="GetTask",outcome="TASK_NOT_FOUND"} 1.0'
            in scraped
        )
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        with pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
