"""The bounded map of the per-process caches (stores/bounded_lru.py) and the bound of shared reads' decoded tasks
(stores/shared_reads.py)."""

from __future__ import annotations

import pytest

from stores.bounded_lru import BoundedLru
from stores.shared_reads import SharedValues


def test_the_least_recently_used_goes_first_at_the_count_bound() -> None:
    kept: BoundedLru[str, dict[str, str]] = BoundedLru(max_entries=2, max_bytes=1000)
    kept.put("a", {"v": "a"}, 10)
    kept.put("b", {"v": "b"}, 10)
    assert kept.get("a") == {"v": "a"}  # a is now the most recently used
    kept.put("c", {"v": "c"}, 10)
    assert kept.get("b") is None and kept.get("a") is not None and kept.get("c") is not None


def test_the_byte_bound_holds_and_a_replaced_value_frees_its_bytes() -> None:
    kept: BoundedLru[str, int] = BoundedLru(max_entries=100, max_bytes=100)
    for name in "abcd":
        kept.put(name, 1, 25)
    assert len(kept) == 4 and kept.size == 100
    kept.put("a", 2, 25)  # replaces a's entry: still 100 bytes
    assert len(kept) == 4 and kept.get("a") == 2 and kept.size == 100
    kept.put("e", 1, 25)  # over the bound: the least recently used (b) goes
    assert kept.get("b") is None and len(kept) == 4 and kept.size == 100


def test_a_task_over_a_quarter_of_the_shared_bound_is_not_kept_and_drops_the_old_one() -> None:
    kept: SharedValues[str] = SharedValues(max_entries=10, max_bytes=100)
    kept.put("a", (1, {}), 10)
    kept.put("a", (2, {}), 26)
    assert kept.get("a") is None and len(kept) == 0 and kept.size == 0


def test_discard() -> None:
    kept: BoundedLru[str, int] = BoundedLru(max_entries=1, max_bytes=1)
    kept.put("a", 1, 1)
    kept.discard("a")
    kept.discard("never there")
    assert kept.get("a") is None


def test_a_bound_without_room_is_refused() -> None:
    with pytest.raises(ValueError):
        BoundedLru(max_entries=0, max_bytes=10)
    with pytest.raises(ValueError):
        BoundedLru(max_entries=10, max_bytes=0)
