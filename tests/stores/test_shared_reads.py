"""The bounds of the decoded values kept for shared reads (stores/shared_reads.py)."""

from __future__ import annotations

from stores.shared_reads import SharedValues


def test_the_least_recently_used_goes_first_at_the_count_bound() -> None:
    kept: SharedValues[str] = SharedValues(max_entries=2, max_bytes=1000)
    kept.put("a", 1, {"v": "a"}, 10)
    kept.put("b", 1, {"v": "b"}, 10)
    assert kept.get("a") == (1, {"v": "a"})  # a is now the most recently used
    kept.put("c", 1, {"v": "c"}, 10)
    assert kept.get("b") is None and kept.get("a") is not None and kept.get("c") is not None


def test_the_byte_bound_holds_and_a_replaced_value_frees_its_bytes() -> None:
    kept: SharedValues[str] = SharedValues(max_entries=100, max_bytes=100)
    for name in "abcd":
        kept.put(name, 1, {}, 25)
    assert len(kept) == 4
    kept.put("a", 2, {"v": 2}, 25)  # replaces a's entry: still 100 bytes
    assert len(kept) == 4 and kept.get("a") == (2, {"v": 2})
    kept.put("e", 1, {}, 25)  # over the bound: the least recently used (b) goes
    assert kept.get("b") is None and len(kept) == 4


def test_a_value_over_a_quarter_of_the_bound_is_not_kept_and_drops_the_old_one() -> None:
    kept: SharedValues[str] = SharedValues(max_entries=10, max_bytes=100)
    kept.put("a", 1, {}, 10)
    kept.put("a", 2, {}, 26)
    assert kept.get("a") is None and len(kept) == 0


def test_discard() -> None:
    kept: SharedValues[str] = SharedValues()
    kept.put("a", 1, {}, 1)
    kept.discard("a")
    kept.discard("never there")
    assert kept.get("a") is None
