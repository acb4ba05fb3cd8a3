"""Generations, resumable streams, long-poll GetTask, ifGenerationMatch and idempotency keys at the service, on
every backend (memory, fakeredis, real Redis)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest

from quineling.a2a import errors
from quineling.a2a.context import CallContext
from quineling.a2a.event_ids import StreamEvent
from quineling.a2a.generations import generation_of
from quineling.a2a.idempotency import IdempotencyKeyReusedError
from quineling.a2a.long_poll import GenerationMismatchError, LongPoll
from quineling.a2a.service import A2AService
from quineling.a2a.subscription import NotResumable, StreamSettings
from quineling.a2a.task_facts import describe_task
from stores.base import Backend, TaskLimits
from tests.a2a.conftest import FakeRuntime, text, user_message
from tests.conftest import FakeClock

CTX = CallContext()
VAGUE, DONE = "   ", "[1,2] | sum"
SETTINGS = StreamSettings(keepalive_seconds=60, subscribe_max_seconds=0.5, poll_seconds=0.05)


def make_service(backend: Backend, clock: FakeClock | None = None, **options: Any) -> A2AService:
    store = backend.task_store(
        TaskLimits(max_claims=options.pop("max_claims", 1024)), describe=describe_task, clock=clock
    )
    runtime = FakeRuntime(backend.state_store())
    return A2AService(runtime, store, lambda _v: {}, stream=options.pop("stream", SETTINGS), **options)


@pytest.fixture
def service(backend: Backend) -> A2AService:
    return make_service(backend)


def body(event: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = next(iter(event.values()))
    return value


def paused_task(service: A2AService, ctx: CallContext = CTX) -> dict[str, Any]:
    task: dict[str, Any] = service.send_message({"message": user_message(text(VAGUE))}, ctx)["task"]
    return task


def follow_up(task_id: str, value: str = DONE) -> dict[str, Any]:
    return {"message": user_message(text(value), taskId=task_id)}


def resume(service: A2AService, task_id: str, event_id: str, ctx: CallContext = CTX) -> list[Any]:
    return [e for e in service.subscribe_to_task({"id": task_id}, replace(ctx, last_event_id=event_id)) if e]


def test_generations_count_every_change_and_ride_on_every_event(service: A2AService) -> None:
    events = list(service.send_message_stream({"message": user_message(text(VAGUE))}, CTX))
    assert [generation_of(body(e)) for e in events] == [1, 2, 3, 4]
    task = service.get_task({"id": body(events[0])["id"]}, CTX)
    assert generation_of(task) == 4
    follow = list(service.send_message_stream(follow_up(task["id"]), CTX))
    # the opening snapshot shows the follow-up's first change (WORKING), then each change once
    assert [generation_of(body(e)) for e in follow] == [5, 5, 6, 7]
    canceled = paused_task(service)
    assert generation_of(service.cancel_task({"id": canceled["id"]}, CTX)) == 5


@pytest.mark.parametrize("follow_up_value", [DONE, VAGUE])
def test_a_follow_up_stream_cut_at_every_position_resumes_exactly(
    service: A2AService, follow_up_value: str
) -> None:
    """Cut after each frame of a streaming follow-up (ending COMPLETED, or INPUT_REQUIRED again) and resume with
    SubscribeToTask + Last-Event-ID: what the client sees is the uncut stream's changes, once each, in order."""
    task = paused_task(service)
    whole = list(service.send_message_stream(follow_up(task["id"], follow_up_value), CTX))
    assert all(isinstance(e, StreamEvent) for e in whole)
    assert len({e.event_id for e in whole}) == len(whole)
    changes = [(next(iter(e)), generation_of(body(e))) for e in whole[1:]]  # after the opening snapshot
    for cut in range(1, len(whole)):
        rest = resume(service, task["id"], whole[cut - 1].event_id)
        seen = [(next(iter(e)), generation_of(body(e))) for e in whole[1:cut] + rest]
        assert seen == changes, cut
        assert [e.event_id for e in rest] == [e.event_id for e in whole[cut:]]


