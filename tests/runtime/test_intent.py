from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quineling.runtime.canonical import canonical_json, sha256_hex
from quineling.runtime.errors import QuinelingError
from quineling.runtime.intent import check_program, intent_hash, program_of_intent, validate_intent

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "quineling" / "schemas" / "intent.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def base() -> dict[str, Any]:
    return {
        "format": "quineling-intent",
        "version": 1,
        "name": "total-of-squares",
        "thought": "[2,3,4] | square | sum | report total",
        "inputs": [{"name": "xs", "type": "list", "unit": None, "value": [2, 3, 4]}],
        "steps": [
            {"id": "s1", "op": "square", "args": {}, "in": ["xs"], "out": ["s1"]},
            {"id": "s2", "op": "sum", "args": {}, "in": ["s1"], "out": ["s2"]},
        ],
        "outputs": [{"name": "total", "from": "s2", "type": "number", "unit": None}],
    }


def allocation() -> dict[str, Any]:
    return {
        "format": "quineling-intent",
        "version": 1,
        "name": "allocated-remaining",
        "thought": "",
        "inputs": [{"name": "x", "type": "number", "unit": "credits", "value": 5}],
        "steps": [{"id": "s1", "op": "allocate", "args": {"from": 20}, "in": ["x"], "out": ["a", "r"]}],
        "outputs": [
            {"name": "allocated", "from": "a", "type": "number", "unit": "credits"},
            {"name": "remaining", "from": "r", "type": "number", "unit": "credits"},
        ],
    }


