"""What guards a gRPC call, shared with the HTTP bindings: bearer credentials from the metadata with the same
principals and isolation, one rate-limit budget, TLS from the settings, the stream cap, and a graceful stop
that ends open streams."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc
import pytest
from a2a.types import a2a_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.a2a.grpc.conftest import SQUARE_SUM, data, grpc_stack, message, refusal
from tests.support.principals import keys_file
from tests.support.redis_tls import tls_material, tls_unavailable

CREATE = {"operation": "create", "thought": SQUARE_SUM}


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"), ("a2a-version", "1.0"))


def test_credentials_principals_and_isolation_as_on_http(tmp_path: Path) -> None:
    path, tokens = keys_file(tmp_path, "alice", "bob")
    with grpc_stack(auth_keys_file=str(path)) as stack:
        assert refusal(stack.stub.GetTask, a2a_pb2.GetTaskRequest(id="x"))[:2] == (
            "UNAUTHENTICATED",
            "UNAUTHENTICATED",
        )
        wrong = refusal(stack.stub.GetTask, a2a_pb2.GetTaskRequest(id="x"), metadata=bearer("not-a-key"))
        assert wrong[0] == "UNAUTHENTICATED"
        task = stack.stub.SendMessage(message(data(CREATE)), metadata=bearer(tokens["alice"])).task
        hidden = refusal(
            stack.stub.GetTask, a2a_pb2.GetTaskRequest(id=task.id), metadata=bearer(tokens["bob"])
        )
        assert hidden[:2] == ("NOT_FOUND", "TASK_NOT_FOUND")
        listed = stack.stub.ListTasks(a2a_pb2.ListTasksRequest(), metadata=bearer(tokens["bob"]))
        assert list(listed.tasks) == []
        # The same principal on JSON-RPC sees the task gRPC made; the other one does not.
        http = stack.http()
        for who, found in (("alice", True), ("bob", False)):
            answer = http.post(
                "/a2a/jsonrpc",
                json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task.id}},
                headers={"A2A-Version": "1.0", "Authorization": f"Bearer {tokens[who]}"},
            ).get_json()
            assert ("result" in answer) is found, answer


def test_one_rate_limit_budget_across_the_bindings() -> None:
    with grpc_stack(rate_limit="3/hour") as stack:
        http = stack.http()  # the test client's address is 127.0.0.1, as the gRPC peer's
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        assert http.post("/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}).status_code == 200
        assert refusal(stack.stub.GetTask, a2a_pb2.GetTaskRequest(id="x"))[0] == "NOT_FOUND"
        assert http.post("/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}).status_code == 200
        code, reason, metadata = refusal(stack.stub.GetTask, a2a_pb2.GetTaskRequest(id="x"))
        assert (code, reason, metadata["limit"]) == (
            "RESOURCE_EXHAUSTED",
            "RATE_LIMIT_EXCEEDED",
            "3 per 1 hour",
        )
        assert http.post("/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}).status_code == 429


def test_tls_from_the_settings_with_a_throwaway_ca() -> None:
    if (reason := tls_unavailable()) is not None:
        pytest.skip(reason)
    with tls_material() as certs:
        trusted = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
        settings = {"grpc_tls_cert_file": str(certs.cert), "grpc_tls_key_file": str(certs.key)}
        with grpc_stack(credentials=trusted, **settings) as stack:
            assert stack.send(data(CREATE))["status"]["state"] == "TASK_STATE_COMPLETED"
            strangers = grpc.ssl_channel_credentials(root_certificates=certs.other_ca.read_bytes())
            for credentials in (strangers, None):
                target = f"127.0.0.1:{stack.port}"
                channel = (
                    grpc.insecure_channel(target)
                    if credentials is None
                    else grpc.secure_channel(target, credentials)
                )
                with channel:
                    with pytest.raises(grpc.RpcError) as info:
                        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
                    assert info.value.code() == grpc.StatusCode.UNAVAILABLE


def test_stream_cap_health_and_a_stop_that_ends_open_streams() -> None:
    with grpc_stack(grpc_threads=4) as stack:  # at most 2 streams
        health = health_pb2_grpc.HealthStub(stack.channel)
        serving = health_pb2.HealthCheckResponse.SERVING
        assert health.Check(health_pb2.HealthCheckRequest(service="lf.a2a.v1.A2AService")).status == serving
        waiting = [stack.send({"text": " "})["id"] for _ in range(2)]
        streams = [
            stack.stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id=task_id)) for task_id in waiting
        ]
        firsts = [next(stream) for stream in streams]  # each holds its slot now
        assert [first.task.id for first in firsts] == waiting
        third = refusal(stack.stub.SubscribeToTask, a2a_pb2.SubscribeToTaskRequest(id=waiting[0]))
        assert third[:2] == ("UNAVAILABLE", "STREAM_LIMIT_REACHED")
        ended: list[str] = []

        def read(stream: object) -> None:
            try:
                for _ in stream:  # type: ignore[attr-defined]
                    pass
                ended.append("ok")
            except grpc.RpcError as exc:
                ended.append(exc.code().name)

        readers = [threading.Thread(target=read, args=(stream,)) for stream in streams]
        for reader in readers:
            reader.start()
        started = time.monotonic()
        stack.server.stop(10.0)
        for reader in readers:
            reader.join(10)
        assert ended == ["ok", "ok"]  # the streams ended cleanly: the clients subscribe again elsewhere
        assert time.monotonic() - started < 5  # within a poll slice or so, not the grace period


@pytest.mark.parametrize(
    ("peer", "address"),
    [
        ("ipv4:127.0.0.1:5000", "127.0.0.1"),
        ("ipv6:%5B::1%5D:5000", "::1"),  # how grpcio spells an IPv6 peer
        ("ipv6:[2001:db8::1]:5000", "2001:db8::1"),
        ("unix:/run/quineling.sock", "/run/quineling.sock"),
    ],
)
def test_an_anonymous_callers_budget_is_its_peer_address(peer: str, address: str) -> None:
    from quineling.a2a.grpc.servicer import _peer_address

    assert _peer_address(peer) == address
