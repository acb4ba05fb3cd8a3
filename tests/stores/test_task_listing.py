"""ListTasks conformance (part of the TaskStore suite): ordering, filters, totalSize and the signed cursor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from stores import InvalidCursor, TaskQuery, TaskStore
from stores.listing import parse_instant

from .test_task_store import COMPLETED, INPUT, WORKING, task


def listed(store: TaskStore, scope: str = "s", **query: Any) -> list[str]:
    return [t["id"] for t in store.list(scope, TaskQuery(**query)).tasks]


def walk(store: TaskStore, scope: str = "s", **query: Any) -> list[list[str]]:
    pages, token = [], ""
    while True:
        page = store.list(scope, TaskQuery(page_token=token, **query))
        pages.append([t["id"] for t in page.tasks])
        token = page.next_page_token
        if not token:
            return pages


def test_newest_status_timestamp_first_comparing_instants(task_store: TaskStore) -> None:
    task_store.save("s", task("noon-utc", ts="2026-03-01T12:00:00Z"))
    task_store.save("s", task("noon-plus2", ts="2026-03-01T12:00:00+02:00"))  # 10:00Z
    task_store.save("s", task("eleven-minus3", ts="2026-03-01T11:00:00.5-03:00"))  # 14:00:00.5Z
    task_store.save("s", task("fraction", ts="2026-03-01T12:00:00.000001Z"))
    assert listed(task_store) == ["eleven-minus3", "fraction", "noon-utc", "noon-plus2"]


def test_equal_timestamps_tie_by_admission_sequence_newest_first(task_store: TaskStore) -> None:
    """The sequence is fixed at first save: updating an older task does not move it ahead of newer ones."""
    for name in ("first", "second", "third"):
        task_store.save("s", task(name, ts="2026-03-01T12:00:00Z"))
    task_store.save("s", task("first", WORKING, ts="2026-03-01T13:00:00+01:00"))  # same instant, updated
    assert listed(task_store) == ["third", "second", "first"]


def test_missing_or_invalid_timestamps_sort_last(task_store: TaskStore) -> None:
    task_store.save("s", task("none", ts=None))
    task_store.save("s", task("valid", ts="2020-01-01T00:00:00Z"))
    task_store.save("s", task("garbage", ts="yesterday"))
    task_store.save("s", task("naive", ts="2026-01-01T00:00:00"))
    assert listed(task_store) == ["valid", "naive", "garbage", "none"]


def test_filters_and_total_size(task_store: TaskStore) -> None:
    task_store.save("s", task("a", COMPLETED, ctx="c1"))
    task_store.save("s", task("b", WORKING, ctx="c1"))
    task_store.save("s", task("c", COMPLETED, ctx="c2"))
    task_store.save("other", task("d", COMPLETED, ctx="c1"))
    page = task_store.list("s", TaskQuery(context_id="c1", page_size=1))
    assert (page.total_size, len(page.tasks), bool(page.next_page_token)) == (2, 1, True)
    assert sorted(listed(task_store, status=COMPLETED)) == ["a", "c"]
    assert listed(task_store, context_id="c1", status=WORKING) == ["b"]
    assert listed(task_store, context_id="nope") == []
    assert task_store.list("s", TaskQuery()).total_size == 3


def test_status_timestamp_after_is_inclusive_and_offset_aware(task_store: TaskStore) -> None:
    """A task at exactly the instant is kept; invalid or missing timestamps are excluded."""
    task_store.save("s", task("before", ts="2026-03-01T11:59:59.999Z"))
    task_store.save("s", task("exact", ts="2026-03-01T14:00:00+02:00"))  # 12:00Z
    task_store.save("s", task("after", ts="2026-03-01T07:00:01-05:00"))  # 12:00:01Z
    task_store.save("s", task("missing", ts=None))
    task_store.save("s", task("invalid", ts="2026-13-01T00:00:00Z"))
    at = datetime(2026, 3, 1, 9, 0, tzinfo=timezone(timedelta(hours=-3)))  # 12:00Z
    page = task_store.list("s", TaskQuery(status_after=at))
    assert [t["id"] for t in page.tasks] == ["after", "exact"]
    assert page.total_size == 2


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (
            datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=23, minutes=59))),
            ["last", "first"],
        ),  # year 0 in UTC
        (datetime(9999, 12, 31, 23, 59, tzinfo=timezone(-timedelta(hours=23, minutes=59))), []),  # year 10000
        (datetime(1, 1, 1, tzinfo=UTC), ["last", "first"]),
        (datetime.max.replace(tzinfo=UTC), ["last"]),
    ],
)
def test_status_after_at_the_ends_of_the_datetime_range(
    task_store: TaskStore, after: datetime, expected: list[str]
) -> None:
    """Any aware instant filters without overflowing, even one that has no UTC datetime of its own."""
    task_store.save("s", task("first", ts="0001-01-01T00:00:00Z"))
    task_store.save("s", task("last", ts="9999-12-31T23:59:59.999999Z"))
    page = task_store.list("s", TaskQuery(status_after=after, page_size=1))
    assert [t["id"] for t in page.tasks] == expected[:1] and page.total_size == len(expected)
    if page.next_page_token:  # the cursor of such a filter works too
        rest = task_store.list(
            "s", TaskQuery(status_after=after, page_size=1, page_token=page.next_page_token)
        )
        assert [t["id"] for t in rest.tasks] == expected[1:]


def test_page_size_must_be_1_to_100(task_store: TaskStore) -> None:
    for bad in (0, 101, -1):
        with pytest.raises(ValueError):
            task_store.list("s", TaskQuery(page_size=bad))
    task_store.list("s", TaskQuery(page_size=100))


def test_pages_cover_every_match_once(task_store: TaskStore) -> None:
    for i in range(7):
        task_store.save("s", task(f"t{i}", ts=f"2026-03-01T12:00:0{i}Z"))
    assert walk(task_store, page_size=3) == [["t6", "t5", "t4"], ["t3", "t2", "t1"], ["t0"]]
    last = task_store.list("s", TaskQuery(page_size=7))
    assert last.next_page_token == ""


def test_cursor_survives_eviction_of_earlier_rows_and_of_the_cursor_row(make_task_store, clock) -> None:
    store = make_task_store(max_tasks=5)
    # Newest timestamps get the oldest last updates, so eviction takes the first page's rows first.
    for i in (5, 4, 3, 2, 1):
        store.save("s", task(f"t{i}", ts=f"2026-03-01T12:00:0{i}Z"))
        clock.advance(1)
    first = store.list("s", TaskQuery(page_size=2))
    assert [t["id"] for t in first.tasks] == ["t5", "t4"]
    store.save("s", task("n1", WORKING, ts="2026-03-01T11:00:00Z"))  # evicts t5 (an earlier row)
    store.save("s", task("n2", WORKING, ts="2026-03-01T10:00:00Z"))  # evicts t4 (the cursor row)
    assert store.load("s", "t5") is None and store.load("s", "t4") is None
    second = store.list("s", TaskQuery(page_size=2, page_token=first.next_page_token))
    assert [t["id"] for t in second.tasks] == ["t3", "t2"]
    third = store.list("s", TaskQuery(page_size=2, page_token=second.next_page_token))
    assert [t["id"] for t in third.tasks] == ["t1", "n1"]
    assert second.total_size == 5


def test_cursor_is_bound_to_filters_and_scope(task_store: TaskStore) -> None:
    for i in range(3):
        task_store.save("s", task(f"t{i}", INPUT, ts=f"2026-03-01T12:00:0{i}Z"))
        task_store.save("t", task(f"t{i}", INPUT, ts=f"2026-03-01T12:00:0{i}Z"))
    token = task_store.list("s", TaskQuery(page_size=1, context_id="ctx")).next_page_token
    assert task_store.list("s", TaskQuery(page_size=2, context_id="ctx", page_token=token)).tasks
    others = [
        TaskQuery(page_token=token),
        TaskQuery(page_token=token, context_id="other"),
        TaskQuery(page_token=token, context_id="ctx", status=INPUT),
        TaskQuery(page_token=token, context_id="ctx", status_after=datetime(2020, 1, 1, tzinfo=UTC)),
    ]
    for query in others:
        with pytest.raises(InvalidCursor):
            task_store.list("s", query)
    with pytest.raises(InvalidCursor):
        task_store.list("t", TaskQuery(page_token=token, context_id="ctx"))


def test_forged_and_malformed_cursors_are_rejected(task_store: TaskStore) -> None:
    for i in range(3):
        task_store.save("s", task(f"t{i}"))
    token = task_store.list("s", TaskQuery(page_size=1)).next_page_token
    body, mac = token.split(".")
    tampered_body = ("A" if body[0] != "A" else "B") + body[1:]
    tampered_mac = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    for bad in (
        "garbage",
        "a.b.c",
        ".",
        f"{body}.",
        f"{tampered_body}.{mac}",
        f"{body}.{tampered_mac}",
        "é.é",
    ):
        with pytest.raises(InvalidCursor):
            task_store.list("s", TaskQuery(page_token=bad))


def test_cursor_from_another_store_is_rejected(make_backend, clock) -> None:
    first = make_backend().task_store(clock=clock, describe=describe_task)
    second = make_backend(prefix=make_backend.prefix + "-other").task_store(
        clock=clock, describe=describe_task
    )
    for store in (first, second):
        for i in range(3):
            store.save("s", task(f"t{i}"))
    token = first.list("s", TaskQuery(page_size=1)).next_page_token
    with pytest.raises(InvalidCursor):
        second.list("s", TaskQuery(page_size=1, page_token=token))


def test_cursor_from_another_instance_on_the_same_server_is_accepted(make_backend, clock) -> None:
    """Any worker accepts any other worker's cursor: the signing secret lives in the shared store."""
    if not make_backend.shared:
        pytest.skip("the in-process store is one instance per process")
    first = make_backend().task_store(clock=clock, describe=describe_task)
    second = make_backend().task_store(clock=clock, describe=describe_task)
    for i in range(3):
        first.save("s", task(f"t{i}", ts=f"2026-03-01T12:00:0{i}Z"))
    token = first.list("s", TaskQuery(page_size=1)).next_page_token
    page = second.list("s", TaskQuery(page_size=5, page_token=token))
    assert [t["id"] for t in page.tasks] == ["t1", "t0"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T12:00:00Z", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01t12:00:00z", datetime(2026, 3, 1, 12, tzinfo=UTC)),
        ("2026-03-01T12:00:00.1234567+01:30", datetime(2026, 3, 1, 10, 30, 0, 123456, tzinfo=UTC)),
        ("2026-12-31T23:59:60Z", datetime(2027, 1, 1, tzinfo=UTC)),
        ("2026-03-01T12:00:00", None),
        ("2026-02-30T12:00:00Z", None),
        ("2026-03-01T12:00:00+24:00", None),
        ("", None),
        (None, None),
        (12, None),
    ],
)
def test_parse_instant(text: Any, expected: datetime | None) -> None:
    assert parse_instant(text) == expected
