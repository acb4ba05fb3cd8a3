"""The memory backend's per-partition task table (stores/memory/task_table.py): its running total and its
lazy eviction heap agree with a full scan after any sequence of saves and removals, the heap stays bounded,
and the table cannot be written around its bookkeeping."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from stores.memory.task_table import TaskRef, TaskTable


@dataclass(frozen=True)
class E:
    size: int
    sequence: int
    updated: float
    version: int
    active: bool


def table() -> TaskTable:
    return TaskTable(lambda e: not e.active)


def scan(tasks: TaskTable, spare: TaskRef, count: int, total: int, max_tasks: int, max_bytes: int) -> list[TaskRef] | None:  # fmt: skip
    """The reference: every evictable task but ``spare``, oldest first, until the save fits."""
    order = sorted((e.updated, e.sequence, r) for r, e in tasks.items() if r != spare and not e.active)
    victims = []
    for _, _, ref in order:
        if count <= max_tasks and total <= max_bytes:
            break
        victims.append(ref)
        count -= 1
        total -= tasks[ref].size
    return victims if count <= max_tasks and total <= max_bytes else None


@pytest.mark.parametrize("seed", range(20))
def test_victims_and_totals_match_a_full_scan(seed: int) -> None:
    rng = random.Random(seed)
    tasks = table()
    sequence = version = 0
    refs = [("s", f"t{n}") for n in range(40)]
    clock = 0.0
    for _ in range(600):
        clock += rng.choice((0.0, 0.5, 1.0))  # equal update times: admission order breaks the tie
        ref = rng.choice(refs)
        if rng.random() < 0.2:
            tasks.pop(ref, None)
            continue
        previous = tasks.get(ref)
        if previous is None:
            sequence += 1
        version += 1
        entry = E(rng.randint(1, 50), previous.sequence if previous else sequence, clock, version,
                  rng.random() < 0.3)  # fmt: skip
        max_tasks, max_bytes = rng.randint(1, 40), rng.randint(50, 1500)
        count = len(tasks) + (0 if previous else 1)
        total = tasks.total_bytes - (previous.size if previous else 0) + entry.size

        def fits(n: int, size: int, count: int = count, total: int = total, mt: int = max_tasks,
                 mb: int = max_bytes) -> bool:  # fmt: skip
            return count - n <= mt and total - size <= mb

        expected = scan(tasks, ref, count, total, max_tasks, max_bytes)
        assert tasks.victims(ref, fits) == expected
        if expected is not None:  # apply the plan, as the store does
            for victim in expected:
                tasks.pop(victim)
            tasks[ref] = entry
        assert tasks.total_bytes == sum(e.size for e in tasks.values())
        assert len(tasks._heap) <= 2 * len(tasks) + 17


def test_the_table_refuses_writes_that_bypass_its_bookkeeping() -> None:
    tasks = table()
    tasks[("s", "a")] = E(3, 1, 0.0, 1, False)
    for write in (
        lambda: tasks.setdefault(("s", "b"), E(1, 2, 0.0, 2, False)),
        lambda: tasks.update({("s", "b"): E(1, 2, 0.0, 2, False)}),
        tasks.popitem,
        tasks.clear,
    ):
        with pytest.raises(TypeError):
            write()
    del tasks[("s", "a")]
    assert tasks.total_bytes == 0 and len(tasks) == 0
    with pytest.raises(KeyError):
        tasks.pop(("s", "a"))
