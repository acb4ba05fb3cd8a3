"""The official Python SDK (a2a-sdk, extra ``interop`` in pyproject.toml) against a real server, unmodified.

Requests are built with the SDK's protobuf types and sent with its ClientFactory clients over JSON-RPC,
HTTP+JSON and gRPC (blocking and streaming), plus its v0.3 compat JSON-RPC transport. The server serves gRPC
beside HTTP (QUINELING_GRPC_PORT): inside its one gthread worker on memory://, as a sibling process on the
cluster (docs/decisions/0029-grpc-binding.md).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from tests.conftest import ON_CLUSTER, cluster_url
from tests.interop.conftest import sdk_unavailable
from tests.support.live import LiveServer, free_port, live_server

try:
    import grpc
    import httpx
    from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import (
        AgentCard,
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        SendMessageRequest,
        StreamResponse,
        SubscribeToTaskRequest,
        Task,
        TaskState,
    )
    from a2a.utils.errors import (
        A2AError,
        ContentTypeNotSupportedError,
        TaskNotCancelableError,
        TaskNotFoundError,
        UnsupportedOperationError,
    )
    from google.protobuf import json_format
except ImportError as exc:  # pragma: no cover - depends on the environment
    MISSING: str | None = f"a2a-sdk is not installed ({exc}); run: pip install -e '.[interop]'"
else:
    MISSING = None

pytestmark = [pytest.mark.interop, pytest.mark.slow]

SQUARE_SUM = "[2,3,4] | square | sum | report total"
BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
COMPLETED = "TASK_STATE_COMPLETED"
TRANSPORTS = {"JSONRPC": "JsonRpcTransport", "HTTP+JSON": "RestTransport", "GRPC": "GrpcTransport"}


@pytest.fixture(scope="module", autouse=True)
def _sdk() -> None:
    if MISSING:
        sdk_unavailable(MISSING)


@pytest.fixture(scope="module", params=["memory", pytest.param("cluster", marks=ON_CLUSTER)])
def server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """The interop conftest's server, serving gRPC too: on memory:// inside its one (gthread) worker, on the
    cluster as the sibling process beside two gevent workers."""
    if request.param == "cluster":
        with live_server(store_url=cluster_url(), workers=2, grpc_port=free_port()) as live:
            yield live
        return
    with live_server(store_url="memory://", workers=1, worker_class="gthread", grpc_port=free_port()) as live:
        yield live


def client_config(**options: Any) -> ClientConfig:
    """A ClientConfig that can also dial gRPC (the SDK's gRPC transport needs a channel factory)."""
    return ClientConfig(grpc_channel_factory=grpc.aio.insecure_channel, **options)


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(scenario())


async def connect(server: LiveServer, binding: str, *, streaming: bool = False) -> Client:
    config = client_config(
        streaming=streaming, supported_protocol_bindings=[binding], use_client_preference=True
    )
    return await ClientFactory(config).create_from_url(server.base_url)


def message(part: dict[str, Any], **fields: str) -> SendMessageRequest:
    body = {"message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [part], **fields}}
    return json_format.ParseDict(body, SendMessageRequest())


def data(payload: dict[str, Any]) -> dict[str, Any]:
    return {"mediaType": "application/json", "data": payload}


async def events(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


async def drain(stream: AsyncIterator[StreamResponse]) -> None:
    async for _ in stream:
        pass


async def send(client: Client, request: SendMessageRequest) -> Task:
    (response,) = await events(client, request)  # a blocking client yields exactly the final task
    assert response.WhichOneof("payload") == "task", response
    return response.task


def state(task: Task) -> str:
    return TaskState.Name(task.status.state)


def kinds_and_states(stream: list[StreamResponse]) -> list[tuple[str, str]]:
    """Each stream event as (payload kind, task state or "")."""
    out = []
    for event in stream:
        kind = event.WhichOneof("payload")
        value = getattr(event, kind)
        has_status = kind in ("task", "status_update")
        out.append((kind, TaskState.Name(value.status.state) if has_status else ""))
    return out


def result(task: Task) -> Any:
    (artifact,) = task.artifacts
    assert artifact.artifact_id == "quineling-result"
    return json_format.MessageToDict(artifact.parts[0].data)


def created_id(task: Task) -> str:
    assert state(task) == COMPLETED, task.status
    payload = result(task)
    assert payload["operation"] == "create" and payload["result"]["status"] == "created"
    return payload["result"]["artifact"]["id"]


async def raised(call: Awaitable[Any]) -> A2AError:
    with pytest.raises(A2AError) as info:
        await call
    return info.value


@pytest.mark.parametrize("binding", BINDINGS)
def test_discovers_the_card(server: LiveServer, binding: str) -> None:
    async def scenario() -> tuple[AgentCard, str]:
        # A bare httpx client sends no A2A-Version, so this parses the v0.3+1.0 superset card (Agent Card in
        # docs/compat-v03.md); the factory's own fetch sends A2A-Version: 1.0 and gets the pure 1.0 card.
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, server.base_url).get_agent_card()
        client = await connect(server, binding)
        await client.close()
        return card, type(client._transport).__name__  # the transport the factory chose from the card

    card, transport = run(scenario)
    assert transport == TRANSPORTS[binding]
    interfaces = [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces]
    assert interfaces[:2] == [
        (server.url("/a2a/jsonrpc"), "JSONRPC", "1.0"),
        (server.url("/a2a/rest"), "HTTP+JSON", "1.0"),
    ]
    assert (server.url("/a2a/jsonrpc"), "JSONRPC", "0.3") in interfaces
    (grpc_interface,) = [i for i in interfaces if i[1] == "GRPC"]
    assert grpc_interface[2] == "1.0" and grpc_interface[0].startswith("127.0.0.1:")
    assert card.version == "0.0.0-experimental"
    assert card.capabilities.streaming and not card.capabilities.push_notifications
    assert [skill.id for skill in card.skills] == ["build", "ranch", "execute"]
    assert all(skill.examples for skill in card.skills)


@pytest.mark.parametrize("binding", BINDINGS)
def test_create_inspect_run_reproduce(server: LiveServer, binding: str) -> None:
    async def scenario() -> dict[str, Task]:
        client = await connect(server, binding)
        try:
            created = await send(client, message(data({"operation": "create", "thought": SQUARE_SUM})))
            artifact_id = created_id(created)
            inspected = await send(client, message(data({"operation": "inspect", "artifactId": artifact_id})))
            ran = await send(client, message(data({"operation": "run", "artifactId": artifact_id})))
            record_id = result(ran)["result"]["id"]
            reproduced = await send(
                client,
                message(data({"operation": "reproduce", "artifactId": artifact_id, "recordId": record_id})),
            )
        finally:
            await client.close()
        return {"create": created, "inspect": inspected, "run": ran, "reproduce": reproduced}

    tasks = run(scenario)
    artifact_id = created_id(tasks["create"])
    source = result(tasks["create"])["result"]["artifact"]["source"]
    assert state(tasks["inspect"]) == COMPLETED
    assert result(tasks["inspect"])["result"]["id"] == artifact_id
    assert result(tasks["inspect"])["result"]["source"] == source
    ran = result(tasks["run"])["result"]
    assert state(tasks["run"]) == COMPLETED and ran["outputs"]["total"] == 29
    child = result(tasks["reproduce"])["result"]
    assert child["artifact"]["id"] == artifact_id and child["artifact"]["source"] == source
    assert child["record"]["parentRecordId"] == ran["id"] != child["record"]["id"]
    assert child["record"]["outputs"]["total"] == 29


@pytest.mark.parametrize("binding", BINDINGS)
def test_streamed_create_sends_task_first_and_artifact_before_terminal_status(
    server: LiveServer, binding: str
) -> None:
    async def scenario() -> list[StreamResponse]:
        client = await connect(server, binding, streaming=True)
        try:
            return await events(client, message(data({"operation": "create", "thought": SQUARE_SUM})))
        finally:
            await client.close()

    stream = run(scenario)
    kinds = [event.WhichOneof("payload") for event in stream]
    assert kinds[0] == "task"
    assert kinds[-1] == "status_update" and TaskState.Name(stream[-1].status_update.status.state) == COMPLETED
    assert "artifact_update" in kinds[:-1]
    update = stream[kinds.index("artifact_update")].artifact_update
    assert update.task_id == stream[0].task.id and update.artifact.artifact_id == "quineling-result"
    assert json_format.MessageToDict(update.artifact.parts[0].data)["result"]["status"] == "created"


@pytest.mark.parametrize("binding", BINDINGS)
def test_get_task_polls_with_history_length(server: LiveServer, binding: str) -> None:
    async def scenario() -> tuple[Task, Task, Task]:
        client = await connect(server, binding)
        try:
            created = await send(client, message(data({"operation": "create", "thought": SQUARE_SUM})))
            full = await client.get_task(GetTaskRequest(id=created.id))
            none = await client.get_task(GetTaskRequest(id=created.id, history_length=0))
        finally:
            await client.close()
        return created, full, none

    created, full, none = run(scenario)
    created_id(created)
    assert full.id == created.id and state(full) == COMPLETED and len(full.history) >= 1
    assert result(full) == result(created)
    assert len(none.history) == 0


@pytest.mark.parametrize("binding", BINDINGS)
def test_list_tasks_filters_by_context(server: LiveServer, binding: str) -> None:
    async def scenario() -> tuple[Task, Any]:
        client = await connect(server, binding)
        try:
            created = await send(client, message(data({"operation": "create", "thought": SQUARE_SUM})))
            page = await client.list_tasks(
                ListTasksRequest(context_id=created.context_id, page_size=10, include_artifacts=True)
            )
        finally:
            await client.close()
        return created, page

    created, page = run(scenario)
    assert [task.id for task in page.tasks] == [created.id]
    assert result(page.tasks[0]) == result(created)
    assert (page.total_size, page.page_size, page.next_page_token) == (1, 10, "")


@pytest.mark.parametrize("binding", BINDINGS)
def test_clarification_then_follow_up_on_the_same_task(server: LiveServer, binding: str) -> None:
    async def scenario() -> tuple[Task, Task]:
        client = await connect(server, binding)
        try:
            asked = await send(client, message({"text": "   "}))
            follow = await send(
                client,
                message(
                    data({"operation": "create", "thought": SQUARE_SUM}),
                    taskId=asked.id,
                    contextId=asked.context_id,
                ),
            )
        finally:
            await client.close()
        return asked, follow

    asked, follow = run(scenario)
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
    assert result(asked)["result"]["status"] == "clarify"
    assert (follow.id, follow.context_id) == (asked.id, asked.context_id)
    created_id(follow)  # the result replaced the clarification in the one quineling-result artifact
    assert len(follow.history) > len(asked.history)


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel_input_required_then_completed_raises_typed_error(server: LiveServer, binding: str) -> None:
    async def scenario() -> tuple[Task, Task, A2AError]:
        client = await connect(server, binding)
        try:
            waiting = await send(client, message({"text": ""}))
            canceled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
            completed = await send(client, message(data({"operation": "create", "thought": SQUARE_SUM})))
            error = await raised(client.cancel_task(CancelTaskRequest(id=completed.id)))
        finally:
            await client.close()
        return waiting, canceled, error

    waiting, canceled, error = run(scenario)
    assert state(waiting) == "TASK_STATE_INPUT_REQUIRED"
    assert canceled.id == waiting.id and state(canceled) == "TASK_STATE_CANCELED"
    assert isinstance(error, TaskNotCancelableError), repr(error)


@pytest.mark.parametrize("binding", BINDINGS)
def test_unknown_task_raises_task_not_found(server: LiveServer, binding: str) -> None:
    async def scenario() -> list[A2AError]:
        missing = f"no-such-task-{uuid.uuid4()}"
        client = await connect(server, binding)
        streaming = await connect(server, binding, streaming=True)
        try:
            return [
                await raised(client.get_task(GetTaskRequest(id=missing))),
                await raised(client.cancel_task(CancelTaskRequest(id=missing))),
                await raised(send(client, message({"text": SQUARE_SUM}, taskId=missing))),
                await raised(drain(streaming.subscribe(SubscribeToTaskRequest(id=missing)))),
            ]
        finally:
            await client.close()
            await streaming.close()

    for error in run(scenario):
        assert isinstance(error, TaskNotFoundError), repr(error)


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_v03_compat_client_over_json_rpc(server: LiveServer, streaming: bool) -> None:
    """The SDK picks its v0.3 compat transport for a card interface with protocolVersion 0.3."""

    async def scenario() -> tuple[str, list[StreamResponse], Task, A2AError]:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, server.base_url).get_agent_card()
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
        client = ClientFactory(ClientConfig(streaming=streaming)).create(card)
        try:
            stream = await events(client, message(data({"operation": "create", "thought": SQUARE_SUM})))
            task_id = stream[0].task.id
            polled = await client.get_task(GetTaskRequest(id=task_id))
            error = await raised(client.get_task(GetTaskRequest(id="no-such-task")))
            transport = type(client._transport).__name__  # which SDK transport the factory chose
        finally:
            await client.close()
        return transport, stream, polled, error

    transport, stream, polled, error = run(scenario)
    assert transport == "CompatJsonRpcTransport"
    kinds = [event.WhichOneof("payload") for event in stream]
    assert kinds[0] == "task"
    if streaming:
        assert "artifact_update" in kinds and kinds[-1] == "status_update"
    else:
        assert kinds == ["task"]
    created_id(polled)
    assert isinstance(error, TaskNotFoundError), repr(error)


@pytest.mark.parametrize("binding", BINDINGS)
def test_subscribe_to_interrupted_task_sees_the_follow_up_complete_it(
    server: LiveServer, binding: str
) -> None:
    async def scenario() -> tuple[Task, Task, list[StreamResponse]]:
        client = await connect(server, binding, streaming=True)
        blocking = await connect(server, binding)
        try:
            asked = await send(blocking, message({"text": " "}))
            stream: list[StreamResponse] = []
            first = asyncio.Event()

            async def read() -> None:
                async for event in client.subscribe(SubscribeToTaskRequest(id=asked.id)):
                    stream.append(event)
                    first.set()

            reader = asyncio.create_task(read())
            await asyncio.wait_for(first.wait(), 10)
            done = await send(blocking, message({"text": SQUARE_SUM}, taskId=asked.id))
            await asyncio.wait_for(reader, 10)
        finally:
            await client.close()
            await blocking.close()
        return asked, done, stream

    asked, done, stream = run(scenario)
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED"
    assert done.id == asked.id and state(done) == COMPLETED
    events = kinds_and_states(stream)
    assert events[0] == ("task", "TASK_STATE_INPUT_REQUIRED")
    assert ("artifact_update", "") in events
    assert events[-1] == ("status_update", COMPLETED)


@pytest.mark.parametrize("binding", BINDINGS)
def test_streamed_follow_up_ends_at_input_required(server: LiveServer, binding: str) -> None:
    async def scenario() -> list[StreamResponse]:
        client = await connect(server, binding, streaming=True)
        try:
            asked = [event async for event in client.send_message(message({"text": ""}))]
            task_id = asked[0].task.id
            return await events(client, message({"text": ""}, taskId=task_id))
        finally:
            await client.close()

    stream = kinds_and_states(run(scenario))
    assert stream[0][0] == "task"
    assert stream[-1] == ("status_update", "TASK_STATE_INPUT_REQUIRED")
    assert ("artifact_update", "") in stream[:-1]


@pytest.mark.parametrize("binding", BINDINGS)
def test_list_tasks_pages_newest_first_with_page_tokens(server: LiveServer, binding: str) -> None:
    async def scenario() -> tuple[list[str], list[Any]]:
        context_id = str(uuid.uuid4())
        client = await connect(server, binding)
        try:
            created = [
                (await send(client, message({"text": SQUARE_SUM}, contextId=context_id))).id for _ in range(3)
            ]
            pages, token = [], ""
            while True:
                page = await client.list_tasks(
                    ListTasksRequest(context_id=context_id, page_size=2, page_token=token)
                )
                pages.append(page)
                token = page.next_page_token
                if not token or len(pages) >= 5:
                    break
        finally:
            await client.close()
        return created, pages

    created, pages = run(scenario)
    assert [len(page.tasks) for page in pages] == [2, 1]
    assert [task.id for page in pages for task in page.tasks] == created[::-1]
    assert all(page.total_size == 3 for page in pages)
    assert all(not task.artifacts for page in pages for task in page.tasks)  # includeArtifacts unset


@pytest.mark.parametrize("binding", BINDINGS)
def test_runtime_failure_and_message_to_terminal_task(server: LiveServer, binding: str) -> None:
    async def scenario() -> tuple[Task, A2AError]:
        client = await connect(server, binding)
        try:
            failed = await send(client, message(data({"operation": "run", "artifactId": "nope"})))
            error = await raised(send(client, message({"text": SQUARE_SUM}, taskId=failed.id)))
        finally:
            await client.close()
        return failed, error

    failed, error = run(scenario)
    assert state(failed) == "TASK_STATE_FAILED" and not failed.artifacts
    metadata = json_format.MessageToDict(failed.status.message.metadata)
    assert set(metadata["quinelingError"]) == {"code", "message", "path"}
    assert isinstance(error, UnsupportedOperationError), repr(error)


def test_v03_compat_client_clarifies_and_cancels(server: LiveServer) -> None:
    async def scenario() -> tuple[Task, Task, Task, list[A2AError]]:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, server.base_url).get_agent_card()
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
        client = ClientFactory(ClientConfig(streaming=False)).create(card)
        streaming = ClientFactory(ClientConfig(streaming=True)).create(card)
        try:
            asked = await send(client, message({"text": ""}))
            follow = await send(client, message({"text": " "}, taskId=asked.id, contextId=asked.context_id))
            canceled = await client.cancel_task(CancelTaskRequest(id=asked.id))
            # Canceling a canceled task returns it again.
            again = await client.cancel_task(CancelTaskRequest(id=asked.id))
            assert state(again) == "TASK_STATE_CANCELED"
            completed = await send(client, message({"text": SQUARE_SUM}))
            errors = [
                await raised(client.cancel_task(CancelTaskRequest(id=completed.id))),
                await raised(client.cancel_task(CancelTaskRequest(id=asked.id + "-missing"))),
                await raised(drain(streaming.subscribe(SubscribeToTaskRequest(id=asked.id)))),
                await raised(drain(streaming.subscribe(SubscribeToTaskRequest(id=asked.id + "-missing")))),
            ]
        finally:
            await client.close()
            await streaming.close()
        return asked, follow, canceled, errors

    asked, follow, canceled, errors = run(scenario)
    assert state(asked) == state(follow) == "TASK_STATE_INPUT_REQUIRED"
    assert follow.id == asked.id and len(follow.history) > len(asked.history)
    assert canceled.id == asked.id and state(canceled) == "TASK_STATE_CANCELED"
    expected = [TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError, TaskNotFoundError]
    assert [type(error) for error in errors] == expected, errors


