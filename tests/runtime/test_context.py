"""The recording state view: what it reads, what it stages, and what the commit then checks."""

from __future__ import annotations

import pytest

from quineling.runtime.context import StateView
from stores.errors import ConflictError
from stores.memory import MemoryBackend


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