def test_resume_after_the_task_ended_sends_the_rest_and_ends(service: A2AService) -> None:
    stream = list(service.send_message_stream({"message": user_message(text(DONE))}, CTX))
    task_id = body(stream[0])["id"]
    rest = resume(service, task_id, stream[0].event_id)
    assert [next(iter(e)) for e in rest] == ["statusUpdate", "artifactUpdate", "statusUpdate"]
    assert body(rest[-1])["status"]["state"] == "TASK_STATE_COMPLETED"
    assert resume(service, task_id, stream[-1].event_id) == []  # nothing missed: an empty stream that ends
    with pytest.raises(errors.UnsupportedOperationError):  # without Last-Event-ID: as before
        service.subscribe_to_task({"id": task_id}, CTX)


def test_resume_of_a_live_task_then_follows_it(backend: Backend) -> None:
    # A longer bound than the module's 0.5 s: the stream ends at the follow-up's terminal status anyway, and a
    # busy machine may take longer than that to commit a follow-up sent 0.1 s in.
    service = make_service(backend, stream=replace(SETTINGS, subscribe_max_seconds=10))
    task = paused_task(service)
    opening = next(iter(service.subscribe_to_task({"id": task["id"]}, CTX)))
    assert body(opening)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    stream = service.subscribe_to_task({"id": task["id"]}, replace(CTX, last_event_id=opening.event_id))
    sender = threading.Timer(0.1, lambda: service.send_message(follow_up(task["id"]), CTX))
    sender.start()
    events = [e for e in stream if e]
    # The stream may end before the sender's call has returned: it must be done before the store is closed.
    sender.join(timeout=30)
    assert not sender.is_alive()
    assert [generation_of(body(e)) for e in events] == [5, 6, 7]
    assert body(events[-1])["status"]["state"] == "TASK_STATE_COMPLETED"


def test_foreign_and_malformed_ids_are_refused_with_a_pointer_to_get_task(service: A2AService) -> None:
    mine, other = paused_task(service), paused_task(service)
    other_id = next(iter(service.subscribe_to_task({"id": other["id"]}, CTX))).event_id
    alice = CallContext(principal="alice", user="alice")
    alices = paused_task(service, alice)
    alice_id = next(iter(service.subscribe_to_task({"id": alices["id"]}, alice))).event_id
    for bad in (other_id, alice_id, "", "nonsense", "g" + "A" * 24, "1-0"):
        with pytest.raises(NotResumable, match="GetTask") as refused:
            resume(service, mine["id"], bad)
        assert refused.value.code == -32602 and refused.value.metadata["taskId"] == mine["id"]
    with pytest.raises(errors.TaskNotFoundError):  # alice's task stays invisible, id or not
        resume(service, alices["id"], alice_id)


def test_an_id_older_than_the_retained_log_is_refused(backend: Backend) -> None:
    service = make_service(backend)
    task = paused_task(service)
    first = next(iter(service.subscribe_to_task({"id": task["id"]}, CTX))).event_id
    service.send_message(follow_up(task["id"], VAGUE), CTX)
    assert len(resume(service, task["id"], first)) == 3  # while the log holds them
    # The log loses its oldest entries (trimmed at its length bound, or, on Redis, expired after a day).
    _drop_oldest_events(backend, service.task_store, task["id"], keep=1)
    with pytest.raises(NotResumable, match="older than the events"):
        resume(service, task["id"], first)


def _drop_oldest_events(backend: Backend, store: Any, task_id: str, keep: int) -> None:
    from stores.memory import MemoryBackend  # noqa: PLC0415 - reaching into each backend's log, test only

    if isinstance(backend, MemoryBackend):
        log = backend._data.events[(CTX.scope, task_id)]
        del log[: len(log) - keep]
        return
    from stores.redis import keys  # noqa: PLC0415

    stream = keys.task_events(store._prefix, CTX.scope, task_id)
    store._conn.command("xtrim", stream, maxlen=keep, approximate=False, repeatable=False)


