from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quineling.runtime.errors import QuinelingError
from quineling.runtime.intent import check_program, program_of_intent, validate_intent
from quineling.runtime.kernel import execute
from quineling.runtime.thought import parse_thought


def parsed(thought: str) -> dict[str, Any]:
    result = parse_thought(thought)
    assert result["status"] == "parsed", result
    assert result["diagnostics"] == []
    assert validate_intent(result["intent"]) == result["intent"]
    return result


def outputs_of(thought: str) -> dict[str, Any]:
    return execute(program_of_intent(parsed(thought)["intent"]))[0]


def codes(result: dict[str, Any]) -> list[str]:
    return [d["code"] for d in result["diagnostics"]]


# ------------------------------------------------------------------------------------------------ parsed


def test_total_of_squares() -> None:
    thought = "[2,3,4] | square | sum | report total"
    result = parsed(thought)
    assert result["intent"] == {
        "format": "quineling-intent",
        "version": 1,
        "name": "total",
        "thought": thought,
        "inputs": [{"name": "xs", "type": "list", "unit": None, "value": [2, 3, 4]}],
        "steps": [
            {"id": "s1", "op": "square", "args": {}, "in": ["xs"], "out": ["s1"]},
            {"id": "s2", "op": "sum", "args": {}, "in": ["s1"], "out": ["s2"]},
        ],
        "outputs": [{"name": "total", "from": "s2", "type": "number", "unit": None}],
    }
    assert result["assumptions"] == ["no unit given; values are dimensionless"]
    assert outputs_of(thought) == {"total": 29}


def test_allocation_with_units() -> None:
    thought = "5 credits | allocate from 20 | report allocated, remaining"
    result = parsed(thought)
    intent = result["intent"]
    assert intent["name"] == "allocated-remaining"
    assert intent["inputs"] == [{"name": "x", "type": "number", "unit": "credits", "value": 5}]
    assert intent["steps"] == [
        {
            "id": "s1",
            "op": "allocate",
            "args": {"from": 20},
            "in": ["x"],
            "out": ["s1_allocated", "s1_remaining"],
        }
    ]
    assert intent["outputs"] == [
        {"name": "allocated", "from": "s1_allocated", "type": "number", "unit": "credits"},
        {"name": "remaining", "from": "s1_remaining", "type": "number", "unit": "credits"},
    ]
    assert "allocate from 20 is read in credits" in result["assumptions"]
    assert outputs_of(thought) == {"allocated": 5, "remaining": 15}


def test_request_in_credits() -> None:
    result = parsed("[2,2,8] credits | sum | report request")
    assert result["intent"]["outputs"] == [
        {"name": "request", "from": "s1", "type": "number", "unit": "credits"}
    ]
    assert result["assumptions"] == []
    assert outputs_of("[2,2,8] credits | sum | report request") == {"request": 12}


@pytest.mark.parametrize(
    ("thought", "expected"),
    [
        ("[1, -2.5, 3e2] | sum | report t", {"t": 298.5}),
        ("range 4 | sum | report t", {"t": 10}),
        ("range 5 | product | report p", {"p": 120}),
        ("[5, 1, 4] | sort | take 2 | report low", {"low": [1, 4]}),
        ("[1,2,3,4,5,6] | keep even | scale 0.5 | report halves", {"halves": [1, 2, 3]}),
        ("-3 m | square | increment | report a", {"a": 10}),
        ("[3,4] m | square | mean | report ms", {"ms": 12.5}),
        ("[2,2,8] credits | sum | allocate from 20 credits | report a, b", {"a": 12, "b": 8}),
        ("[1,2,3] s | count | report n", {"n": 3}),
        ("7 | negate | abs | double | report x", {"x": 14}),
        ("[9, 7] | reverse | min | report lo", {"lo": 7}),
        ("[9, 7] | max | report hi", {"hi": 9}),
        (".5 | double | report one", {"one": 1}),
    ],
)
def test_pipelines_run(thought: str, expected: dict[str, Any]) -> None:
    assert outputs_of(thought) == expected


def test_units_are_canonicalised_with_an_assumption() -> None:
    result = parsed("[1, 2] s^-1*m | sum | report v")
    assert result["intent"]["inputs"][0]["unit"] == "m*s^-1"
    assert result["intent"]["outputs"][0]["unit"] == "m*s^-1"
    assert "unit s^-1*m is read as m*s^-1" in result["assumptions"]
    assert parsed("[1] m | square | sum | report a")["intent"]["outputs"][0]["unit"] == "m^2"