IDLE_SECONDS = 30.0


def test_idle_subscriptions_outlive_the_sdk_default_read_timeout(server: LiveServer) -> None:
    """ClientFactory without an HTTP client of its own reads with a 5 s timeout: the server's keep-alive comments
    (every 3 s by default) must keep an idle subscription open, on both bindings, for as long as it is held."""

    async def hold(binding: str) -> tuple[float, list[StreamResponse]]:
        client = await connect(server, binding, streaming=True)
        blocking = await connect(server, binding)
        try:
            asked = await send(blocking, message({"text": " "}))
            stream: list[StreamResponse] = []
            first = asyncio.Event()

            async def read() -> None:
                async for event in client.subscribe(SubscribeToTaskRequest(id=asked.id)):
                    stream.append(event)
                    first.set()

            reader = asyncio.create_task(read())
            await asyncio.wait_for(first.wait(), 10)
            started = asyncio.get_running_loop().time()
            await asyncio.sleep(IDLE_SECONDS)  # nothing happens to the task meanwhile
            assert not reader.done(), reader.exception()
            await send(blocking, message({"text": SQUARE_SUM}, taskId=asked.id))
            await asyncio.wait_for(reader, 10)  # a timeout of the SDK would raise here
            return asyncio.get_running_loop().time() - started, stream
        finally:
            await client.close()
            await blocking.close()

    async def both() -> list[tuple[float, list[StreamResponse]]]:
        return list(await asyncio.gather(*(hold(binding) for binding in BINDINGS)))

    for held, stream in run(both):
        assert held >= IDLE_SECONDS
        assert kinds_and_states(stream)[-1] == ("status_update", COMPLETED)


