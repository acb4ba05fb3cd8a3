"""The client on Quineling's card extensions, against a live gunicorn server (2 workers on real Redis) behind a
proxy that loses answers after the server committed them: automatic idempotency keys make a lost send safe to
retry (one task, not two), ``Last-Event-ID`` resumes a cut stream with no loss and no duplicate, and long-poll
GetTask replaces fixed-interval polling. Without the extensions the old rules hold."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from quineling.a2a import card as server_card
from quineling.client import A2AClient, AgentUnreachable, CardCache, RetryPolicy, SharedState, Task, load_card
from quineling.client.card import IDEMPOTENCY, LONG_POLL, RESUMABLE_STREAMS, parse_card
from quineling.client.messages import text_message
from quineling.client.models import ArtifactUpdate, StatusUpdate
from tests.client.proxy import DROP, Fault, Proxy, Seen, proxy
from tests.support.live import LiveServer, live_server
from tests.support.messages import SQUARE_SUM

pytestmark = pytest.mark.slow
FLAVOURS = ["JSONRPC", "HTTP+JSON"]


@pytest.fixture(scope="module")
def server(redis_store_url: str) -> Iterator[LiveServer]:
    with live_server(store_url=redis_store_url, workers=2, threads=4) as live:
        yield live


def through(front: Proxy, server: LiveServer, *, extensions: bool = True) -> dict[str, Any]:
    """The live card with every interface URL pointing at the proxy (and its extensions, or none)."""
    raw = load_card(server.base_url, cache=CardCache()).raw
    interfaces = [
        {**i, "url": i["url"].replace(server.base_url, front.base)} for i in raw["supportedInterfaces"]
    ]
    caps = dict(raw["capabilities"])
    if not extensions:
        caps.pop("extensions")
    return {**raw, "supportedInterfaces": interfaces, "capabilities": caps}


def client_for(card: dict[str, Any], flavour: str, tenant: str) -> A2AClient:
    return A2AClient(parse_card(card, source=card["supportedInterfaces"][0]["url"]), transports=[flavour],
                     tenant=tenant, retry=RetryPolicy(retries=2, base=0.05),
                     shared_state=SharedState.from_url("memory://"))  # fmt: skip


def first_send_dropped(n: int, seen: Seen) -> str | None:
    return DROP if n == 0 and seen.method == "POST" else None


def tasks_of(server: LiveServer, tenant: str) -> list[str]:
    with A2AClient.connect(server.base_url, tenant=tenant, cache=CardCache(),
                           shared_state=SharedState.from_url("memory://")) as direct:  # fmt: skip
        return [t.id for t in direct.list_tasks()]


def test_the_server_and_the_client_name_the_same_extensions() -> None:
    uris = {e["uri"] for e in server_card.EXTENSIONS}
    assert uris == {IDEMPOTENCY, RESUMABLE_STREAMS, LONG_POLL}
    assert all(e["required"] is False and e["description"] for e in server_card.EXTENSIONS)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_lost_answer_is_retried_with_the_same_minted_key_and_makes_one_task(
    server: LiveServer, flavour: str
) -> None:
    tenant = f"idem-{uuid.uuid4().hex[:8]}"
    with proxy(server.base_url, first_send_dropped) as front, client_for(through(front, server), flavour,
                                                                         tenant) as client:  # fmt: skip
        task = client.send(text_message(SQUARE_SUM))
        sends = front.posts()
    assert isinstance(task, Task) and task.state.terminal
    keys = {s.header("Idempotency-Key") for s in sends}
    assert (
        len(sends) == 2 and len(keys) == 1 and None not in keys
    )  # one key, minted once, reused by the retry
    assert tasks_of(server, tenant) == [task.id]  # the first attempt's task; the retry executed nothing


def test_each_logical_send_gets_its_own_key(server: LiveServer) -> None:
    tenant = f"idem-{uuid.uuid4().hex[:8]}"
    with proxy(server.base_url, lambda _n, _s: None) as front, client_for(through(front, server), "JSONRPC",
                                                                           tenant) as client:  # fmt: skip
        ids = {client.send(text_message(SQUARE_SUM)).id for _ in range(2)}  # type: ignore[union-attr]
        keys = {s.header("Idempotency-Key") for s in front.posts()}
    assert len(ids) == 2 and len(keys) == 2 and None not in keys


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_without_the_extension_a_lost_send_is_not_retried(server: LiveServer, flavour: str) -> None:
    tenant = f"plain-{uuid.uuid4().hex[:8]}"
    card_of = lambda front: through(front, server, extensions=False)  # noqa: E731
    with proxy(server.base_url, first_send_dropped) as front, client_for(card_of(front), flavour,
                                                                         tenant) as client:  # fmt: skip
        with pytest.raises(AgentUnreachable):
            client.send(text_message(SQUARE_SUM))
        sends = front.posts()
    assert len(sends) == 1 and sends[0].header("Idempotency-Key") is None
    assert len(tasks_of(server, tenant)) == 1  # the agent did execute it: repeating it would have made two


def kinds(events: list[Any]) -> list[str]:
    out = []
    for e in events:
        if isinstance(e, Task):
            out.append(f"task:{e.state.short}")
        elif isinstance(e, StatusUpdate):
            out.append(f"status:{e.state.short}")
        elif isinstance(e, ArtifactUpdate):
            out.append(f"artifact:{e.artifact.artifact_id}")
    return out


def cut_first_stream(after: int) -> Fault:
    def fault(n: int, seen: Seen) -> int | None:
        return after if n == 0 else None

    return fault


@pytest.mark.parametrize("after", [1, 2, 3])
def test_a_stream_cut_mid_way_resumes_with_last_event_id(server: LiveServer, after: int) -> None:
    tenant = f"resume-{uuid.uuid4().hex[:8]}"
    with proxy(server.base_url, lambda _n, _s: None) as front, client_for(through(front, server), "HTTP+JSON",
                                                                           tenant) as client:  # fmt: skip
        whole = kinds(list(client.stream(text_message(SQUARE_SUM))))
    with proxy(server.base_url, cut_first_stream(after)) as front, client_for(through(front, server),
                                                                               "HTTP+JSON", tenant) as client:  # fmt: skip
        resumed = kinds(list(client.stream(text_message(SQUARE_SUM))))
        posts = front.posts()
    assert whole[-1] == "status:completed" and len(whole) > after
    assert resumed == whole  # nothing lost, nothing repeated, in order
    assert [p.path.rsplit(":", 1)[-1] for p in posts] == ["stream", "subscribe"]
    assert posts[1].header("Last-Event-ID")  # resumed from the event log, not a fresh snapshot


def test_polling_long_polls_on_the_generation(server: LiveServer) -> None:
    tenant = f"poll-{uuid.uuid4().hex[:8]}"
    with proxy(server.base_url, lambda _n, _s: None) as front, client_for(through(front, server), "HTTP+JSON",
                                                                           tenant) as client:  # fmt: skip
        assert client.long_polls
        done = client.send(text_message(SQUARE_SUM))
        assert isinstance(done, Task) and done.generation == 4  # SUBMITTED, WORKING, artifact, COMPLETED
        # The task as a poller saw it while it was WORKING (generation 2): the next GetTask names it.
        working = Task.parse(
            {**done.raw, "status": {"state": "TASK_STATE_WORKING"}, "metadata": {"generation": 2}}
        )
        started = time.monotonic()
        seen = list(client.poll(working, time.monotonic() + 30, interval=3.0))
        took = time.monotonic() - started
        gets = [s.path for s in front.seen if s.method == "GET" and "/tasks/" in s.path]
    assert [t.generation for t in seen] == [4] and seen[0].state.terminal
    assert took < 2.5  # no fixed-interval sleep (3 s) before the GetTask
    assert len(gets) == 1 and "currentGeneration=2" in gets[0]