def test_range_assumption_and_value() -> None:
    result = parsed("range 3 | sum | report t")
    assert result["intent"]["inputs"][0]["value"] == [1, 2, 3]
    assert result["assumptions"] == ["range 3 is the list 1..3", "no unit given; values are dimensionless"]


def test_intent_name_from_report_names() -> None:
    assert parsed("5 | allocate from 9 | report my_part, rest")["intent"]["name"] == "my-part-rest"
    long_name = "a" * 32
    result = parsed(f"5 | allocate from 9 | report {long_name}, b{long_name[1:]}")
    assert len(result["intent"]["name"]) == 64 and result["intent"]["name"].startswith("a" * 32 + "-")


def test_source_map_spans_point_into_the_original_thought() -> None:
    thought = "  [2, 3, 4] m  |  square |sum| report   total  "
    result = parsed(thought)
    slices = {entry["element"]: thought[slice(*entry["span"])] for entry in result["sourceMap"]}
    assert slices == {
        "inputs[0]": "[2, 3, 4] m",
        "steps[0]": "square",
        "steps[1]": "sum",
        "outputs[0]": "total",
    }
    assert result["intent"]["thought"] == thought  # untrimmed


def test_source_map_for_two_outputs() -> None:
    thought = "5 credits | allocate from 20 | report allocated, remaining"
    result = parsed(thought)
    assert [(e["element"], thought[slice(*e["span"])]) for e in result["sourceMap"]] == [
        ("inputs[0]", "5 credits"),
        ("steps[0]", "allocate from 20"),
        ("outputs[0]", "allocated"),
        ("outputs[1]", "remaining"),
    ]


def test_integral_float_literals_become_ints() -> None:
    intent = parsed("[2.0, 3.50, 1e2] | sum | report t")["intent"]
    assert intent["inputs"][0]["value"] == [2, 3.5, 100]
    assert [type(v) for v in intent["inputs"][0]["value"]] == [int, float, int]


# ----------------------------------------------------------------------------------------------- clarify


@pytest.mark.parametrize("thought", ["", " ", "   ", "\n\t ", " " * 16384])
def test_empty_thought_asks_for_clarification(thought: str) -> None:
    result = parse_thought(thought)
    assert result["status"] == "clarify"
    assert codes(result) == ["empty-thought"]
    assert result["diagnostics"][0]["span"] == [0, len(thought)]
    assert "intent" not in result and result["sourceMap"] == []


@pytest.mark.parametrize(
    ("thought", "code", "text"),
    [
        ("[1,2] | sum", "missing-report", ""),
        ("sum | report t", "missing-source", "sum"),
        ("report t", "missing-source", "report t"),
        ("[1,2] | report t", "missing-operation", "report t"),
        ("[1,2] | scale | report t", "missing-argument", "scale"),
        ("[1,2] | take | report t", "missing-argument", "take"),
        ("[1,2] | keep | report t", "missing-argument", "keep"),
        ("5 | allocate from | report a, b", "missing-argument", "allocate from"),
        ("range | sum | report t", "missing-argument", "range"),
        ("[1,2] | sum | report", "missing-argument", "report"),
    ],
)
def test_clarify(thought: str, code: str, text: str) -> None:
    result = parse_thought(thought)
    assert result["status"] == "clarify", result
    assert code in codes(result)
    diagnostic = next(d for d in result["diagnostics"] if d["code"] == code)
    assert thought[slice(*diagnostic["span"])] == text
    assert "intent" not in result


def test_missing_report_points_at_the_end() -> None:
    result = parse_thought("[1,2] | sum   ")
    assert result["diagnostics"] == [
        {"code": "missing-report", "message": "end the pipeline with 'report NAME'", "span": [11, 11]}
    ]


def test_empty_stage_between_bars() -> None:
    result = parse_thought("[1,2] | | sum | report t")
    assert result["status"] == "clarify" and codes(result) == ["empty-stage"]


# ------------------------------------------------------------------------------------------- unsupported


@pytest.mark.parametrize(
    ("thought", "text"),
    [
        ("[1,2] | email the team | report x", "email the team"),
        ("[1,2] | cube | report x", "cube"),
        ("[1,2] | Sum | report x", "Sum"),
        ("[1,2] | sum | deploy to production | report x", "deploy to production"),
    ],
)
def test_unsupported(thought: str, text: str) -> None:
    result = parse_thought(thought)
    assert result["status"] == "unsupported"
    assert codes(result) == ["unsupported-operation"]
    assert thought[slice(*result["diagnostics"][0]["span"])] == text
    assert "intent" not in result


