from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quineling.runtime.errors import QuinelingError
from quineling.runtime.intent import check_program
from quineling.runtime.kernel import execute


def pipeline(value: Any, *ops: tuple[str, dict[str, Any]], unit: str | None = None) -> dict[str, Any]:
    """A linear program; the output takes the last step's first port (type/unit from check_program)."""
    kind = "list" if isinstance(value, list) else "number"
    steps, port = [], "xs"
    for i, (op, args) in enumerate(ops, start=1):
        out = [f"s{i}a", f"s{i}r"] if op == "allocate" else [f"s{i}"]
        steps.append({"id": f"s{i}", "op": op, "args": args, "in": [port], "out": out})
        port = out[0]
    program = {
        "inputs": [{"name": "xs", "type": kind, "unit": unit, "value": value}],
        "steps": steps,
        "outputs": [{"name": "r", "from": port, "type": "number", "unit": None}],
    }
    # Fill in the declared output from what the port produces, by asking the checker.
    for kind_guess in ("number", "list"):
        for unit_guess in (None, unit, f"{unit}^2" if unit else None):
            program["outputs"][0].update(type=kind_guess, unit=unit_guess)
            try:
                check_program(program)
                return program
            except QuinelingError:
                continue
    raise AssertionError("could not type the test pipeline")


def run(value: Any, *ops: tuple[str, dict[str, Any]], unit: str | None = None) -> Any:
    outputs, _, _ = execute(pipeline(value, *ops, unit=unit))
    return outputs["r"]


def test_square_sum_and_allocate_examples() -> None:
    outputs, units, trace = execute(pipeline([2, 3, 4], ("square", {}), ("sum", {})))
    assert outputs == {"r": 29} and units == {"r": None}
    assert trace == [
        {"step": "s1", "op": "square", "values": [[4, 9, 16]]},
        {"step": "s2", "op": "sum", "values": [29]},
    ]
    program = {
        "inputs": [{"name": "x", "type": "number", "unit": "credits", "value": 5}],
        "steps": [{"id": "s1", "op": "allocate", "args": {"from": 20}, "in": ["x"], "out": ["a", "b"]}],
        "outputs": [
            {"name": "allocated", "from": "a", "type": "number", "unit": "credits"},
            {"name": "remaining", "from": "b", "type": "number", "unit": "credits"},
        ],
    }
    check_program(program)
    outputs, units, trace = execute(program)
    assert outputs == {"allocated": 5, "remaining": 15}
    assert units == {"allocated": "credits", "remaining": "credits"}
    assert trace == [{"step": "s1", "op": "allocate", "values": [5, 15]}]


@pytest.mark.parametrize(
    ("value", "op", "args", "expected"),
    [
        ([1, -2, 3], "square", {}, [1, 4, 9]),
        (-3, "square", {}, 9),
        ([1, 2.5], "double", {}, [2, 5]),
        ([1, -2], "negate", {}, [-1, 2]),
        (0, "negate", {}, 0),
        ([-1.5, 2], "abs", {}, [1.5, 2]),
        (4, "increment", {}, 5),
        ([1, 2], "scale", {"k": 0.5}, [0.5, 1]),
        (3, "scale", {"k": -2}, -6),
        ([3, 1, 2], "sort", {}, [1, 2, 3]),
        ([3, 1, 2], "reverse", {}, [2, 1, 3]),
        ([1, 2, 3, 4, -4, -3, 0], "keep", {"parity": "even"}, [2, 4, -4, 0]),
        ([1, 2, 3, 4, -4, -3, 0], "keep", {"parity": "odd"}, [1, 3, -3]),
        ([1.5, 2, 3], "keep", {"parity": "odd"}, [3]),
        ([1.5, 2, 3], "keep", {"parity": "even"}, [2]),
        ([5, 6, 7], "take", {"n": 2}, [5, 6]),
        ([5, 6, 7], "take", {"n": 10}, [5, 6, 7]),
        ([1, 2, 3.5], "sum", {}, 6.5),
        ([1, 2, 4], "mean", {}, 7 / 3),
        ([2, 4], "mean", {}, 3),
        ([3, -1, 2], "min", {}, -1),
        ([3, -1, 2], "max", {}, 3),
        ([2, 3, 4], "product", {}, 24),
        ([2, 3, 4], "count", {}, 3),
        (-5, "allocate", {"from": 20}, 0),
        (25, "allocate", {"from": 20}, 20),
        (7.5, "allocate", {"from": 20}, 7.5),
    ],
)
def test_catalogue(value: Any, op: str, args: dict[str, Any], expected: Any) -> None:
    assert run(value, (op, args)) == expected