def edit(intent: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``intent`` with the dotted/indexed ``path`` set (or deleted when value is DELETE)."""
    out = copy.deepcopy(intent)
    target: Any = out
    keys: list[Any] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        keys.append(name)
        if rest:
            keys.extend(int(i) for i in rest.rstrip("]").split("]["))
    for key in keys[:-1]:
        target = target[key]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return out


DELETE = object()


def one_step(op: str, args: dict[str, Any], *, kind: str = "list", unit: str | None = None) -> dict[str, Any]:
    value: Any = [1, 2, 3] if kind == "list" else 4
    return {
        "format": "quineling-intent",
        "version": 1,
        "name": op,
        "thought": "",
        "inputs": [{"name": "xs", "type": kind, "unit": unit, "value": value}],
        "steps": [{"id": "s1", "op": op, "args": args, "in": ["xs"], "out": ["s1"]}],
        "outputs": [{"name": "r", "from": "s1", "type": kind, "unit": unit}],
    }


# ---------------------------------------------------------------------------------------------- valid


VALID: list[dict[str, Any]] = [
    base(),
    allocation(),
    edit(base(), "version", 1.0),
    edit(base(), "inputs[0].value", [2.0, 3.5, -4]),
    edit(edit(base(), "inputs[0].unit", "m*s^-1"), "outputs[0].unit", "m^2*s^-2"),
    edit(edit(edit(base(), "inputs[0].unit", "m"), "steps[1].op", "max"), "outputs[0].unit", "m^2"),
    edit(base(), "thought", "x" * 16384),
    edit(base(), "name", "a" + "-" * 63),
    one_step("scale", {"k": -2.5}),
    one_step("scale", {"k": 3}, kind="number", unit="credits"),
    one_step("take", {"n": 2}),
    one_step("take", {"n": 2.0}),
    one_step("take", {"n": 1024}),
    one_step("keep", {"parity": "odd"}),
    one_step("keep", {"parity": "even"}, unit="m"),
    one_step("sort", {}),
    one_step("reverse", {}, unit="s"),
    one_step("negate", {}, kind="number"),
    one_step("abs", {}),
    one_step("double", {}, kind="number", unit="kg"),
    one_step("increment", {}),
    one_step("square", {}, kind="number"),
    edit(one_step("product", {}), "outputs[0].type", "number"),
    edit(edit(one_step("count", {}, unit="m"), "outputs[0].type", "number"), "outputs[0].unit", None),
    edit(one_step("mean", {}), "outputs[0].type", "number"),
    edit(one_step("min", {}), "outputs[0].type", "number"),
    edit(allocation(), "steps[0].args.from", 0),
    edit(base(), "inputs[0].value", list(range(1024))),
    # an output reading an input port directly, and two outputs from one port
    edit(
        base(),
        "outputs",
        [
            {"name": "total", "from": "s2", "type": "number", "unit": None},
            {"name": "xs", "from": "xs", "type": "list", "unit": None},
        ],
    ),  # fmt: skip
]


@pytest.mark.parametrize("intent", VALID)
def test_valid_intents_pass_validator_and_schema(intent: dict[str, Any]) -> None:
    cleaned = validate_intent(intent)
    assert list(VALIDATOR.iter_errors(intent)) == []
    assert list(VALIDATOR.iter_errors(cleaned)) == []
    assert validate_intent(cleaned) == cleaned  # idempotent


def test_cleaning_turns_integral_floats_into_ints() -> None:
    cleaned = validate_intent(edit(edit(base(), "version", 1.0), "inputs[0].value", [2.0, 3.5, 4.0]))
    assert cleaned["version"] == 1 and isinstance(cleaned["version"], int)
    assert cleaned["inputs"][0]["value"] == [2, 3.5, 4]
    assert [type(v) for v in cleaned["inputs"][0]["value"]] == [int, float, int]
    take = validate_intent(one_step("take", {"n": 2.0}))
    assert take["steps"][0]["args"] == {"n": 2} and isinstance(take["steps"][0]["args"]["n"], int)


def test_validator_does_not_mutate_its_input() -> None:
    intent = edit(base(), "inputs[0].value", [2.0, 3.0])
    before = copy.deepcopy(intent)
    validate_intent(intent)
    assert intent == before and isinstance(intent["inputs"][0]["value"][0], float)


# -------------------------------------------------------------------------------------------- invalid

# (intent, code, path): rejected by the validator AND by the schema.
INVALID: list[tuple[dict[str, Any], str, str]] = [
    (edit(base(), "extra", 1), "invalid-request", "intent.extra"),
    (edit(base(), "inputs[0].extra", 1), "invalid-request", "intent.inputs[0].extra"),
    (edit(base(), "steps[1].extra", 1), "invalid-request", "intent.steps[1].extra"),
    (edit(base(), "outputs[0].extra", 1), "invalid-request", "intent.outputs[0].extra"),
    (edit(base(), "steps[0].args", {"k": 2}), "invalid-request", "intent.steps[0].args.k"),
    (one_step("scale", {"k": 2, "j": 1}), "invalid-request", "intent.steps[0].args.j"),
    (edit(base(), "format", "quineling"), "invalid-intent", "intent.format"),
    (edit(base(), "version", 2), "invalid-intent", "intent.version"),
    (edit(base(), "version", True), "invalid-intent", "intent.version"),
    (edit(base(), "version", "1"), "invalid-intent", "intent.version"),
    (edit(base(), "name", "Total"), "invalid-intent", "intent.name"),
    (edit(base(), "name", "a" * 65), "invalid-intent", "intent.name"),
    (edit(base(), "name", "1abc"), "invalid-intent", "intent.name"),
    (edit(base(), "thought", None), "invalid-intent", "intent.thought"),
    (edit(base(), "thought", "x" * 16385), "invalid-intent", "intent.thought"),
    (edit(base(), "name", DELETE), "invalid-intent", "intent.name"),
    (edit(base(), "steps", DELETE), "invalid-intent", "intent.steps"),
    (edit(base(), "inputs", []), "invalid-intent", "intent.inputs"),
    (edit(base(), "steps", []), "invalid-intent", "intent.steps"),
    (edit(base(), "outputs", []), "invalid-intent", "intent.outputs"),
    (edit(base(), "steps", base()["steps"] * 40), "invalid-intent", "intent.steps"),
    (edit(base(), "inputs[0].name", "Xs"), "invalid-intent", "intent.inputs[0].name"),
    (edit(base(), "inputs[0].type", "matrix"), "invalid-intent", "intent.inputs[0].type"),
    (edit(base(), "inputs[0].unit", "M"), "invalid-intent", "intent.inputs[0].unit"),
    (edit(base(), "inputs[0].unit", 3), "invalid-intent", "intent.inputs[0].unit"),
    (edit(base(), "inputs[0].unit", "m^0"), "invalid-intent", "intent.inputs[0].unit"),
    (edit(base(), "inputs[0].unit", "m^17"), "invalid-intent", "intent.inputs[0].unit"),
    (edit(base(), "inputs[0].value", []), "invalid-intent", "intent.inputs[0].value"),
    (edit(base(), "inputs[0].value", 3), "invalid-intent", "intent.inputs[0].value"),
    (edit(base(), "inputs[0].value", list(range(1025))), "invalid-intent", "intent.inputs[0].value"),
    (edit(base(), "inputs[0].value", [1, "2"]), "invalid-intent", "intent.inputs[0].value[1]"),
    (edit(base(), "inputs[0].value", [1, True]), "invalid-intent", "intent.inputs[0].value[1]"),
    (edit(allocation(), "inputs[0].value", [5]), "invalid-intent", "intent.inputs[0].value"),
    (edit(base(), "inputs[0].value", DELETE), "invalid-intent", "intent.inputs[0].value"),
    (edit(base(), "steps[0].id", "S1"), "invalid-intent", "intent.steps[0].id"),
    (edit(base(), "steps[0].op", "cube"), "invalid-intent", "intent.steps[0].op"),
    (edit(base(), "steps[0].op", "report"), "invalid-intent", "intent.steps[0].op"),
    (edit(base(), "steps[0].op", ["square"]), "invalid-intent", "intent.steps[0].op"),
    (edit(base(), "steps[0].op", None), "invalid-intent", "intent.steps[0].op"),
    (edit(base(), "steps[0]", "square"), "invalid-intent", "intent.steps[0]"),
    (edit(base(), "inputs[0].value", {"a": 1}), "invalid-intent", "intent.inputs[0].value"),
    (edit(base(), "steps[0].args", []), "invalid-intent", "intent.steps[0].args"),
    (one_step("scale", {}), "invalid-intent", "intent.steps[0].args.k"),
    (one_step("scale", {"k": "2"}), "invalid-intent", "intent.steps[0].args.k"),
    (one_step("take", {"n": 0}), "invalid-intent", "intent.steps[0].args.n"),
    (one_step("take", {"n": 2.5}), "invalid-intent", "intent.steps[0].args.n"),
    (one_step("take", {"n": 1025}), "invalid-intent", "intent.steps[0].args.n"),
    (one_step("keep", {"parity": "prime"}), "invalid-intent", "intent.steps[0].args.parity"),
    (edit(allocation(), "steps[0].args.from", -1), "invalid-intent", "intent.steps[0].args.from"),
    (edit(base(), "steps[0].in", []), "invalid-intent", "intent.steps[0].in"),
    (edit(base(), "steps[0].in", ["xs", "xs"]), "invalid-intent", "intent.steps[0].in"),
    (edit(base(), "steps[0].in", "xs"), "invalid-intent", "intent.steps[0].in"),
    (edit(base(), "steps[0].out", ["a", "b"]), "invalid-intent", "intent.steps[0].out"),
    (edit(allocation(), "steps[0].out", ["a"]), "invalid-intent", "intent.steps[0].out"),
    (edit(base(), "steps[0].out", ["Bad"]), "invalid-intent", "intent.steps[0].out[0]"),
    (edit(base(), "outputs[0].type", "vector"), "invalid-intent", "intent.outputs[0].type"),
    (edit(base(), "outputs[0].from", 7), "invalid-intent", "intent.outputs[0].from"),
    (edit(base(), "outputs[0].unit", DELETE), "invalid-intent", "intent.outputs[0].unit"),
    ([], "invalid-intent", "intent"),
    ("intent", "invalid-intent", "intent"),
]


@pytest.mark.parametrize(("intent", "code", "path"), INVALID)
def test_invalid_intents_rejected_by_validator_and_schema(intent: Any, code: str, path: str) -> None:
    with pytest.raises(QuinelingError) as caught:
        validate_intent(intent)
    assert (caught.value.code, caught.value.path) == (code, path)
    assert not VALIDATOR.is_valid(intent)


# Problems JSON Schema cannot express: schema-valid, validator-invalid (with the path the validator reports).
SEMANTIC_ONLY: list[tuple[dict[str, Any], str]] = [
    # units must be canonical: sorted, each base once
    (edit(base(), "inputs[0].unit", "s^-1*m"), "intent.inputs[0].unit"),
    (edit(base(), "inputs[0].unit", "m*m"), "intent.inputs[0].unit"),
    (edit(base(), "inputs[0].unit", "m^8*m^9"), "intent.inputs[0].unit"),
    # dangling and forward port references
    (edit(base(), "steps[0].in", ["ys"]), "intent.steps[0].in[0]"),
    (edit(base(), "steps[0].in", ["s2"]), "intent.steps[0].in[0]"),
    (edit(base(), "outputs[0].from", "nope"), "intent.outputs[0].from"),
    # duplicate ports, step ids, output names
    (edit(base(), "steps[0].out", ["xs"]), "intent.steps[0].out[0]"),
    (edit(allocation(), "steps[0].out", ["a", "a"]), "intent.steps[0].out[1]"),
    (edit(base(), "steps[1].id", "s1"), "intent.steps[1].id"),
    (edit(base(), "inputs", base()["inputs"] * 2), "intent.inputs[1].name"),
    (edit(allocation(), "outputs[1].name", "allocated"), "intent.outputs[1].name"),
    # op type rules
    (one_step("sum", {}, kind="number"), "intent.steps[0].op"),
    (one_step("sort", {}, kind="number"), "intent.steps[0].op"),
    (one_step("take", {"n": 1}, kind="number"), "intent.steps[0].op"),
    (
        edit(allocation(), "inputs[0]", {"name": "x", "type": "list", "unit": "credits", "value": [5]}),
        "intent.steps[0].op",
    ),  # fmt: skip
    # unit rules
    (edit(one_step("product", {}, unit="m"), "outputs[0].type", "number"), "intent.steps[0].op"),
    (one_step("square", {}, unit="m^9"), "intent.steps[0].op"),
    # declared outputs must match what the port produces
    (edit(base(), "outputs[0].type", "list"), "intent.outputs[0].type"),
    (edit(base(), "outputs[0].unit", "m"), "intent.outputs[0].unit"),
    (edit(one_step("square", {}, unit="m"), "outputs[0].unit", "m"), "intent.outputs[0].unit"),
    (edit(one_step("count", {}, unit="m"), "outputs[0].type", "number"), "intent.outputs[0].unit"),
]


@pytest.mark.parametrize(("intent", "path"), SEMANTIC_ONLY)
def test_semantic_problems_are_schema_valid_but_rejected(intent: dict[str, Any], path: str) -> None:
    assert VALIDATOR.is_valid(intent), list(VALIDATOR.iter_errors(intent))
    with pytest.raises(QuinelingError) as caught:
        validate_intent(intent)
    assert (caught.value.code, caught.value.path) == ("invalid-intent", path)


def test_every_catalogue_op_is_in_the_schema() -> None:
    from quineling.runtime.catalogue import OPS

    assert set(SCHEMA["$defs"]["step"]["properties"]["op"]["enum"]) == set(OPS)


# ------------------------------------------------------------------------------------ ordering & codes


def test_unknown_fields_are_reported_before_semantic_problems() -> None:
    intent = edit(edit(base(), "name", "BAD"), "outputs[0].extra", 1)
    with pytest.raises(QuinelingError) as caught:
        validate_intent(intent)
    assert (caught.value.code, caught.value.path) == ("invalid-request", "intent.outputs[0].extra")


def test_first_problem_in_document_order_wins() -> None:
    intent = edit(edit(base(), "steps[1].op", "cube"), "outputs[0].unit", "m")
    with pytest.raises(QuinelingError) as caught:
        validate_intent(intent)
    assert caught.value.path == "intent.steps[1].op"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_anywhere(bad: float) -> None:
    for intent, path in [
        (edit(base(), "inputs[0].value", [1, bad]), "intent.inputs[0].value[1]"),
        (one_step("scale", {"k": bad}), "intent.steps[0].args.k"),
        (edit(base(), "extra", bad), "intent.extra"),
    ]:
        with pytest.raises(QuinelingError) as caught:
            validate_intent(intent)
        assert (caught.value.code, caught.value.path) == ("non-finite", path)


def test_integer_too_large_for_a_double_is_non_finite() -> None:
    with pytest.raises(QuinelingError) as caught:
        validate_intent(edit(base(), "inputs[0].value", [10**400]))
    assert (caught.value.code, caught.value.path) == ("non-finite", "intent.inputs[0].value[0]")


def test_custom_path_prefix() -> None:
    with pytest.raises(QuinelingError) as caught:
        validate_intent(edit(base(), "steps[0].op", "cube"), path="input.intent")
    assert caught.value.path == "input.intent.steps[0].op"


# ------------------------------------------------------------------------------ check_program & helpers


def test_check_program_returns_the_interface() -> None:
    assert check_program(program_of_intent(allocation())) == {
        "inputs": [{"name": "x", "type": "number", "unit": "credits"}],
        "outputs": [
            {"name": "allocated", "type": "number", "unit": "credits"},
            {"name": "remaining", "type": "number", "unit": "credits"},
        ],
    }


def test_check_program_uses_the_given_code_and_path() -> None:
    program = program_of_intent(edit(base(), "steps[0].in", ["ghost"]))
    with pytest.raises(QuinelingError) as caught:
        check_program(program, code="invalid-source")
    assert (caught.value.code, caught.value.path) == ("invalid-source", "steps[0].in[0]")
    with pytest.raises(QuinelingError) as caught:
        check_program(program, code="invalid-source", path="child")
    assert caught.value.path == "child.steps[0].in[0]"


def test_check_program_rejects_unknown_element_fields_with_its_code() -> None:
    program = program_of_intent(edit(base(), "steps[0].extra", 1))
    with pytest.raises(QuinelingError) as caught:
        check_program(program, code="invalid-source")
    assert (caught.value.code, caught.value.path) == ("invalid-source", "steps[0].extra")


def test_intent_hash_is_sha256_of_canonical_json() -> None:
    intent = validate_intent(base())
    assert intent_hash(intent) == sha256_hex(canonical_json(intent))
    assert intent_hash(intent).startswith("sha256:") and len(intent_hash(intent)) == 71
    assert intent_hash(validate_intent(edit(base(), "inputs[0].value", [2.0, 3.0, 4.0]))) == intent_hash(
        intent
    )
    assert intent_hash(validate_intent(edit(base(), "name", "other"))) != intent_hash(intent)


def test_program_of_intent_is_a_detached_copy() -> None:
    intent = validate_intent(base())
    program = program_of_intent(intent)
    assert set(program) == {"inputs", "steps", "outputs"}
    assert program["steps"] == intent["steps"]
    program["steps"][0]["op"] = "double"
    assert intent["steps"][0]["op"] == "square"


# ------------------------------------------------------------------------------------ mutation property


def _paths(value: Any, prefix: str = "") -> list[str]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += _paths(inner, f"{prefix}[{i}]")
    return found


_JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 2000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(
        ["", "list", "number", "m", "s^-1*m", "xs", "s1", "s2", "sum", "allocate", "even", "Bad"]
    ),
)
_JSON = st.recursive(_JSON_LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["k", "n", "parity", "from", "extra", "name"]), inner, max_size=2), max_leaves=6)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VALID), st.data())
def test_mutations_never_make_the_validator_laxer_than_the_schema(
    intent: dict[str, Any], data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(_paths(intent)))
    mutated = edit(intent, path, data.draw(_JSON))
    try:
        cleaned = validate_intent(mutated)
    except QuinelingError as exc:
        assert exc.code in {"invalid-request", "invalid-intent", "non-finite"}
        assert exc.path is not None and exc.path.startswith("intent")
    else:
        assert VALIDATOR.is_valid(mutated), (path, list(VALIDATOR.iter_errors(mutated)))
        assert VALIDATOR.is_valid(cleaned)
