"""quineling.client against agents built on the official SDKs' servers (tests/interop/js/agent.mjs on
@a2a-js/sdk 1.3.0, tests/interop/py_agent.py on a2a-sdk 1.3.0): every binding each offers, v0.3 included."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from quineling.client import (
    A2AClient,
    AgentError,
    CardCache,
    SharedState,
    Task,
    TaskState,
    load_card,
    parse_card,
)
from quineling.client.models import StatusUpdate
from tests.support.sdk_agents import js_agent, python_agent

pytestmark = [pytest.mark.interop, pytest.mark.slow]
CASES = [("js", "JSONRPC"), ("js", "HTTP+JSON"), ("js-v03", "auto"), ("python", "JSONRPC"), ("python", "HTTP+JSON"),
         ("python", "v0.3")]  # fmt: skip


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        yield {"js": stack.enter_context(js_agent()), "js-v03": stack.enter_context(js_agent("v03")),
               "python": stack.enter_context(python_agent())}  # fmt: skip


@pytest.fixture(params=CASES, ids=[f"{a}-{f}" for a, f in CASES])
def client(request: pytest.FixtureRequest, agents: dict[str, str]) -> Iterator[A2AClient]:
    name, flavour = request.param
    base, state = agents[name], SharedState.from_url("memory://")
    if flavour == "v0.3":
        card = load_card(base, cache=CardCache())
        legacy = {**card.raw, "supportedInterfaces": [i for i in card.raw["supportedInterfaces"]
                                                      if i["protocolVersion"] == "0.3"]}  # fmt: skip
        made = A2AClient(parse_card(legacy, source=card.source), shared_state=state)
    else:
        transports = None if flavour == "auto" else [flavour]
        made = A2AClient.connect(base, transports=transports, shared_state=state, cache=CardCache())
    with made:
        yield made


def test_negotiates(client: A2AClient, request: pytest.FixtureRequest) -> None:
    name, flavour = request.node.callspec.params["client"]
    if flavour in ("auto", "v0.3"):
        assert (client.interface.protocol_binding, client.interface.protocol_version) == ("JSONRPC", "0.3")
    else:
        assert (client.interface.protocol_binding, client.interface.protocol_version) == (flavour, "1.0")


def test_send_get_and_stream(client: A2AClient) -> None:
    task = client.send("hello")
    assert isinstance(task, Task) and task.state is TaskState.COMPLETED
    assert task.artifacts[0].text == "fixture-result"
    assert client.get_task(task.id).state is TaskState.COMPLETED
    events = list(client.stream("hello"))
    assert isinstance(events[0], Task)
    assert isinstance(events[-1], StatusUpdate) and events[-1].state is TaskState.COMPLETED


def test_delegate_and_subscribe_to_a_slow_task(client: A2AClient) -> None:
    done = client.delegate("hello", timeout=30)
    assert done.outcome == "completed" and done.text == "fixture-result"
    slow = client.send("slow work", return_immediately=True)
    assert isinstance(slow, Task) and not slow.state.terminal
    states = [getattr(e, "state", None) for e in client.subscribe(slow.id)]
    assert states[-1] is TaskState.COMPLETED


def test_cancel_and_list(client: A2AClient) -> None:
    slow = client.send("slow work", return_immediately=True)
    assert isinstance(slow, Task)
    assert client.cancel(slow.id).state is TaskState.CANCELED
    if client.interface.legacy:
        with pytest.raises(AgentError, match="no such method"):
            client.list_page()
        return
    ids = [t.id for t in client.list_tasks(page_size=1)]
    assert slow.id in ids and len(ids) == len(set(ids))


def test_a_missing_task_is_the_agents_task_not_found(client: A2AClient) -> None:
    with pytest.raises(AgentError) as caught:
        client.get_task("no-such-task")
    error: Any = caught.value
    assert error.reason == "TASK_NOT_FOUND" and error.a2a_code == -32001