def test_allocate_remaining_is_budget_minus_allocated() -> None:
    program = pipeline(25, ("allocate", {"from": 20}))
    program["outputs"] = [
        {"name": "a", "from": "s1a", "type": "number", "unit": None},
        {"name": "r", "from": "s1r", "type": "number", "unit": None},
    ]
    assert execute(program)[0] == {"a": 20, "r": 0}
    program["steps"][0]["args"]["from"] = 0
    assert execute(program)[0] == {"a": 0, "r": 0}


def test_empty_list_reductions() -> None:
    evens_of_odds = [("keep", {"parity": "even"})]
    assert run([1, 3], *evens_of_odds) == []
    assert run([1, 3], *evens_of_odds, ("sum", {})) == 0
    assert run([1, 3], *evens_of_odds, ("product", {})) == 1
    assert run([1, 3], *evens_of_odds, ("count", {})) == 0
    for op in ("mean", "min", "max"):
        with pytest.raises(QuinelingError) as caught:
            run([1, 3], *evens_of_odds, (op, {}))
        assert (caught.value.code, caught.value.path) == ("non-finite", "steps[1]")


def test_overflow_is_non_finite_with_the_step_path() -> None:
    with pytest.raises(QuinelingError) as caught:
        run([1e200], ("double", {}), ("square", {}), ("sum", {}))
    assert (caught.value.code, caught.value.path) == ("non-finite", "steps[1]")
    with pytest.raises(QuinelingError) as caught:
        run([1e308, 1e308], ("sum", {}))
    assert (caught.value.code, caught.value.path) == ("non-finite", "steps[0]")


def test_repeated_squaring_stays_bounded() -> None:
    # Float arithmetic: 64 squarings overflow quickly instead of building a huge integer.
    with pytest.raises(QuinelingError) as caught:
        run(10, *[("square", {})] * 64)
    assert caught.value.code == "non-finite"


def test_results_write_integral_values_as_ints() -> None:
    result = run([1.5, 2.5], ("sum", {}))
    assert result == 4 and isinstance(result, int)
    outputs, _, trace = execute(pipeline([0.5], ("double", {})))
    assert outputs["r"] == [1] and isinstance(outputs["r"][0], int)
    assert isinstance(trace[0]["values"][0][0], int)
    assert isinstance(run(3, ("negate", {}), ("scale", {"k": 0})), int)  # -0.0 becomes 0


def test_execute_does_not_mutate_the_program() -> None:
    program = pipeline([3, 1, 2], ("sort", {}), ("reverse", {}))
    before = repr(program)
    assert execute(program)[0] == {"r": [3, 2, 1]}
    assert repr(program) == before


def test_trace_has_one_entry_per_step_with_all_out_ports() -> None:
    program = pipeline([2, 2, 8], ("sum", {}), ("allocate", {"from": 20}), unit="credits")
    outputs, units, trace = execute(program)
    assert [t["step"] for t in trace] == ["s1", "s2"]
    assert trace[1] == {"step": "s2", "op": "allocate", "values": [12, 8]}
    assert outputs == {"r": 12} and units == {"r": "credits"}


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=50))
def test_sort_then_take_matches_python(xs: list[int]) -> None:
    assert run(xs, ("sort", {}), ("take", {"n": 3})) == sorted(xs)[:3]
    assert run(xs, ("sum", {})) == sum(xs)
    assert run(xs, ("count", {})) == len(xs)
    assert run(xs, ("keep", {"parity": "even"}), ("count", {})) == sum(1 for x in xs if x % 2 == 0)


@given(st.floats(-1e6, 1e6), st.floats(0, 1e6))
def test_allocate_invariants(x: float, k: float) -> None:
    program = pipeline(x, ("allocate", {"from": k}))
    program["outputs"] = [
        {"name": "a", "from": "s1a", "type": "number", "unit": None},
        {"name": "r", "from": "s1r", "type": "number", "unit": None},
    ]
    outputs = execute(program)[0]
    assert 0 <= outputs["a"] <= k
    assert outputs["r"] == k - outputs["a"]
