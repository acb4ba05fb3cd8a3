"""Exactly-once under races: a retry that commits first makes the original re-run and replay the receipt."""

from __future__ import annotations

from typing import Any

from quineling.runtime.runtime import Runtime
from stores.base import StateStore
from stores.changes import ChangeSet
from tests.runtime.test_ranch_support import (
    SQUARES,
    admission,
    call,
    command_request,
    create,
    inspect_world,
    make_runtime,
    offspring,
    ready,
    world,
)


class RacingStore(StateStore):
    """Runs ``rival()`` (another worker's request) just before the first commit of changes it sees."""

    def __init__(self, inner: StateStore) -> None:
        self.inner = inner
        self.rival: Any = None

    def read(self, scope, keys):
        return self.inner.read(scope, keys)

    def counters(self, scope, names):
        return self.inner.counters(scope, names)

    def _commit_changes(self, scope: str, changes: ChangeSet) -> None:
        rival, self.rival = self.rival, None
        if rival is not None:
            rival()
        self.inner.commit(scope, changes)


def _racing_pair() -> tuple[Runtime, Runtime, RacingStore]:
    plain = make_runtime()
    racing = RacingStore(plain.store)
    return plain, Runtime(store=racing, env=plain.env), racing


def test_racing_admissions_with_one_request_id_make_one_derivation():
    plain, worker, racing = _racing_pair()
    a = create(plain, SQUARES)
    value = offspring([a], "body", mutation="drift", nonce=4)
    request = admission(value, ready(plain, value), "raced")
    rival_ack: list[Any] = []
    racing.rival = lambda: rival_ack.append(call(plain, **request))
    assert call(worker, **request) == rival_ack[0]
    assert len(call(plain, operation="lineage")["derivations"]) == 1


def test_racing_world_commands_with_one_sequence_advance_once():
    plain, worker, racing = _racing_pair()
    snap = world(plain)
    request = command_request(plain, snap["id"], {"kind": "advance", "ticks": 2})
    rival_ack: list[Any] = []
    racing.rival = lambda: rival_ack.append(call(plain, **request))
    assert call(worker, **request) == rival_ack[0]
    after = inspect_world(plain, snap["id"])
    assert (after["revision"], after["tick"], after["nextSequence"]) == (1, 2, 2)
