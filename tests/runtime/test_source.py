"""Canonical source: exact grammar, lossless round trips, strict rejection of everything else."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quineling.runtime.canonical import sha256_hex
from quineling.runtime.errors import QuinelingError
from quineling.runtime.fields import normalize_number
from quineling.runtime.intent import check_program
from quineling.runtime.program import TRAITS
from quineling.runtime.source import MAX_SOURCE_BYTES, OP_ARGS, format_number, parse_source, render_source

EXAMPLE_PROGRAM = {
    "inputs": [{"name": "xs", "type": "list", "unit": None, "value": [2, 3, 4]}],
    "steps": [
        {"id": "s1", "op": "square", "args": {}, "in": ["xs"], "out": ["s1"]},
        {"id": "s2", "op": "sum", "args": {}, "in": ["s1"], "out": ["s2"]},
    ],
    "outputs": [{"name": "total", "from": "s2", "type": "number", "unit": None}],
}
EXAMPLE_BODY = {
    "traits": {"length": 120, "girth": -40, "curl": 300, "hue": 17, "gait": 0, "temper": -5},
    "repeats": 1,
}
EXAMPLE_SOURCE = (
    "quineling 1\n"
    "body repeats=1 length=120 girth=-40 curl=300 hue=17 gait=0 temper=-5\n"
    "input xs list = [2, 3, 4]\n"
    "step s1 square xs\n"
    "step s2 sum s1\n"
    "output total number = s2\n"
)
PARENT = "sha256:" + "ab" * 32
RICH_SOURCE = (
    "quineling 1\n"
    "body repeats=8 length=-1000 girth=1000 curl=0 hue=-1 gait=999 temper=-1000\n"
    f"parent {PARENT}\n"
    f"parent sha256:{'0' * 64}\n"
    "input xs list m^2 = [2, -3.5, 1e-05, 1.5e+16]\n"
    "input x number credits = 5\n"
    "step s1 scale k=0.5 xs\n"
    "step s2 keep parity=odd s1 -> odd_ones\n"
    "step s3 take n=2 odd_ones\n"
    "step s4 allocate from=20 x -> s4_allocated s4_remaining\n"
    "output total list m^2 = s3\n"
    "output a number credits = s4_allocated\n"
    "output r number credits = s4_remaining\n"
)


def assert_invalid(text: object, path: str = "source") -> QuinelingError:
    with pytest.raises(QuinelingError) as info:
        parse_source(text, path)
    assert info.value.code == "invalid-source"
    assert info.value.path == path
    return info.value


# ------------------------------------------------------------------------------------------- fixed examples


def test_example_renders_exactly() -> None:
    assert render_source(EXAMPLE_PROGRAM, EXAMPLE_BODY, []) == EXAMPLE_SOURCE


def test_example_parses_to_the_model() -> None:
    assert parse_source(EXAMPLE_SOURCE) == (EXAMPLE_PROGRAM, EXAMPLE_BODY, [])


def test_rich_source_round_trips_and_parses_as_expected() -> None:
    program, body, parents = parse_source(RICH_SOURCE)
    assert render_source(program, body, parents) == RICH_SOURCE
    assert parents == [PARENT, "sha256:" + "0" * 64]
    assert body == {
        "traits": {"length": -1000, "girth": 1000, "curl": 0, "hue": -1, "gait": 999, "temper": -1000},
        "repeats": 8,
    }
    assert program["inputs"] == [
        {"name": "xs", "type": "list", "unit": "m^2", "value": [2, -3.5, 1e-05, 1.5e16]},
        {"name": "x", "type": "number", "unit": "credits", "value": 5},
    ]
    assert program["steps"] == [
        {"id": "s1", "op": "scale", "args": {"k": 0.5}, "in": ["xs"], "out": ["s1"]},
        {"id": "s2", "op": "keep", "args": {"parity": "odd"}, "in": ["s1"], "out": ["odd_ones"]},
        {"id": "s3", "op": "take", "args": {"n": 2}, "in": ["odd_ones"], "out": ["s3"]},
        {
            "id": "s4",
            "op": "allocate",
            "args": {"from": 20},
            "in": ["x"],
            "out": ["s4_allocated", "s4_remaining"],
        },
    ]
    assert program["outputs"][1] == {"name": "a", "from": "s4_allocated", "type": "number", "unit": "credits"}
    assert isinstance(program["steps"][2]["args"]["n"], int)


@pytest.mark.parametrize("text", [EXAMPLE_SOURCE, RICH_SOURCE])
def test_fixed_examples_are_valid_programs(text: str) -> None:
    # The parser checks syntax only; the caller's check_program judges types and units.
    interface = check_program(parse_source(text)[0], code="invalid-source")
    assert interface["outputs"][0]["name"] == "total"


def test_out_port_names_round_trip_losslessly() -> None:
    program = copy.deepcopy(EXAMPLE_PROGRAM)
    program["steps"][0]["out"] = ["squares"]
    program["steps"][1]["in"] = ["squares"]
    text = render_source(program, EXAMPLE_BODY, [])
    assert "step s1 square xs -> squares\n" in text
    assert parse_source(text)[0] == program


def test_multiple_in_ports_round_trip() -> None:
    program = copy.deepcopy(EXAMPLE_PROGRAM)
    program["steps"][1]["in"] = ["s1", "xs"]
    text = render_source(program, EXAMPLE_BODY, [])
    assert "step s2 sum s1 xs\n" in text
    assert parse_source(text)[0] == program


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (-7, "-7"),
        (2.0, "2"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (1e-05, "1e-05"),
        (1.5e16, "1.5e+16"),
        (2.0**53, "9007199254740992.0"),
        (10**20, "100000000000000000000"),
        (1e20, "1e+20"),
    ],
)
def test_number_spelling(value: float, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), True, "1"])
def test_format_number_rejects_non_numbers(bad: object) -> None:
    with pytest.raises(ValueError):
        format_number(bad)


def test_error_path_is_the_callers() -> None:
    err = assert_invalid("nope\n", path="recovery.source")
    assert "line 1" in err.message


# --------------------------------------------------------------------------------------- strict rejection


def _replace(old: str, new: str, text: str = EXAMPLE_SOURCE) -> str:
    assert old in text
    return text.replace(old, new, 1)


MALFORMED = {
    "empty": "",
    "no final newline": EXAMPLE_SOURCE[:-1],
    "extra blank line at end": EXAMPLE_SOURCE + "\n",
    "blank line inside": _replace("step s1", "\nstep s1"),
    "CRLF": EXAMPLE_SOURCE.replace("\n", "\r\n"),
    "lone CR": _replace("step s2 sum s1\n", "step s2 sum s1\r"),
    "trailing space": _replace("step s2 sum s1\n", "step s2 sum s1 \n"),
    "leading space": _replace("step s2", " step s2"),
    "double space": _replace("step s2 sum", "step s2  sum"),
    "tab": _replace("step s2 sum", "step s2\tsum"),
    "wrong header": _replace("quineling 1", "quineling 2"),
    "header not first": _replace("quineling 1\nbody", "body").replace("input", "quineling 1\ninput", 1),
    "missing body": _replace("body repeats=1 length=120 girth=-40 curl=300 hue=17 gait=0 temper=-5\n", ""),
    "duplicate body": _replace(
        "input", "body repeats=1 length=1 girth=0 curl=0 hue=0 gait=0 temper=0\ninput"
    ),
    "body traits reordered": _replace("length=120 girth=-40", "girth=-40 length=120"),
    "trait out of range": _replace("curl=300", "curl=1001"),
    "repeats zero": _replace("repeats=1", "repeats=0"),
    "repeats nine": _replace("repeats=1", "repeats=9"),
    "trait with plus": _replace("hue=17", "hue=+17"),
    "trait leading zero": _replace("hue=17", "hue=017"),
    "trait negative zero": _replace("gait=0", "gait=-0"),
    "trait float": _replace("gait=0", "gait=0.5"),
    "unknown line kind": _replace("step s1", "import os\nstep s1"),
    "comment line": _replace("step s1", "# hi\nstep s1"),
    "step before input": _replace(
        "input xs list = [2, 3, 4]\nstep s1 square xs\n", "step s1 square xs\ninput xs list = [2, 3, 4]\n"
    ),
    "output before step": _replace(
        "step s2 sum s1\noutput total number = s2\n", "output total number = s2\nstep s2 sum s1\n"
    ),
    "parent after input": _replace("step s1", f"parent {PARENT}\nstep s1"),
    "parent uppercase": _replace("input", f"parent {PARENT.upper().replace('SHA256', 'sha256')}\ninput"),
    "parent short": _replace("input", "parent sha256:abc\ninput"),
    "unknown op": _replace("square", "cube"),
    "op uppercase": _replace("square", "Square"),
    "missing arg": _replace("square xs", "scale xs"),
    "wrong arg key": _replace("square xs", "scale factor=3 xs"),
    "unexpected arg": _replace("square xs", "square k=3 xs"),
    "bad parity": _replace("square xs", "keep parity=prime xs"),
    "take zero": _replace("square xs", "take n=0 xs"),
    "take float": _replace("square xs", "take n=2.5 xs"),
    "scale nan": _replace("square xs", "scale k=nan xs"),
    "scale inf": _replace("square xs", "scale k=inf xs"),
    "scale 1.0": _replace("square xs", "scale k=1.0 xs"),
    "no in-port": _replace("step s2 sum s1", "step s2 sum"),
    "dangling arrow": _replace("step s2 sum s1", "step s2 sum s1 ->"),
    "arrow without in-port": _replace("step s2 sum s1", "step s2 sum -> s2"),
    "explicit default out": _replace("step s2 sum s1", "step s2 sum s1 -> s2"),
    "bad port name": _replace("step s2 sum s1", "step s2 sum S1"),
    "long name": _replace("step s2 sum s1", "step s2 sum " + "a" * 33),
    "bad step id": _replace("step s2", "step 2s"),
    "list without spaces": _replace("[2, 3, 4]", "[2,3,4]"),
    "empty list": _replace("[2, 3, 4]", "[]"),
    "trailing comma": _replace("[2, 3, 4]", "[2, 3, 4, ]"),
    "list for number": _replace("input xs list", "input xs number"),
    "number for list": _replace("[2, 3, 4]", "2"),
    "NaN literal": _replace("[2, 3, 4]", "[2, NaN, 4]"),
    "Infinity literal": _replace("[2, 3, 4]", "[2, Infinity, 4]"),
    "integral float": _replace("[2, 3, 4]", "[2.0, 3, 4]"),
    "trailing zero": _replace("[2, 3, 4]", "[2.50, 3, 4]"),
    "exponent not repr": _replace("[2, 3, 4]", "[2e3, 3, 4]"),
    "capital exponent": _replace("[2, 3, 4]", "[1E-05, 3, 4]"),
    "leading dot": _replace("[2, 3, 4]", "[.5, 3, 4]"),
    "hex number": _replace("[2, 3, 4]", "[0x10, 3, 4]"),
    "underscore number": _replace("[2, 3, 4]", "[1_000, 3, 4]"),
    "expression": _replace("[2, 3, 4]", "[__import__('os'), 3, 4]"),
    "too many items": _replace("[2, 3, 4]", "[" + ", ".join(["1"] * 1025) + "]"),
    "unknown type": _replace("input xs list", "input xs vector"),
    "non-canonical unit": _replace("input xs list", "input xs list s^-1*m"),
    "unit with ^1": _replace("input xs list", "input xs list m^1"),
    "unit uppercase": _replace("input xs list", "input xs list M"),
    "unit one": _replace("input xs list", "input xs list 1"),
    "missing equals": _replace("= [2, 3, 4]", "[2, 3, 4]"),
    "output expression": _replace("= s2", "= s2 + 1"),
    "output number": _replace("= s2", "= 2"),
    "non-ascii": _replace("total", "tötal"),
    "nul byte": _replace("total", "to\0tal"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_source_is_invalid(name: str) -> None:
    assert_invalid(MALFORMED[name])


@pytest.mark.parametrize("value", [None, 5, b"quineling 1\n", ["quineling 1"]])
def test_non_string_is_invalid(value: object) -> None:
    assert_invalid(value)


def test_oversized_source_is_invalid() -> None:
    filler = "".join(f"input x{i} number = {i}\n" for i in range(MAX_SOURCE_BYTES // 20))
    text = EXAMPLE_SOURCE.replace("input xs", filler + "input xs", 1)
    assert len(text.encode()) > MAX_SOURCE_BYTES
    assert "limit" in assert_invalid(text).message


def test_surrogates_are_invalid() -> None:
    assert_invalid(EXAMPLE_SOURCE.replace("total", "t\ud800"))


# -------------------------------------------------------------------------------------- property tests

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,31}", fullmatch=True)
UNITS = st.sampled_from([None, "credits", "m", "m^2", "m*s^-1", "kg*m^2*s^-2", "s^-16"])
FLOATS = st.floats(allow_nan=False, allow_infinity=False).map(normalize_number)
NUMBERS = st.one_of(st.integers(-(10**30), 10**30), FLOATS)
HASHES = st.binary(max_size=8).map(sha256_hex)


def typed(value: object) -> object:
    """``value`` with every number tagged by its Python type, so 2 and 2.0 compare different."""
    if isinstance(value, dict):
        return sorted((k, typed(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return [typed(v) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (type(value).__name__, repr(value))
    return value


@st.composite
def args_for(draw: st.DrawFn, op: str) -> dict:
    args: dict = {}
    for key, kind in OP_ARGS[op]:
        if kind == "parity":
            args[key] = draw(st.sampled_from(["even", "odd"]))
        elif kind == "positive-int":
            args[key] = draw(st.integers(1, 10**6))
        else:
            args[key] = draw(NUMBERS)
    return args


@st.composite
def steps(draw: st.DrawFn) -> dict:
    op = draw(st.sampled_from(sorted(OP_ARGS)))
    step_id = draw(NAMES)
    if op == "allocate":
        out = draw(st.lists(NAMES, min_size=2, max_size=2))
    else:
        out = draw(st.one_of(st.just([step_id]), st.lists(NAMES, min_size=1, max_size=1)))
    return {
        "id": step_id,
        "op": op,
        "args": draw(args_for(op)),
        "in": draw(st.lists(NAMES, min_size=1, max_size=3)),
        "out": out,
    }


@st.composite
def inputs(draw: st.DrawFn) -> dict:
    type_ = draw(st.sampled_from(["number", "list"]))
    value = draw(NUMBERS) if type_ == "number" else draw(st.lists(NUMBERS, min_size=1, max_size=6))
    return {"name": draw(NAMES), "type": type_, "unit": draw(UNITS), "value": value}


OUTPUTS = st.builds(
    lambda name, port, type_, unit: {"name": name, "from": port, "type": type_, "unit": unit},
    NAMES,
    NAMES,
    st.sampled_from(["number", "list"]),
    UNITS,
)
PROGRAMS = st.fixed_dictionaries(
    {
        "inputs": st.lists(inputs(), max_size=4),
        "steps": st.lists(steps(), max_size=5),
        "outputs": st.lists(OUTPUTS, max_size=4),
    }
)
BODIES = st.fixed_dictionaries(
    {
        "traits": st.fixed_dictionaries({t: st.integers(-1000, 1000) for t in TRAITS}),
        "repeats": st.integers(1, 8),
    }
)


@settings(max_examples=300)
@given(PROGRAMS, BODIES, st.lists(HASHES, max_size=3))
def test_model_round_trips_through_source(program: dict, body: dict, parents: list[str]) -> None:
    text = render_source(program, body, parents)
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert "\r" not in text and " \n" not in text
    parsed = parse_source(text)
    assert parsed == (program, body, parents)
    # Equal is not enough for numbers: ints stay ints and floats stay floats.
    assert typed(parsed) == typed((program, body, parents))
    assert render_source(*parsed) == text


@settings(max_examples=300)
@given(st.sampled_from([EXAMPLE_SOURCE, RICH_SOURCE]), st.data())
def test_mutated_source_is_canonical_or_invalid(base: str, data: st.DataObject) -> None:
    position = data.draw(st.integers(0, len(base)))
    mutation = data.draw(st.sampled_from(["insert", "delete", "replace"]))
    char = data.draw(
        st.sampled_from(list(" \n\r\t-+.,=>[]0123456789eabsz_#^*") + [data.draw(st.characters())])
    )
    if mutation == "insert":
        text = base[:position] + char + base[position:]
    elif mutation == "delete":
        text = base[:position] + base[position + 1 :]
    else:
        text = base[:position] + char + base[position + 1 :]
    try:
        parsed = parse_source(text)
    except QuinelingError as err:
        assert err.code == "invalid-source"
    else:
        assert render_source(*parsed) == text


@given(st.text(max_size=300))
def test_arbitrary_text_is_canonical_or_invalid(text: str) -> None:
    try:
        parsed = parse_source("quineling 1\n" + text)
    except QuinelingError as err:
        assert err.code == "invalid-source"
    else:
        assert render_source(*parsed) == "quineling 1\n" + text
