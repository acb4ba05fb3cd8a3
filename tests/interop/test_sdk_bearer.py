"""The official SDK clients against an authenticated server (docs/security.md): each sends a bearer token —
an API key or a JWT — on every call of every binding, sees only its own principal's tasks, and fails with the
HTTP 401 without one.

Python (a2a-sdk): through its ``AuthInterceptor``, which reads the bearer scheme the card declares, and
through default headers of the ``httpx`` client it is given. JavaScript (@a2a-js/sdk): through its
authenticating ``fetch`` (``createAuthenticatingFetchWithRetry``), on 1.0 JSON-RPC, HTTP+JSON and the v0.3
compat transport.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from quineling.auth.keyfile import add_key
from tests.interop.conftest import sdk_unavailable
from tests.interop.test_js_sdk import JS_DIR, node  # noqa: F401 - node is a fixture
from tests.support.live import LiveServer, live_server
from tests.support.tokens import AUDIENCE, ISSUER, SigningKey, jwks

try:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.client.auth import AuthInterceptor, InMemoryContextCredentialStore
    from a2a.client.client import ClientCallContext
    from a2a.client.errors import A2AClientError
    from a2a.types.a2a_pb2 import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        SendMessageRequest,
        SubscribeToTaskRequest,
        TaskState,
    )
    from a2a.utils.errors import TaskNotFoundError
    from google.protobuf import json_format
except ImportError as exc:  # pragma: no cover - depends on the environment
    MISSING: str | None = f"a2a-sdk is not installed ({exc}); run: pip install -e '.[interop]'"
else:
    MISSING = None

pytestmark = [pytest.mark.interop, pytest.mark.slow]

SQUARE_SUM = "[2,3,4] | square | sum | report total"
BINDINGS = ["JSONRPC", "HTTP+JSON"]
RSA = SigningKey.rsa()


@pytest.fixture(scope="module")
def credentials(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("sdk-auth")
    keys = folder / "keys"
    tokens = {name: add_key(keys, name) for name in ("alice", "bob")}
    (folder / "jwks.json").write_text(json.dumps(jwks(RSA)))
    return {"keys": keys, "tokens": tokens, "jwks": folder / "jwks.json"}


@pytest.fixture(scope="module")
def server(credentials: dict[str, Any]) -> Iterator[LiveServer]:
    with live_server(
        auth_keys_file=str(credentials["keys"]),
        auth_jwks=str(credentials["jwks"]),
        auth_jwt_issuer=ISSUER,
        auth_jwt_audience=AUDIENCE,
    ) as live:
        yield live


# --- Python ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _sdk() -> None:
    if MISSING:
        sdk_unavailable(MISSING)


def message(text: str, **fields: str) -> SendMessageRequest:
    body = {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}], **fields}
    }
    return json_format.ParseDict(body, SendMessageRequest())


async def final_task(client: Any, request: Any, context: Any = None) -> Any:
    """Send; the task as stored once the send is done (a streaming client's first event is the task as
    submitted)."""
    events = [event async for event in client.send_message(request, context=context)]
    return await client.get_task(GetTaskRequest(id=events[0].task.id), context=context)


@pytest.mark.usefixtures("_sdk")
@pytest.mark.parametrize("binding", BINDINGS)
def test_python_sdk_auth_interceptor_uses_the_cards_bearer_scheme(
    server: LiveServer, credentials: dict[str, Any], binding: str
) -> None:
    """The interceptor finds the "bearer" HTTP scheme in the card's securityRequirements and adds the token
    to every call: send, get, list, streaming subscribe and cancel."""

    async def scenario() -> dict[str, Any]:
        store = InMemoryContextCredentialStore()
        await store.set_credentials("session-1", "bearer", credentials["tokens"]["alice"])
        context = ClientCallContext(state={"sessionId": "session-1"})
        config = ClientConfig(
            streaming=True, supported_protocol_bindings=[binding], use_client_preference=True
        )
        client = await ClientFactory(config).create_from_url(
            server.base_url, interceptors=[AuthInterceptor(store)]
        )
        try:
            created = await final_task(client, message(SQUARE_SUM), context)
            polled = await client.get_task(GetTaskRequest(id=created.id), context=context)
            listed = await client.list_tasks(ListTasksRequest(page_size=50), context=context)
            asked = await final_task(client, message(""), context)
            seen: list[str] = []

            async def follow() -> None:
                async for event in client.subscribe(SubscribeToTaskRequest(id=asked.id), context=context):
                    seen.append(event.WhichOneof("payload"))

            reading = asyncio.create_task(follow())
            while not seen:
                await asyncio.sleep(0.02)
            canceled = await client.cancel_task(CancelTaskRequest(id=asked.id), context=context)
            await asyncio.wait_for(reading, 20)
            without = await _raised(client.get_task(GetTaskRequest(id=created.id)))  # no session: no token
        finally:
            await client.close()
        return {"created": created, "polled": polled, "listed": listed, "seen": seen, "canceled": canceled,
                "without": without}  # fmt: skip

    out = asyncio.run(scenario())
    assert TaskState.Name(out["created"].status.state) == "TASK_STATE_COMPLETED"
    assert out["polled"].id == out["created"].id
    assert out["created"].id in [task.id for task in out["listed"].tasks]
    assert out["seen"][0] == "task" and out["seen"][-1] == "status_update"
    assert TaskState.Name(out["canceled"].status.state) == "TASK_STATE_CANCELED"
    assert isinstance(out["without"], A2AClientError) and "401" in str(out["without"])


async def _raised(call: Any) -> BaseException:
    try:
        await call
    except Exception as exc:  # noqa: BLE001 - the test inspects what the SDK raised
        return exc
    raise AssertionError("expected the SDK to raise")


@pytest.mark.usefixtures("_sdk")
@pytest.mark.parametrize("binding", BINDINGS)
def test_python_sdk_with_a_jwt_in_its_http_clients_headers(
    server: LiveServer, credentials: dict[str, Any], binding: str
) -> None:
    async def scenario() -> tuple[Any, BaseException, BaseException]:
        http_clients: list[httpx.AsyncClient] = []

        def client_for(token: str | None) -> Any:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            http_clients.append(httpx.AsyncClient(headers=headers))  # the SDK leaves a given one open
            config = ClientConfig(
                httpx_client=http_clients[-1],
                supported_protocol_bindings=[binding],
                use_client_preference=True,
            )
            return ClientFactory(config).create_from_url(server.base_url)

        mine = await client_for(RSA.token("jwt-alice"))
        other = await client_for(credentials["tokens"]["bob"])
        anonymous = await client_for(None)
        try:
            created = await final_task(mine, message(SQUARE_SUM))
            not_theirs = await _raised(other.get_task(GetTaskRequest(id=created.id)))
            refused = await _raised(anonymous.send_message(message(SQUARE_SUM)).__anext__())
        finally:
            for client in (mine, other, anonymous):
                await client.close()
            for http in http_clients:
                await http.aclose()
        return created, not_theirs, refused

    created, not_theirs, refused = asyncio.run(scenario())
    assert TaskState.Name(created.status.state) == "TASK_STATE_COMPLETED"
    assert isinstance(not_theirs, TaskNotFoundError), repr(not_theirs)
    assert isinstance(refused, A2AClientError) and "401" in str(refused), repr(refused)


# --- JavaScript -----------------------------------------------------------------------------------------


def run_js(
    node_path: str, server: LiveServer, scenario: str, transport: str, env: dict[str, str]
) -> dict[str, Any]:
    proc = subprocess.run(
        [node_path, "client.mjs", server.base_url, scenario, transport],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, f"client.mjs {scenario} {transport} failed:\n{proc.stderr}\n{proc.stdout}"
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("transport", ["jsonrpc", "rest"])
@pytest.mark.parametrize("credential", ["key", "jwt"])
def test_js_sdk_sends_a_bearer_token_on_every_call(
    node: str,  # noqa: F811 - the fixture
    server: LiveServer,
    credentials: dict[str, Any],
    transport: str,
    credential: str,
) -> None:
    token = credentials["tokens"]["alice"] if credential == "key" else RSA.token("js-alice")
    out = run_js(
        node,
        server,
        "bearer",
        transport,
        {"A2A_TOKEN": token, "A2A_OTHER_TOKEN": credentials["tokens"]["bob"]},
    )
    assert out["security"] == "Bearer" and out["requirements"] == [{"schemes": {"bearer": {"list": []}}}]
    assert out["created"]["state"] == "TASK_STATE_COMPLETED" and out["polled"]["id"] == out["created"]["id"]
    assert out["created"]["id"] in out["listed"]
    assert out["streamed"][0]["kind"] == "task" and out["streamed"][-1]["state"] == "TASK_STATE_COMPLETED"
    assert out["subscribed"][0] == {"kind": "task", "state": "TASK_STATE_INPUT_REQUIRED"}
    assert out["subscribed"][-1] == {"kind": "statusUpdate", "state": "TASK_STATE_CANCELED"}
    assert out["canceled"]["state"] == "TASK_STATE_CANCELED"
    for call in ("otherGet", "otherCancel"):
        assert out[call]["raised"] and out[call]["isTaskNotFound"], out[call]
    for call in ("anonymousGet", "anonymousSend"):
        assert out[call]["raised"] and not out[call]["isTaskNotFound"], out[call]
        assert "401" in out[call]["message"] or "Authentication required" in out[call]["message"], out[call]


def test_js_sdk_v03_compat_transport_with_a_bearer_token(
    node: str,  # noqa: F811 - the fixture
    server: LiveServer,
    credentials: dict[str, Any],
) -> None:
    out = run_js(node, server, "bearerV03", "jsonrpc", {"A2A_TOKEN": credentials["tokens"]["alice"]})
    assert out["protocolVersion"] == "0.3"
    assert out["created"]["state"] == "TASK_STATE_COMPLETED" and out["polled"]["id"] == out["created"]["id"]
    assert out["anonymousGet"]["raised"] and not out["anonymousGet"]["isTaskNotFound"], out["anonymousGet"]
