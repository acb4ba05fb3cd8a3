"""Frame sampling: budget, geometry invariants, periodicity, determinism and trait influence."""

from __future__ import annotations

import json
import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quineling.runtime.anatomy import build_anatomy
from quineling.runtime.errors import QuinelingError
from quineling.runtime.frame import phase_fraction, sample_frame

PROGRAM = {
    "inputs": [{"name": "xs", "type": "list", "unit": None, "value": [2, 3, 4]}],
    "steps": [
        {"id": "s1", "op": "square", "args": {}, "in": ["xs"], "out": ["s1"]},
        {"id": "s2", "op": "sum", "args": {}, "in": ["s1"], "out": ["s2"]},
    ],
    "outputs": [{"name": "total", "from": "s2", "type": "number", "unit": None}],
}
TRAITS = {"length": 120, "girth": -40, "curl": 300, "hue": 17, "gait": 0, "temper": -5}


def body(repeats: int = 1, **traits: int) -> dict:
    return {"traits": TRAITS | traits, "repeats": repeats}


def frame(b: dict | None = None, phase: float = 0.25, budget: int = 4000, crests: int = 2) -> dict:
    b = b or body()
    return sample_frame(build_anatomy(PROGRAM, b), b, phase, budget, crests)


def norm(v: list[float]) -> float:
    return math.sqrt(sum(c * c for c in v))


def sub(a: list[float], b: list[float]) -> list[float]:
    return [x - y for x, y in zip(a, b, strict=True)]


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def columns(f: dict) -> int:
    """Points per ring: the first ring edge that wraps around ends the first ring."""
    return next(i for i, j in f["ridges"] if j < i) + 1


@pytest.mark.parametrize("budget", [4000, 4001, 9999, 12345, 24000])
def test_point_count_is_close_to_but_within_budget(budget: int) -> None:
    f = frame(budget=budget)
    assert len(f["points"]) <= budget
    assert len(f["points"]) >= budget - columns(f)
    assert len(f["normals"]) == len(f["points"]) == len(f["owners"])


@pytest.mark.parametrize("repeats", [1, 3, 8])
def test_structure_is_valid(repeats: int) -> None:
    b = body(repeats)
    anatomy = build_anatomy(PROGRAM, b)
    f = sample_frame(anatomy, b, 0.3, 4000, 3)
    assert f["nodeIds"] == [n["id"] for n in anatomy["nodes"]]
    count = len(f["points"])
    assert all(len(p) == 3 and all(math.isfinite(c) for c in p) for p in f["points"])
    assert all(abs(norm(n) - 1.0) <= 1e-9 for n in f["normals"])
    assert all(0 <= o < len(f["nodeIds"]) for o in f["owners"])
    assert f["owners"] == sorted(f["owners"])  # nodes own consecutive stretches of the spine
    assert set(f["owners"]) == set(range(len(f["nodeIds"])))  # every node owns some surface
    assert f["ridges"]
    assert all(len(r) == 2 and 0 <= r[0] < count and 0 <= r[1] < count and r[0] != r[1] for r in f["ridges"])
    assert len({tuple(sorted(r)) for r in f["ridges"]}) == len(f["ridges"])


def test_points_are_rounded_to_six_decimals_and_output_is_plain_json() -> None:
    f = frame()
    assert all(round(c, 6) == c for p in f["points"] for c in p)
    text = json.dumps(f, allow_nan=False)
    assert "-0.0," not in text and "-0.0]" not in text
    assert json.loads(text) == f


def test_normals_are_perpendicular_to_the_surface_and_point_outward() -> None:
    f = frame(body(2, curl=800, gait=1000, temper=700), phase=0.4)
    points, normals = f["points"], f["normals"]
    cols = columns(f)
    rings = len(points) // cols
    for r in range(1, rings - 1, 7):
        ring = points[r * cols : (r + 1) * cols]
        centre = [sum(p[k] for p in ring) / cols for k in range(3)]
        for j in range(0, cols, 5):
            i = r * cols + j
            n = normals[i]
            around = sub(points[r * cols + (j + 1) % cols], points[r * cols + (j - 1) % cols])
            along = sub(points[i + cols], points[i - cols])
            assert abs(dot(n, around)) <= 0.05 * norm(around)
            assert abs(dot(n, along)) <= 0.05 * norm(along)
            assert dot(n, sub(points[i], centre)) > 0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (0.25, 1.25),
        (0.0, 1.0),
        (-0.75, 0.25),
        (-1.0, 0.0),
        (0.1, 1.1),
        (0.3, 1.3),
        (123456789.5, 123456790.5),
        (999999999.0, 1e9),
        (-1e9, -999999999.0),
        (12345678.9, 12345679.9),
    ],
)
def test_phase_and_phase_plus_one_give_identical_frames(a: float, b: float) -> None:
    assert frame(phase=a, crests=3) == frame(phase=b, crests=3)


