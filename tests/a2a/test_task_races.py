"""Two requests on one task at once: a rival's save lands between this request's load and its save.

Every backend (memory, fakeredis, real Redis) runs each race deterministically: :class:`RacingTaskStore`
runs the rival request just before the first save it is asked to make (a plain save, or one inside the
runtime's commit), like ``tests/runtime/test_ranch_races.py`` does for the state store. The rules checked
(docs/decisions/0008-concurrent-updates-to-one-task.md): nothing either request committed is overwritten,
a canceled task never becomes completed, a message's runtime effects commit at most once and only with its
task, and the loser is told what happened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from quineling.a2a import errors
from quineling.a2a.context import CallContext
from quineling.a2a.service import CONFLICT_ATTEMPTS, A2AService
from quineling.a2a.task_facts import describe_task
from stores.base import JSON, Backend, KeyClaim, StateStore, TaskLimits, TaskStore, TaskWrite, Versioned
from stores.changes import ChangeSet, Key
from tests.a2a.conftest import FakeRuntime, text, user_message

CTX = CallContext()
DONE = "[1,2] | sum"  # the fake runtime completes this
VAGUE = "   "  # ... and asks for clarification on this
CANCELED, COMPLETED, INPUT = "TASK_STATE_CANCELED", "TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED"


class RacingTaskStore(TaskStore):
    """Runs ``rival()`` just before the next save (once, or before every save with ``always``) and records
    the ``expect_version`` of every save."""

    def __init__(self, inner: TaskStore) -> None:
        self.inner = inner
        self.limits = inner.limits
        self.describe = inner.describe
        self.rival: Callable[[], Any] | None = None
        self.always = False
        self.expected: list[int | None] = []

    @property
    def location(self) -> object:
        return self.inner.location

    def load_versioned(self, scope: str, task_id: str) -> Versioned:
        return self.inner.load_versioned(scope, task_id)

    def save(
        self,
        scope: str,
        task: JSON,
        events: Iterable[JSON] = (),
        *,
        expect_version: int | None = None,
        claim: KeyClaim | None = None,
    ) -> int:
        self._before_save(expect_version)
        return self.inner.save(scope, task, events, expect_version=expect_version, claim=claim)

    def save_with_changes(
        self, scope: str, changes: ChangeSet, write: TaskWrite, now: float
    ) -> tuple[int, dict[Key, int]]:
        self._before_save(write.expect_version)
        return self.inner.save_with_changes(scope, changes, write, now)

    def _before_save(self, expect_version: int | None) -> None:
        rival = self.rival
        if not self.always:
            self.rival = None
        if rival is not None:
            rival()
        self.expected.append(expect_version)

    def list(self, scope, query):  # type: ignore[no-untyped-def]
        return self.inner.list(scope, query)

    def read_events(self, scope, task_id, after, timeout):  # type: ignore[no-untyped-def]
        return self.inner.read_events(scope, task_id, after, timeout)

    def last_event_id(self, scope, task_id):  # type: ignore[no-untyped-def]
        return self.inner.last_event_id(scope, task_id)

    def load_claim(self, scope, key):  # type: ignore[no-untyped-def]
        return self.inner.load_claim(scope, key)


class Pair:
    """A plain service (the rival worker) and a racing one over the same store and runtime."""

    def __init__(self, store: TaskStore, state: StateStore) -> None:
        self.store = store
        self.runtime = FakeRuntime(state)
        self.racing = RacingTaskStore(store)
        self.plain = A2AService(self.runtime, store, lambda _v: {})
        self.worker = A2AService(self.runtime, self.racing, lambda _v: {})

    def paused_task(self) -> str:
        task = self.plain.send_message({"message": user_message(text(VAGUE))}, CTX)["task"]
        assert task["status"]["state"] == INPUT
        return task["id"]

    def follow_up(self, service: A2AService, task_id: str, thought: str) -> JSON:
        message = user_message(text(thought), taskId=task_id)
        return service.send_message({"message": message}, CTX)["task"]

    def stored(self, task_id: str) -> JSON:
        task = self.store.load(CTX.scope, task_id)
        assert task is not None
        return task

    def states_logged(self, task_id: str) -> list[str]:
        events = self.store.read_events(CTX.scope, task_id, None, 0)
        return [e.payload["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e.payload]


def result_status(task: JSON) -> str:
    (artifact,) = task["artifacts"]
    return artifact["parts"][0]["data"]["result"]["status"]


def user_texts(task: JSON) -> list[str]:
    return [m["parts"][0]["text"] for m in task.get("history", []) if m["role"] == "ROLE_USER"]


@pytest.fixture
def pair(backend: Backend, clock: Any) -> Pair:
    return Pair(backend.task_store(TaskLimits(), clock=clock, describe=describe_task), backend.state_store())


# ---- CancelTask racing a follow-up, both orders ----


def test_cancel_landing_first_is_never_overwritten_by_the_follow_up(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.rival = lambda: pair.plain.cancel_task({"id": task_id}, CTX)
    with pytest.raises(errors.InternalError) as caught:
        pair.follow_up(pair.worker, task_id, DONE)
    assert f"is now {CANCELED}" in caught.value.message
    assert "committed nothing" in caught.value.message  # the client learns it may resend
    assert caught.value.metadata == {"taskId": task_id, "retryable": "true", "taskState": CANCELED}
    task = pair.stored(task_id)
    assert task["status"]["state"] == CANCELED
    assert result_status(task) == "clarify"  # the follow-up's result was not recorded
    assert user_texts(task) == [VAGUE]
    assert COMPLETED not in pair.states_logged(task_id)
    assert len(pair.runtime.calls) == 2  # the first message and the follow-up, once each
    assert pair.runtime.committed == [{"operation": "create", "thought": VAGUE}]  # the loser's did not commit


def test_follow_up_landing_first_makes_the_cancel_decide_again(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.rival = lambda: pair.follow_up(pair.plain, task_id, DONE)
    with pytest.raises(errors.TaskNotCancelableError):
        pair.worker.cancel_task({"id": task_id}, CTX)
    task = pair.stored(task_id)
    assert task["status"]["state"] == COMPLETED
    assert user_texts(task) == [VAGUE, DONE]
    assert CANCELED not in pair.states_logged(task_id)


def test_cancel_retried_after_a_follow_up_keeps_the_follow_up_in_history(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.rival = lambda: pair.follow_up(pair.plain, task_id, VAGUE)  # still INPUT_REQUIRED after
    canceled = pair.worker.cancel_task({"id": task_id}, CTX)
    assert canceled["status"]["state"] == CANCELED
    task = pair.stored(task_id)
    assert task["status"]["state"] == CANCELED
    assert user_texts(task) == [VAGUE, VAGUE]
    agent_replies = [m for m in task["history"] if m["role"] == "ROLE_AGENT"]
    assert len(agent_replies) == 2  # both clarification requests were kept, none overwritten
    assert pair.states_logged(task_id)[-1] == CANCELED


def test_racing_cancels_cancel_once(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.rival = lambda: pair.plain.cancel_task({"id": task_id}, CTX)
    assert pair.worker.cancel_task({"id": task_id}, CTX)["status"]["state"] == CANCELED
    assert pair.states_logged(task_id).count(CANCELED) == 1


# ---- two follow-ups ----


def test_follow_up_losing_to_a_completing_follow_up_is_refused_without_a_second_dispatch(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.rival = lambda: pair.follow_up(pair.plain, task_id, DONE)
    with pytest.raises(errors.InternalError, match=f"is now {COMPLETED}"):
        pair.follow_up(pair.worker, task_id, "[3] | sum")
    task = pair.stored(task_id)
    assert user_texts(task) == [VAGUE, DONE]
    assert pair.states_logged(task_id).count(COMPLETED) == 1
    # The loser dispatched before the rival's save landed; its commit lost, so it committed nothing, and a
    # terminal task is not dispatched to again.
    assert [call["thought"] for call in pair.runtime.calls] == [VAGUE, "[3] | sum", DONE]
    assert [call["thought"] for call in pair.runtime.committed] == [VAGUE, DONE]


def test_follow_up_losing_to_a_still_paused_task_is_applied_to_it_and_commits_once(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.rival = lambda: pair.follow_up(pair.plain, task_id, VAGUE)
    done = pair.follow_up(pair.worker, task_id, DONE)
    assert done["status"]["state"] == COMPLETED
    task = pair.stored(task_id)
    assert task == done
    assert user_texts(task) == [VAGUE, VAGUE, DONE]  # both follow-ups are in the transcript, in order
    # DONE lost its commit to the rival, so it was dispatched again on the fresh task and committed once.
    assert [call["thought"] for call in pair.runtime.calls] == [VAGUE, DONE, VAGUE, DONE]
    assert [call["thought"] for call in pair.runtime.committed] == [VAGUE, VAGUE, DONE]
    assert pair.states_logged(task_id)[-1] == COMPLETED


def test_a_bad_envelope_follow_up_losing_a_race_never_dispatches(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.rival = lambda: pair.plain.cancel_task({"id": task_id}, CTX)
    bad = {"messageId": "m-x", "role": "ROLE_USER", "parts": [], "taskId": task_id}
    with pytest.raises(errors.InternalError, match="was not recorded on the task") as caught:
        pair.worker.send_message({"message": bad}, CTX)
    assert "executed" not in caught.value.message
    assert len(pair.runtime.calls) == 1
    assert pair.stored(task_id)["status"]["state"] == CANCELED


def test_follow_up_on_a_task_that_expired_meanwhile(backend: Backend, clock: Any) -> None:
    tasks = backend.task_store(TaskLimits(paused_ttl_seconds=60), clock=clock, describe=describe_task)
    pair = Pair(tasks, backend.state_store())
    task_id = pair.paused_task()
    pair.racing.rival = lambda: clock.advance(61)
    with pytest.raises(errors.InternalError, match="is no longer available"):
        pair.follow_up(pair.worker, task_id, DONE)
    assert pair.store.load(CTX.scope, task_id) is None


# ---- a task that keeps changing ----


def test_cancel_gives_up_after_bounded_retries(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.always = True
    pair.racing.rival = lambda: pair.follow_up(pair.plain, task_id, VAGUE)
    with pytest.raises(errors.InternalError, match="retry CancelTask") as caught:
        pair.worker.cancel_task({"id": task_id}, CTX)
    assert caught.value.metadata["retryable"] == "true"
    assert len(pair.racing.expected) == CONFLICT_ATTEMPTS
    pair.racing.rival = None
    assert pair.stored(task_id)["status"]["state"] == INPUT
    assert CANCELED not in pair.states_logged(task_id)


def test_follow_up_gives_up_after_bounded_retries_and_commits_nothing(pair: Pair) -> None:
    task_id = pair.paused_task()
    pair.racing.always = True
    pair.racing.rival = lambda: pair.follow_up(pair.plain, task_id, VAGUE)
    with pytest.raises(errors.InternalError, match="kept changing"):
        pair.follow_up(pair.worker, task_id, DONE)
    assert len(pair.racing.expected) == CONFLICT_ATTEMPTS
    assert [call["thought"] for call in pair.runtime.calls].count(DONE) == CONFLICT_ATTEMPTS
    assert DONE not in [call["thought"] for call in pair.runtime.committed]
    pair.racing.rival = None
    assert DONE not in user_texts(pair.stored(task_id))


# ---- every save is conditional ----


def test_every_save_expects_the_version_it_read(pair: Pair) -> None:
    service, store = pair.worker, pair.racing
    task_id = service.send_message({"message": user_message(text(VAGUE))}, CTX)["task"]["id"]
    assert store.expected == [0]  # a new task must not exist yet
    loaded = store.load_versioned(CTX.scope, task_id).version
    pair.follow_up(service, task_id, VAGUE)
    assert store.expected[-1] == loaded
    loaded = store.load_versioned(CTX.scope, task_id).version
    service.cancel_task({"id": task_id}, CTX)
    assert store.expected[-1] == loaded
    assert None not in store.expected