def test_unsupported_beats_clarify() -> None:
    result = parse_thought("[1,2] | email the team")
    assert result["status"] == "unsupported"
    assert codes(result) == ["unsupported-operation", "missing-report"]


def test_more_than_64_operations_is_unsupported() -> None:
    assert parse_thought("[1] | " + "double | " * 64 + "sum | report t")["status"] == "unsupported"
    assert parse_thought("[1] | " + "double | " * 63 + "sum | report t")["status"] == "parsed"


# ------------------------------------------------------------------------------------------ inconsistent


@pytest.mark.parametrize(
    ("thought", "code", "text"),
    [
        ("7 | sum | report t", "type-mismatch", "sum"),
        ("[1,2] | allocate from 5 | report a, b", "type-mismatch", "allocate from 5"),
        ("5 | allocate from 20 | double | report a", "type-mismatch", "double"),
        ("[1,2] | sum | report a, b", "report-count", "a, b"),
        ("5 | allocate from 20 | report a", "report-count", "a"),
        ("5 | allocate from 20 | report a, a", "duplicate-name", "a"),
        ("[1,2] m | product | report p", "unit-mismatch", "product"),
        ("[1] m^9 | square | report p", "unit-mismatch", "square"),
        ("5 credits | allocate from 20 m | report a, b", "unit-mismatch", "m"),
        ("[1,2] | scale 3 m | report t", "unit-mismatch", "m"),
        ("[1,2] | scale x | report t", "invalid-value", "x"),
        ("[1,2] | scale 3 4 | report t", "invalid-argument", "4"),
        ("[1,2] | take 0 | report t", "invalid-argument", "take 0"),
        ("[1,2] | take 2.5 | report t", "invalid-argument", "take 2.5"),
        ("[1,2] | keep prime | report t", "invalid-argument", "keep prime"),
        ("[1,2] | sum all | report t", "invalid-argument", "sum all"),
        ("5 | allocate 20 | report a, b", "invalid-argument", "allocate 20"),
        ("5 | allocate from -1 | report a, b", "invalid-argument", "-1"),
        ("[1,,2] | sum | report t", "invalid-value", ""),
        ("[1, two] | sum | report t", "invalid-value", "two"),
        ("[1, 2 | sum | report t", "invalid-value", "[1, 2"),
        ("[] | sum | report t", "invalid-value", "[]"),
        ("[1, 1e999] | sum | report t", "non-finite", "1e999"),
        ("5credits | double | report t", "invalid-value", "5credits"),
        ("[1,2] Credits | sum | report t", "invalid-unit", "Credits"),
        ("[1,2] m/s | sum | report t", "invalid-unit", "m/s"),
        ("range 0 | sum | report t", "invalid-argument", "0"),
        ("range 1025 | sum | report t", "invalid-argument", "1025"),
        ("[1,2] | sum | report Total", "invalid-name", "Total"),
        ("[1,2] | sum | report a,", "invalid-name", ""),
        ("[1,2] | report a | sum | report b", "misplaced-report", "report a"),
        ("[1,2] | [3] | sum | report t", "misplaced-source", "[3]"),
    ],
)
def test_inconsistent(thought: str, code: str, text: str) -> None:
    result = parse_thought(thought)
    assert result["status"] == "inconsistent", result
    assert code in codes(result)
    diagnostic = next(d for d in result["diagnostics"] if d["code"] == code)
    assert thought[slice(*diagnostic["span"])] == text
    assert "intent" not in result and result["sourceMap"] == []


def test_list_longer_than_1024_is_inconsistent() -> None:
    assert parse_thought("[" + ",".join(["1"] * 1025) + "] | sum | report t")["status"] == "inconsistent"
    assert parse_thought("[" + ",".join(["1"] * 1024) + "] | sum | report t")["status"] == "parsed"


def test_diagnostic_shape() -> None:
    (diagnostic,) = parse_thought("7 | sum | report t")["diagnostics"]
    assert set(diagnostic) == {"code", "message", "span"}
    assert isinstance(diagnostic["message"], str) and diagnostic["message"]
    assert diagnostic["span"] == [4, 7]


# ------------------------------------------------------------------------------------------------ limits


def test_length_limit_applies_before_trimming() -> None:
    with pytest.raises(QuinelingError) as caught:
        parse_thought(" " * 16385)
    assert (caught.value.code, caught.value.path) == ("invalid-request", "thought")
    with pytest.raises(QuinelingError):
        parse_thought("[1] | sum | report t" + " " * 16365)
    padded = "[1] | sum | report t" + " " * (16384 - 20)
    assert len(padded) == 16384 and parse_thought(padded)["status"] == "parsed"


