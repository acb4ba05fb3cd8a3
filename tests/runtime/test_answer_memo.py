"""The runtime's answer memo (quineling/runtime/memo.py) on every backend: an identical request that wrote
nothing is answered from the memo, the answer rests on versions its commit confirms, a stale entry is
dropped and the request computed afresh, scopes never share entries, and a hit is the answer as it was remembered.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from quineling.runtime.memo import AnswerMemo
from quineling.runtime.runtime import Runtime
from stores import Backend, TaskWrite
from tests.conftest import BackendMaker, FakeClock
from tests.runtime.test_ranch_support import SQUARES
from tests.runtime.test_retention import IDLE_TTL, Client

CREATE = {"operation": "create", "thought": SQUARES}


@pytest.fixture
def backend(make_backend: BackendMaker) -> Backend:
    return make_backend()


@pytest.fixture
def client(backend: Backend, clock: FakeClock) -> Client:
    return Client(backend, clock)


def memo_of(client: Client) -> AnswerMemo:
    assert client.runtime.memo is not None
    return client.runtime.memo


def test_an_identical_create_of_a_retained_source_is_answered_from_the_memo(client: Client) -> None:
    first = client(**CREATE)
    assert first["status"] == "created"
    second = client(**CREATE)  # retained now: an observation, remembered
    third = client(**CREATE)
    assert memo_of(client).hits == 1
    assert second == third
    fresh = Runtime(store=client.runtime.store, env=client.env, memo_entries=0)
    assert fresh.dispatch(dict(CREATE), attach=client.attach)["result"] == third


def test_a_create_that_writes_is_never_remembered(client: Client) -> None:
    for n in range(3):
        assert client(operation="create", thought=f"[{n}, 2] | sum | report t")["status"] == "created"
    assert len(memo_of(client)) == 0 and memo_of(client).hits == 0


def test_a_stale_entry_costs_a_conflict_and_the_answer_is_computed_again(client: Client) -> None:
    artifact = client(**CREATE)["artifact"]
    client(**CREATE)  # remembered, resting on the artifact's version
    client.clock.advance(IDLE_TTL + 1)  # the artifact lapses: the remembered answer no longer holds
    again = client(**CREATE)
    assert again["artifact"]["id"] == artifact["id"]
    assert client.counters("artifacts") == {"artifacts": 1}  # stored again, not merely claimed
    assert client(operation="inspect", artifactId=artifact["id"])["id"] == artifact["id"]
    assert memo_of(client).hits == 1  # the hit was tried, refused by its commit, and not counted twice


def test_scopes_never_share_an_entry(client: Client) -> None:
    def attach_in(scope: str) -> Callable[[object], TaskWrite]:
        task = {"id": uuid.uuid4().hex, "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        return lambda _outcome: TaskWrite(client.tasks, f"{scope}/u", task)

    for scope in ("alice", "bob"):
        client.runtime.dispatch(dict(CREATE), scope=scope, attach=attach_in(scope))
        client.runtime.dispatch(dict(CREATE), scope=scope, attach=attach_in(scope))
    assert memo_of(client).hits == 0  # each scope's second create was its first observation
    client.runtime.dispatch(dict(CREATE), scope="bob", attach=attach_in("bob"))
    assert memo_of(client).hits == 1


def test_a_replayed_answer_is_shared_and_is_the_answer_as_it_was_remembered(client: Client) -> None:
    """Every hit hands out one decoded answer (its callers only read it: it becomes a task's artifact); the
    entry is a snapshot, so what the computing caller does with its own answer afterwards never reaches it."""
    created = client(**CREATE)
    computed = client(**CREATE)  # remembered
    source = computed["artifact"]["source"]
    computed["artifact"]["source"] = "changed by the caller that computed it"
    replayed = client(**CREATE)
    assert replayed["artifact"]["source"] == source == created["artifact"]["source"]
    assert client(**CREATE) is replayed
    assert memo_of(client).hits == 2


def test_a_plain_dispatch_neither_reads_nor_feeds_the_memo(client: Client) -> None:
    client(**CREATE)
    for _ in range(3):
        client.plain(**CREATE)
    assert len(memo_of(client)) == 0


def test_the_memo_is_bounded_least_recently_used_first_out() -> None:
    memo = AnswerMemo(max_entries=2)
    for n in range(3):
        memo.remember(AnswerMemo.key("s", "parse", {"thought": str(n)}), {"n": n}, {})
    assert len(memo) == 2
    assert memo.get(AnswerMemo.key("s", "parse", {"thought": "0"})) is None
    replay = memo.get(AnswerMemo.key("s", "parse", {"thought": "2"}))
    assert replay is not None and replay.outcome == {"n": 2}
    small = AnswerMemo(max_bytes=64)
    small.remember("k", {"big": "x" * 100}, {})
    assert len(small) == 0


def test_the_key_keeps_json_types_apart_and_ignores_member_order() -> None:
    key = AnswerMemo.key
    assert key("s", "create", {"a": 1, "b": 2}) == key("s", "create", {"b": 2, "a": 1})
    assert len({key("s", "create", {"a": v}) for v in (1, 1.0, True, "1")}) == 4
    assert key("s", "create", {"a": 1}) != key("t", "create", {"a": 1})


def test_only_a_few_answers_are_kept_decoded_and_a_new_answer_is_never_an_old_decode() -> None:
    from quineling.runtime.memo import DECODED_ANSWERS

    memo = AnswerMemo()
    keys = [AnswerMemo.key("s", "parse", {"thought": str(n)}) for n in range(DECODED_ANSWERS + 8)]
    for n, key in enumerate(keys):
        memo.remember(key, {"n": n}, {})
        first, again = memo.get(key), memo.get(key)
        assert first is not None and again is not None and first.outcome is again.outcome  # shared
    assert len(memo) == len(keys) and len(memo._decoded._values) == DECODED_ANSWERS
    memo.remember(keys[-1], {"n": "replaced"}, {})
    replay = memo.get(keys[-1])
    assert replay is not None and replay.outcome == {"n": "replaced"}
    oldest = memo.get(keys[0])  # no longer kept decoded: decoded again from its text
    assert oldest is not None and oldest.outcome == {"n": 0}