def test_long_poll_answers_at_once_when_newer_and_wakes_on_a_change(service: A2AService) -> None:
    task = paused_task(service)
    assert generation_of(service.get_task({"id": task["id"], "currentGeneration": 3}, CTX)) == 4
    started = time.monotonic()
    threading.Timer(0.3, lambda: service.send_message(follow_up(task["id"]), CTX)).start()
    woken = service.get_task({"id": task["id"], "currentGeneration": "4"}, CTX)
    assert generation_of(woken) == 7 and 0.25 < time.monotonic() - started < 5


def test_long_poll_times_out_with_the_current_task(backend: Backend) -> None:
    service = make_service(backend, long_poll=LongPoll(seconds=0.3, limit=4, slice_seconds=0.1))
    task = paused_task(service)
    started = time.monotonic()
    assert generation_of(service.get_task({"id": task["id"], "currentGeneration": 4}, CTX)) == 4
    assert 0.25 < time.monotonic() - started < 3


def test_long_poll_beyond_the_waiter_cap_answers_at_once(backend: Backend) -> None:
    service = make_service(backend, long_poll=LongPoll(seconds=5, limit=1, slice_seconds=0.1))
    task = paused_task(service)
    holder = threading.Thread(target=service.get_task, args=({"id": task["id"], "currentGeneration": 4}, CTX))
    holder.start()
    deadline = time.monotonic() + 3
    while service.long_poll.waiting < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    assert generation_of(service.get_task({"id": task["id"], "currentGeneration": 4}, CTX)) == 4
    assert time.monotonic() - started < 0.5
    service.send_message(follow_up(task["id"]), CTX)  # wakes the holder
    holder.join(5)
    assert not holder.is_alive() and service.long_poll.waiting == 0


def test_long_poll_rejects_a_negative_generation(service: A2AService) -> None:
    task = paused_task(service)
    with pytest.raises(errors.InvalidParamsError, match="currentGeneration"):
        service.get_task({"id": task["id"], "currentGeneration": -1}, CTX)


def test_if_generation_match_guards_a_follow_up(service: A2AService) -> None:
    task = paused_task(service)
    with pytest.raises(GenerationMismatchError) as refused:
        service.send_message({**follow_up(task["id"]), "ifGenerationMatch": 3}, CTX)
    assert refused.value.code == -32010 and refused.value.status_code == 409
    assert generation_of(service.get_task({"id": task["id"]}, CTX)) == 4  # nothing happened
    done = service.send_message({**follow_up(task["id"]), "ifGenerationMatch": 4}, CTX)["task"]
    assert generation_of(done) == 7
    with pytest.raises(GenerationMismatchError):
        service.send_message({"message": user_message(text(DONE)), "ifGenerationMatch": 2}, CTX)


def keyed(key: str) -> CallContext:
    return replace(CTX, idempotency_key=key)


def test_a_retried_send_with_its_key_answers_the_same_task_and_runs_nothing(service: A2AService) -> None:
    runtime = service.runtime
    assert isinstance(runtime, FakeRuntime)
    first = service.send_message({"message": user_message(text(DONE))}, keyed("k-1"))["task"]
    again = service.send_message({"message": user_message(text(DONE))}, keyed("k-1"))[
        "task"
    ]  # fresh messageId
    assert again == first and len(runtime.calls) == 1
    streamed = list(service.send_message_stream({"message": user_message(text(DONE))}, keyed("k-1")))
    assert len(runtime.calls) == 1
    assert [next(iter(e)) for e in streamed] == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert [generation_of(body(e)) for e in streamed] == [1, 2, 3, 4]
    assert body(streamed[0])["id"] == first["id"]
    other = service.send_message({"message": user_message(text(DONE))}, keyed("k-2"))["task"]
    assert other["id"] != first["id"] and len(runtime.calls) == 2  # another key: another execution
    unkeyed = service.send_message({"message": user_message(text(DONE))}, CTX)["task"]
    assert unkeyed["id"] != first["id"] and len(runtime.calls) == 3  # no key: no deduplication


