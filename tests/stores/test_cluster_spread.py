"""Many principals' scopes spread over every master of a Redis Cluster (docs/cluster.md, "Spread"): each scope
group is one hash tag, so one slot, and the slots of many groups fall evenly on the masters."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from stores import ChangeSet, RedisBackend
from tests.conftest import BACKENDS

PRINCIPALS = 300


@pytest.mark.parametrize("make_backend", [BACKENDS["cluster"]], indirect=True)
def test_many_principals_spread_over_every_master(make_backend: Any) -> None:
    backend = make_backend()
    assert isinstance(backend, RedisBackend)
    state = backend.state_store()
    for n in range(PRINCIPALS):
        state.commit(f"key~p{n}:default", ChangeSet(put={("doc", "d"): {"n": n}}))
    cluster = backend.connection.shared
    per_master: Counter[str] = Counter()
    for node in cluster.get_primaries():  # a test may walk each primary's keyspace; a request never does
        for _key in cluster.scan_iter(match=f"{backend.prefix}:*:doc", count=500, target_nodes=node):
            per_master[f"{node.host}:{node.port}"] += 1
    assert sum(per_master.values()) == PRINCIPALS and len(per_master) == 3, per_master
    share = PRINCIPALS / 3
    assert all(0.75 * share <= count <= 1.25 * share for count in per_master.values()), per_master
