"""The recording state view: what it reads, what it stages, and what the commit then checks."""

from __future__ import annotations

import pytest

from quineling.runtime.context import StateView
from stores.errors import ConflictError
from stores.memory import MemoryBackend
from tests.runtime.test_ranch_support import SQUARES, call, create, make_runtime


def test_insert_stages_without_reading_and_commit_requires_absence() -> None:
    store = MemoryBackend().state_store()
    reads: list[object] = []
    original_read = store.read
    store.read = lambda scope, keys: reads.append(list(keys)) or original_read(scope, keys)  # type: ignore[method-assign]

    view = StateView(store, "s")
    view.insert("record", "r1", {"n": 1})
    changes = view.change_set()
    assert reads == []
    assert changes.expect == {("record", "r1"): 0} and changes.put == {("record", "r1"): {"n": 1}}
    store.commit("s", changes)

    clash = StateView(store, "s")
    clash.insert("record", "r1", {"n": 2})
    with pytest.raises(ConflictError):
        store.commit("s", clash.change_set())
    assert store.read("s", [("record", "r1")])[("record", "r1")].value == {"n": 1}


def test_insert_after_read_is_refused() -> None:
    view = StateView(MemoryBackend().state_store(), "s")
    view.get("record", "r1")
    with pytest.raises(ValueError):
        view.insert("record", "r1", {})


def test_peek_reads_shared_and_a_later_get_of_the_key_is_the_callers_own() -> None:
    store = MemoryBackend().state_store()
    seed = StateView(store, "s")
    seed.insert("artifact", "a", {"source": "x", "n": [1]})
    store.commit("s", seed.change_set())

    first, second = StateView(store, "s"), StateView(store, "s")
    looked = first.peek("artifact", "a")
    assert looked == {"source": "x", "n": [1]}
    assert second.peek("artifact", "a") is looked  # one decoded value for every looking request
    own = first.get("artifact", "a")
    assert own == looked and own is not looked
    own["n"].append(2)  # type: ignore[index]
    assert second.peek("artifact", "a") == {"source": "x", "n": [1]}
    assert first.change_set().expect == {("artifact", "a"): 1}  # a peek is a read: the commit confirms it


def test_a_run_leaves_the_artifact_it_shares_as_stored() -> None:
    runtime = make_runtime()
    artifact = create(runtime, SQUARES)
    key = ("artifact", artifact["id"])
    stored = runtime.store.read(runtime.scope, [key])
    for _ in range(3):
        record = call(runtime, operation="run", artifactId=artifact["id"])
        assert record["artifactId"] == artifact["id"] and record["outputs"]
    assert runtime.store.read_shared(runtime.scope, [key]) == stored