def test_a_streaming_send_replays_its_original_events(service: A2AService) -> None:
    original = list(service.send_message_stream({"message": user_message(text(DONE))}, keyed("s")))
    replayed = list(service.send_message_stream({"message": user_message(text(DONE))}, keyed("s")))
    assert [dict(e) for e in replayed] == [dict(e) for e in original]
    assert [e.event_id for e in replayed] == [e.event_id for e in original]


def test_a_keyed_follow_up_is_applied_once(service: A2AService) -> None:
    task = paused_task(service)
    once = service.send_message(follow_up(task["id"]), keyed("f"))["task"]
    twice = service.send_message(follow_up(task["id"]), keyed("f"))["task"]  # the task is terminal by now
    assert once == twice and generation_of(twice) == 7


def test_the_same_key_with_another_request_is_refused(service: A2AService) -> None:
    service.send_message({"message": user_message(text(DONE))}, keyed("k"))
    with pytest.raises(IdempotencyKeyReusedError) as refused:
        service.send_message({"message": user_message(text("[3] | sum"))}, keyed("k"))
    assert refused.value.code == -32020 and refused.value.status_code == 409
    assert refused.value.error_info()["reason"] == "IDEMPOTENCY_KEY_REUSED"
    with pytest.raises(IdempotencyKeyReusedError):  # a configuration is part of the request too
        service.send_message(
            {"message": user_message(text(DONE)), "configuration": {"historyLength": 1}}, keyed("k")
        )


def test_keys_are_per_principal(service: A2AService) -> None:
    alice = CallContext(principal="alice", user="alice", idempotency_key="k")
    mine = service.send_message({"message": user_message(text(DONE))}, keyed("k"))["task"]
    hers = service.send_message({"message": user_message(text(DONE))}, alice)["task"]
    assert mine["id"] != hers["id"]


@pytest.mark.parametrize("bad", ["", " k", "k\x7f", "é", "x" * 256])
def test_a_malformed_key_is_refused(service: A2AService, bad: str) -> None:
    with pytest.raises(errors.InvalidParamsError, match="Idempotency-Key"):
        service.send_message({"message": user_message(text(DONE))}, keyed(bad))


def test_keys_expire_and_then_run_again(backend: Backend, clock: FakeClock) -> None:
    service = make_service(backend, clock, idempotency_ttl=60)
    first = service.send_message({"message": user_message(text(DONE))}, keyed("k"))["task"]
    clock.advance(59)
    assert (
        service.send_message({"message": user_message(text(DONE))}, keyed("k"))["task"]["id"] == first["id"]
    )
    clock.advance(1)
    later = service.send_message({"message": user_message(text(DONE))}, keyed("k"))["task"]
    assert later["id"] != first["id"]


def test_live_keys_are_bounded(backend: Backend) -> None:
    service = make_service(backend, max_claims=2)
    for key in ("a", "b"):
        service.send_message({"message": user_message(text(DONE))}, keyed(key))
    with pytest.raises(errors.UnavailableError, match="Idempotency-Keys"):
        service.send_message({"message": user_message(text(DONE))}, keyed("c"))
    service.send_message({"message": user_message(text(DONE))}, CTX)  # without a key: unaffected


def test_sixteen_identical_keyed_sends_racing_execute_once(backend: Backend) -> None:
    services = [make_service(backend) for _ in range(4)]  # four "workers" over one store
    answers: list[str] = []
    barrier = threading.Barrier(16)

    def send(index: int) -> None:
        barrier.wait()
        task = services[index % 4].send_message({"message": user_message(text(DONE))}, keyed("race"))["task"]
        answers.append(task["id"])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(answers) == 16 and len(set(answers)) == 1
    committed = sum(len(s.runtime.committed) for s in services)  # type: ignore[attr-defined]
    assert committed == 1
    listed = services[0].list_tasks({}, CTX)
    assert listed["totalSize"] == 1
