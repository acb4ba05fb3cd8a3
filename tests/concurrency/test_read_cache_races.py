"""Read caches under real concurrency: 8 processes, each with a cache as a server worker has, all holding a
copy that goes stale while they race. Every answer must still be the one a cache-less store would give."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.concurrency.support import PROCESSES, Crowd, redis_runtime, settled, stored
from tests.conftest import needs_redis
from tests.runtime.test_ranch_support import SQUARES, create, make_runtime

pytestmark = [pytest.mark.redis, pytest.mark.slow, needs_redis]


def test_racing_annotations_on_stale_caches_attach_exactly_one(crowd: Crowd, prefix: str) -> None:
    """Every process caches the bare artifact, then all annotate it at once, half with one intent and half
    with another. Each computes success on its cached copy; the commits decide: one intent is attached, its
    group all succeed with the same artifact, the other group gets metadata-conflict — never a lost or
    double annotation, never an answer resting on the stale copy."""
    donor = create(make_runtime(), SQUARES)
    intents = [donor["companions"]["intent"], {**donor["companions"]["intent"], "name": "renamed"}]
    setup = redis_runtime(prefix)
    bare = setup.dispatch({"operation": "recover", "recovery": {"source": donor["source"]}})["result"]
    inspect = {"operation": "inspect", "artifactId": bare["id"]}
    requests = [
        [{"operation": "annotate", "artifactId": bare["id"], "intent": intents[w % 2]}]
        for w in range(PROCESSES)
    ]
    batches = crowd.race(prefix, requests, warm=[inspect])
    # Everyone computed on the bare copy and reached the commit: one commit won, every other one conflicted.
    outcomes = settled(batches, PROCESSES - 1)
    (winner,) = stored(prefix, "artifact").values()
    attached = winner["companions"]["intent"]
    assert attached in intents
    for w, (kind, value) in enumerate(outcomes):
        if intents[w % 2] == attached:
            assert (kind, value["result"]) == ("ok", winner)
        else:
            assert (kind, value["code"]) == ("error", "metadata-conflict"), value
    assert Counter(kind for kind, _ in outcomes) == {"ok": PROCESSES // 2, "error": PROCESSES // 2}
    assert setup.dispatch(inspect)["result"] == winner