@pytest.mark.parametrize("binding", BINDINGS)
def test_accepted_output_modes_through_the_client_config(server: LiveServer, binding: str) -> None:
    """ClientConfig.accepted_output_modes reaches the server: text/plain gets the summary part, and a type the
    agent cannot produce is the typed ContentTypeNotSupportedError."""

    async def scenario() -> tuple[Task, A2AError]:
        async def with_modes(modes: list[str]) -> Client:
            config = client_config(
                streaming=False,
                supported_protocol_bindings=[binding],
                use_client_preference=True,
                accepted_output_modes=modes,
            )
            return await ClientFactory(config).create_from_url(server.base_url)

        text_client, image_client = await with_modes(["text/plain"]), await with_modes(["image/png"])
        try:
            task = await send(text_client, message({"text": SQUARE_SUM}))
            error = await raised(send(image_client, message({"text": SQUARE_SUM})))
        finally:
            await text_client.close()
            await image_client.close()
        return task, error

    task, error = run(scenario)
    assert state(task) == COMPLETED
    (artifact,) = task.artifacts
    assert [part.WhichOneof("content") for part in artifact.parts] == ["text"]
    assert artifact.parts[0].text.startswith("create: created (")
    assert isinstance(error, ContentTypeNotSupportedError), repr(error)


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_retried_world_command_is_acknowledged_once(server: LiveServer, binding: str) -> None:
    """docs/ranch-guide.md's world command, sent twice (a new messageId each: a transport retry only): the
    second send answers the first acknowledgement and the world advances once."""

    async def scenario() -> tuple[Any, Any, Any, Any]:
        client = await connect(server, binding)
        try:

            async def op(request: dict[str, Any]) -> Any:
                return result(await send(client, message(data(request))))["result"]

            # One world per runtime scope: every binding's run names the same one (worldCreate is idempotent).
            world = await op({"operation": "worldCreate", "worldKey": "py-garden", "seed": 23})
            before = await op({"operation": "worldInspect", "worldId": world["id"]})
            command = {
                "operation": "worldCommand",
                "worldId": world["id"],
                "expectedRevision": before["revision"],
                "sequence": before["nextSequence"],
                "command": {"kind": "advance", "ticks": 4},
            }
            first, again = await op(command), await op(command)
            after = await op({"operation": "worldInspect", "worldId": world["id"]})
        finally:
            await client.close()
        return before, first, again, after

    before, first, again, after = run(scenario)
    assert again == first
    assert after["revision"] == before["revision"] + 1