def test_non_string_thought_is_invalid_request() -> None:
    with pytest.raises(QuinelingError) as caught:
        parse_thought(42)  # type: ignore[arg-type]
    assert (caught.value.code, caught.value.path) == ("invalid-request", "thought")


def test_parse_is_deterministic_and_results_are_independent() -> None:
    thought = "[2,3,4] | square | sum | report total"
    first = parse_thought(thought)
    snapshot = copy.deepcopy(first)
    first["intent"]["steps"].clear()
    first["assumptions"].append("tampered")
    assert parse_thought(thought) == snapshot


# ------------------------------------------------------------------------------------- generated pipelines

UNITS = [None, "credits", "m", "m*s^-1"]
SAME_SHAPE = ["square", "double", "negate", "abs", "increment", "scale 2", "scale -0.5"]
LIST_ONLY = ["sort", "reverse", "keep even", "keep odd", "take 2"]
REDUCE = ["sum", "mean", "min", "max", "count", "product"]
NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
SPACE = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def pipelines(draw: st.DrawFn) -> tuple[str, int]:
    """A well-typed thought (with random spacing) and the number of ports it reports."""
    unit = draw(st.sampled_from(UNITS))
    kind = draw(st.sampled_from(["list", "number", "range"]))
    if kind == "list":
        values = draw(st.lists(st.integers(-50, 50), min_size=1, max_size=6))
        source = "[" + ", ".join(map(str, values)) + "]"
    elif kind == "number":
        source = str(draw(st.integers(-50, 50)))
    else:
        source = f"range {draw(st.integers(1, 6))}"
    shape = "number" if kind == "number" else "list"
    stages = [source + (f" {unit}" if unit else "")]
    for _ in range(draw(st.integers(1, 6))):
        choices = list(SAME_SHAPE)
        if shape == "list":
            choices += LIST_ONLY + [r for r in REDUCE if r != "product" or unit is None]
        op = draw(st.sampled_from(choices))
        if op == "square" and unit is not None:
            if "*" in unit or "^" in unit:
                op = "double"  # keep the generator's unit bookkeeping simple
            else:
                unit = f"{unit}^2"
        if op in REDUCE:
            shape = "number"
            unit = None if op == "count" else unit
        stages.append(op)
    ports = 1
    if shape == "number" and draw(st.booleans()):
        stages.append("allocate from 100")
        ports = 2
    names = draw(st.lists(NAMES, min_size=ports, max_size=ports, unique=True))
    stages.append("report " + ", ".join(names))
    pad = [draw(SPACE) for _ in range(len(stages) + 1)]
    return pad[0] + "|".join(f"{stage}{pad[i + 1]}" for i, stage in enumerate(stages)), ports


@settings(max_examples=200, deadline=None)
@given(pipelines())
def test_generated_pipelines_parse_check_and_run(case: tuple[str, int]) -> None:
    thought, ports = case
    result = parse_thought(thought)
    assert result["status"] == "parsed", (thought, result)
    intent = result["intent"]
    assert validate_intent(intent) == intent
    interface = check_program(program_of_intent(intent))
    assert len(interface["outputs"]) == ports
    assert [o["name"] for o in interface["outputs"]] == [o["name"] for o in intent["outputs"]]
    elements = [e["element"] for e in result["sourceMap"]]
    assert elements == ["inputs[0]"] + [f"steps[{i}]" for i in range(len(intent["steps"]))] + [
        f"outputs[{j}]" for j in range(ports)
    ]
    for entry in result["sourceMap"]:
        start, end = entry["span"]
        text = thought[start:end]
        assert text == text.strip() and text and "|" not in text
    for j, output in enumerate(intent["outputs"]):
        assert thought[slice(*result["sourceMap"][-ports + j]["span"])] == output["name"]
    try:
        outputs, _, trace = execute(program_of_intent(intent))
    except QuinelingError as exc:  # e.g. mean of an emptied list
        assert exc.code == "non-finite"
    else:
        assert set(outputs) == {o["name"] for o in intent["outputs"]}
        assert len(trace) == len(intent["steps"])


@given(st.text(max_size=80))
def test_arbitrary_text_never_crashes(thought: str) -> None:
    result = parse_thought(thought)
    assert result["status"] in {"parsed", "clarify", "unsupported", "inconsistent"}
    for diagnostic in result["diagnostics"]:
        start, end = diagnostic["span"]
        assert 0 <= start <= end <= len(thought)
    if result["status"] == "parsed":
        assert validate_intent(result["intent"]) == result["intent"]
    else:
        assert result["diagnostics"] and "intent" not in result