@settings(max_examples=40, deadline=None)
@given(st.integers(-(10**9) + 1, 10**9 - 1), st.integers(0, (1 << 20) - 1))
def test_periodicity_over_the_whole_phase_range(whole: int, frac: int) -> None:
    phase = whole + frac / (1 << 20)  # exactly representable, as is phase + 1
    assert phase_fraction(phase) == phase_fraction(phase + 1)
    assert 0.0 <= phase_fraction(phase) < 1.0


def test_phase_moves_the_wave() -> None:
    assert frame(phase=0.0) != frame(phase=0.25)
    assert frame(phase=0.0) != frame(phase=0.5)


def test_identical_input_gives_identical_output() -> None:
    first, second = frame(budget=24000), frame(budget=24000)
    assert json.dumps(first) == json.dumps(second)


def test_crests_change_geometry() -> None:
    assert frame(crests=2)["points"] != frame(crests=3)["points"]
    assert frame(crests=3)["points"] != frame(crests=4)["points"]


def extent(f: dict, axis: int) -> float:
    values = [p[axis] for p in f["points"]]
    return max(values) - min(values)


def test_traits_shape_the_body() -> None:
    straight = {"curl": 0}
    assert extent(frame(body(**straight, length=800)), 0) > extent(frame(body(**straight, length=-800)), 0)
    assert extent(frame(body(**straight, girth=800)), 1) > extent(frame(body(**straight, girth=-800)), 1)
    # Curl bends the spine out of its straight line (the y extent of a straight body is just its width).
    assert extent(frame(body(curl=900)), 1) > extent(frame(body(curl=0)), 1) * 2
    assert extent(frame(body(gait=1000)), 2) > extent(frame(body(gait=-1000)), 2)
    assert frame(body(temper=800))["points"] != frame(body(temper=-800))["points"]
    # Hue colours the body but does not move it.
    assert frame(body(hue=-1000)) == frame(body(hue=1000))


def test_repeats_lengthen_the_body() -> None:
    assert extent(frame(body(3, curl=0)), 0) > 2 * extent(frame(body(1, curl=0)), 0)


@pytest.mark.parametrize("curl", [-1000, 1000])
def test_extreme_traits_still_give_unit_normals(curl: int) -> None:
    b = body(8, length=-1000, girth=1000, curl=curl, gait=1000, temper=1000)
    f = frame(b, budget=6000)
    assert all(abs(norm(n) - 1.0) <= 1e-9 for n in f["normals"])


def test_budget_24000_is_fast() -> None:
    b = body(8)
    anatomy = build_anatomy(PROGRAM, b)
    # CPU time of this process, not wall time: other processes on a loaded machine must not fail it.
    started = time.process_time()
    f = sample_frame(anatomy, b, 0.5, 24000, 4)
    elapsed = time.process_time() - started
    assert len(f["points"]) > 23000
    assert elapsed < 1.0  # typically ~50 ms


def test_empty_anatomy_gives_an_empty_frame() -> None:
    f = sample_frame({"nodes": [], "edges": []}, body(), 0.0, 4000, 2)
    assert f == {"points": [], "normals": [], "owners": [], "ridges": [], "nodeIds": []}


@pytest.mark.parametrize(
    ("phase", "budget", "crests", "code", "path"),
    [
        (float("nan"), 4000, 2, "non-finite", "phase"),
        (float("inf"), 4000, 2, "non-finite", "phase"),
        (1e9 + 1, 4000, 2, "invalid-request", "phase"),
        (True, 4000, 2, "invalid-request", "phase"),
        (0.0, 3999, 2, "invalid-request", "options.budget"),
        (0.0, 24001, 2, "invalid-request", "options.budget"),
        (0.0, 4000, 1, "invalid-request", "options.crests"),
        (0.0, 4000, 5, "invalid-request", "options.crests"),
    ],
)
def test_out_of_range_arguments_are_rejected(
    phase: float, budget: int, crests: int, code: str, path: str
) -> None:
    with pytest.raises(QuinelingError) as info:
        frame(phase=phase, budget=budget, crests=crests)
    assert (info.value.code, info.value.path) == (code, path)
