"""quineling.client against this project's live server (gunicorn): JSON-RPC 1.0, HTTP+JSON 1.0 and v0.3
JSON-RPC, anonymous and with bearer tokens (API keys and per-principal isolation)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quineling.auth.keyfile import add_key
from quineling.client import (
    A2AClient,
    AgentError,
    AuthenticationFailed,
    CardCache,
    Credentials,
    SharedState,
    Task,
    TaskState,
    load_card,
    parse_card,
)
from quineling.client.messages import data_message, text_message
from quineling.client.models import ArtifactUpdate, StatusUpdate
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM

pytestmark = pytest.mark.slow
FLAVOURS = ["JSONRPC", "HTTP+JSON", "v0.3"]


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(store_url="memory://", workers=1) as live:
        yield live


def connect(base: str, flavour: str, **options: Any) -> A2AClient:
    options.setdefault("shared_state", SharedState.from_url("memory://"))
    if flavour != "v0.3":
        return A2AClient.connect(base, transports=[flavour], cache=CardCache(), **options)
    card = load_card(base, cache=CardCache())
    legacy = {**card.raw, "supportedInterfaces": [i for i in card.raw["supportedInterfaces"]
                                                  if i["protocolVersion"] == "0.3"]}  # fmt: skip
    return A2AClient(parse_card(legacy, source=card.source), **options)


@pytest.fixture(params=FLAVOURS)
def client(request: pytest.FixtureRequest, server: LiveServer) -> Iterator[A2AClient]:
    with connect(server.base_url, request.param) as made:
        yield made


def result(task: Task) -> Any:
    (artifact,) = [a for a in task.artifacts if a.artifact_id == "quineling-result"]
    return artifact.parts[0].value


def test_negotiates_the_asked_interface(client: A2AClient, server: LiveServer) -> None:
    expected = {"JSONRPC": ("JSONRPC", "1.0"), "HTTP+JSON": ("HTTP+JSON", "1.0")}
    i = client.interface
    assert (i.protocol_binding, i.protocol_version) in [*expected.values(), ("JSONRPC", "0.3")]
    assert i.url.startswith(server.base_url)


def test_send_blocking_and_return_immediately(client: A2AClient) -> None:
    task = client.send(text_message(SQUARE_SUM))
    assert isinstance(task, Task) and task.state is TaskState.COMPLETED
    assert result(task)["operation"] == "create" and task.raw["status"]["state"] == "TASK_STATE_COMPLETED"
    quick = client.send(data_message({"operation": "list", "arguments": {}}), return_immediately=True)
    assert isinstance(quick, Task)
    assert client.get_task(quick.id, history_length=0).history == []
    assert client.get_task(task.id).history[0].text == SQUARE_SUM


def test_stream_from_snapshot_to_terminal(client: A2AClient) -> None:
    events = list(client.stream(text_message(SQUARE_SUM)))
    assert isinstance(events[0], Task)
    assert isinstance(events[-1], StatusUpdate) and events[-1].state is TaskState.COMPLETED
    assert any(isinstance(e, ArtifactUpdate) for e in events)


def test_input_required_follow_up_cancel_and_errors(client: A2AClient) -> None:
    waiting = client.send("   ")
    assert isinstance(waiting, Task) and waiting.state is TaskState.INPUT_REQUIRED
    done = client.send(text_message(SQUARE_SUM, task_id=waiting.id, context_id=waiting.context_id))
    assert isinstance(done, Task) and done.id == waiting.id and done.state is TaskState.COMPLETED
    other = client.send("   ")
    assert isinstance(other, Task)
    assert client.cancel(other.id).state is TaskState.CANCELED
    with pytest.raises(AgentError) as caught:
        client.cancel(done.id)
    assert caught.value.reason == "TASK_NOT_CANCELABLE" and caught.value.a2a_code == -32002
    with pytest.raises(AgentError) as missing:
        client.get_task("no-such-task")
    assert missing.value.reason == "TASK_NOT_FOUND" and missing.value.exit_code == 1


def test_subscribe_follows_a_task_completed_by_another_call(client: A2AClient) -> None:
    waiting = client.send("   ")
    assert isinstance(waiting, Task)
    events: list[Any] = []
    subscribed = threading.Event()

    def follow() -> None:
        for event in client.subscribe(waiting.id):
            events.append(event)
            subscribed.set()

    thread = threading.Thread(target=follow)
    thread.start()
    assert subscribed.wait(10)
    client.send(text_message(SQUARE_SUM, task_id=waiting.id))
    thread.join(15)
    assert not thread.is_alive()
    assert isinstance(events[0], Task) and events[0].state is TaskState.INPUT_REQUIRED
    assert getattr(events[-1], "state", None) is TaskState.COMPLETED


def test_list_tasks_walks_every_page(server: LiveServer) -> None:
    for flavour in ("JSONRPC", "HTTP+JSON"):
        with connect(server.base_url, flavour, tenant=f"list-{flavour.lower().replace('+', '')}") as client:
            made = {
                t.id for t in (client.send(text_message(SQUARE_SUM)) for _ in range(3)) if isinstance(t, Task)
            }
            page = client.list_page(page_size=2)
            assert len(page.tasks) == 2 and page.next_page_token and page.total_size == 3
            assert {t.id for t in client.list_tasks(page_size=1)} == made
            assert [t.id for t in client.list_tasks(status="completed")] != []


def test_v03_has_no_list_and_push_is_refused_by_the_card(server: LiveServer) -> None:
    with connect(server.base_url, "v0.3") as client:
        with pytest.raises(AgentError, match="v0.3 JSON-RPC has no such method"):
            client.list_page()
        with pytest.raises(AgentError) as caught:
            client.list_push_configs("t")
        assert caught.value.reason == "PUSH_NOTIFICATION_NOT_SUPPORTED"


def test_delegate_streams_and_reports_the_outcome(client: A2AClient) -> None:
    done = client.delegate(text_message(SQUARE_SUM), timeout=30)
    assert done.outcome == "completed" and done.task is not None and done.output[0]["operation"] == "create"
    asked = client.delegate("   ", timeout=30)
    assert asked.outcome == "input-required" and asked.task is not None
    assert client.latency()["count"] > 0 and client.latency()["p95"] >= client.latency()["p50"]


# --- with authentication --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("client-auth") / "keys"
    return folder, {name: add_key(folder, name) for name in ("alice", "bob")}


@pytest.fixture(scope="module")
def secured(keys: tuple[Path, dict[str, str]]) -> Iterator[LiveServer]:
    with live_server(auth_keys_file=str(keys[0])) as live:
        yield live


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_bearer_tokens_authenticate_and_isolate(
    secured: LiveServer, keys: tuple[Path, dict[str, str]], flavour: str
) -> None:
    tokens = keys[1]
    with connect(secured.base_url, flavour, credentials=Credentials(bearer=tokens["alice"])) as alice:
        task = alice.send(text_message(SQUARE_SUM))
        assert isinstance(task, Task) and task.state is TaskState.COMPLETED
        assert alice.get_task(task.id).id == task.id
    with connect(secured.base_url, flavour, credentials=Credentials(api_key=tokens["bob"])) as bob:
        with pytest.raises(AgentError) as hidden:
            bob.get_task(task.id)
        assert hidden.value.reason == "TASK_NOT_FOUND"
    with connect(secured.base_url, flavour) as anonymous, pytest.raises(AuthenticationFailed) as refused:
        anonymous.get_task(task.id)
    assert refused.value.exit_code == 4 and "401" in refused.value.message
    wrong = tokens["alice"][:-4] + "XXXX"
    with connect(secured.base_url, flavour, credentials=Credentials(bearer=wrong)) as forged:
        with pytest.raises(AuthenticationFailed) as bad:
            forged.send("hello")
        assert wrong not in str(bad.value) and wrong not in repr(forged)
