"""The rate-limit counters of every backend (stores/rate_counters.py): counts per identity and window, a
window that ends starts over, and on Redis every instance over one server shares the counts."""

from __future__ import annotations

import threading
import time

from stores.base import Backend
from stores.rate_counters import MemoryRateCounter, Window
from stores.redis import RedisBackend
from tests.conftest import BackendMaker

SHORT, LONG = Window("3-1s", 1), Window("5-60s", 60)


def test_counts_grow_per_identity_and_window(backend: Backend) -> None:
    counter = backend.rate_counter()
    counts = [counter.hit("p:alice", [SHORT, LONG]) for _ in range(3)]
    assert [[c.count for c in hit] for hit in counts] == [[1, 1], [2, 2], [3, 3]]
    assert 0 < counts[-1][0].reset_seconds <= 1 and 59 < counts[-1][1].reset_seconds <= 60
    assert [c.count for c in counter.hit("p:bob", [SHORT, LONG])] == [1, 1]  # another identity
    assert [c.count for c in counter.hit("p:alice", [LONG])] == [4]  # the window alone


def test_a_window_that_ends_starts_over(backend: Backend) -> None:
    counter = backend.rate_counter()
    counter.hit("a:192.0.2.1", [SHORT])
    assert counter.hit("a:192.0.2.1", [SHORT])[0].count == 2
    time.sleep(1.1)
    assert counter.hit("a:192.0.2.1", [SHORT])[0].count == 1


def test_identities_with_unusual_characters_stay_apart(backend: Backend) -> None:
    counter = backend.rate_counter()
    for identity in ("p:jwt~a%2Fb", "p:jwt~a/b", "p:{x}", "a:2001:db8::/64"):
        assert counter.hit(identity, [LONG])[0].count == 1


def test_instances_over_one_redis_share_the_counts_exactly(make_backend: BackendMaker) -> None:
    first = make_backend()
    if not make_backend.shared:
        return  # the in-process store is one process's by design
    second = make_backend()
    results: list[int] = []
    lock = threading.Lock()

    def hit(backend: Backend) -> None:
        for _ in range(10):
            count = backend.rate_counter().hit("p:carol", [LONG])[0].count
            with lock:
                results.append(count)

    threads = [threading.Thread(target=hit, args=(b,)) for b in (first, second, first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == list(range(1, 41))  # every request got its own, distinct count


def test_redis_keys_live_under_the_prefix_and_expire(make_backend: BackendMaker) -> None:
    backend = make_backend()
    if not isinstance(backend, RedisBackend):
        return
    backend.rate_counter().hit("p:dave", [LONG])
    keys = [key.decode() for key in backend.connection.shared.scan_iter(match=f"{backend.prefix}:rate:*")]
    assert keys == [f"{backend.prefix}:rate:{{p%3Adave}}:5-60s"]  # the caller escaped, as every key part
    assert 0 < backend.connection.shared.ttl(keys[0]) <= 60


def test_the_in_process_table_drops_ended_windows() -> None:
    now = [1000.0]
    counter = MemoryRateCounter(clock=lambda: now[0])
    window = Window("1-1s", 1)
    for n in range(5000):
        counter.hit(f"a:{n}", [window])
    now[0] += 2  # every one of those windows has ended
    for n in range(4000):
        counter.hit(f"b:{n}", [window])
        # At most twice what was alive at the last sweep (4096 windows, all alive then).
        assert len(counter._windows) <= 2 * 4096
    assert len(counter._windows) == 4000  # the 5000 ended ones went in a sweep
    assert not any(key.endswith(":a:1") for key in counter._windows)
    assert counter.hit("a:1", [window])[0].count == 1  # an ended window starts over
