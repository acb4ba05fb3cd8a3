"""Typed intents: validation, the program checker, and the intent hash.

Error classes, in the order they are looked for (the first problem found is raised):

1. ``non-finite`` — NaN/Infinity anywhere in the value.
2. ``invalid-request`` — an unknown field in any closed record (the intent, an input, a step, a step's
   ``args`` for a catalogue op, an output), e.g. path ``intent.steps[1].extra``. The whole intent is
   scanned for unknown fields before anything is interpreted.
3. ``invalid-intent`` — everything else, in document order: missing fields, wrong JSON types, patterns and
   ranges, ``format``/``version``/``name``/``thought``, then inputs, steps and outputs element by element
   (unknown op, bad args, port counts, dangling or forward port references, duplicate ports, type and unit
   rules, declared output type/unit).

Numbers are IEEE doubles, as on the A2A wire: integral values are written as ints, and an integer too
large for a double is rejected as ``non-finite``. Units must already be in canonical spelling
(:mod:`quineling.runtime.units`); ``null`` is dimensionless. ``thought`` is a required string (it may be
empty) of at most 16,384 characters. Steps whose results no output reads are allowed.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from quineling.runtime.canonical import hash_json
from quineling.runtime.catalogue import (
    ARG_KEYS,
    OPS,
    ArgError,
    NonFinite,
    Port,
    SignatureError,
    check_args,
    out_port_count,
    signature,
    to_number,
)
from quineling.runtime.errors import QuinelingError
from quineling.runtime.fields import ensure_finite, join
from quineling.runtime.program import PortValue, Program
from quineling.runtime.units import canonical_unit
from stores.jsontypes import JSON

FORMAT = "quineling-intent"
VERSION = 1
MAX_THOUGHT_CHARS = 16_384
MAX_ELEMENTS = 64
MAX_LIST = 1024
TYPES = ("number", "list")
INTENT_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")
PORT_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")

INTENT_FIELDS = ("format", "version", "name", "thought", "inputs", "steps", "outputs")
INPUT_FIELDS = ("name", "type", "unit", "value")
STEP_FIELDS = ("id", "op", "args", "in", "out")
OUTPUT_FIELDS = ("name", "from", "type", "unit")


class _Checker:
    """Raises ``QuinelingError(code, …, path)``; one instance per validation."""

    def __init__(self, code: str) -> None:
        self.code = code

    def fail(self, message: str, path: str) -> QuinelingError:
        return QuinelingError(self.code, message, path or None)

    def record(self, value: object, fields: tuple[str, ...], path: str, what: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(f"{what} must be an object", path)
        for key in value:
            if key not in fields:  # only reachable for programs that skipped the closed-record scan
                raise self.fail(f"unknown field {key!r}", join(path, str(key)))
        for key in fields:
            if key not in value:
                raise self.fail(f"missing required field {key!r}", join(path, key))
        return value

    def items(self, value: object, path: str, lo: int, hi: int) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail("must be an array", path)
        if not lo <= len(value) <= hi:
            raise self.fail(f"must hold {lo}..{hi} items", path)
        return value

    def name(self, value: object, path: str, pattern: re.Pattern[str] = PORT_NAME) -> str:
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise self.fail(f"must be a name matching {pattern.pattern}", path)
        return value

    def choice(self, value: object, choices: tuple[str, ...], path: str) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(f"must be one of {', '.join(choices)}", path)
        return value

    def unit(self, value: object, path: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail("unit must be a string or null", path)
        try:
            canonical = canonical_unit(value)
        except ValueError as exc:
            raise self.fail(f"invalid unit: {exc}", path) from None
        if canonical != value:
            spelled = "null" if canonical is None else repr(canonical)
            raise self.fail(f"unit must be written canonically as {spelled}", path)
        return value

    def number(self, value: object, path: str) -> int | float:
        try:
            return to_number(value)
        except NonFinite as exc:
            raise QuinelingError("non-finite", str(exc), path or None) from None
        except ValueError as exc:
            raise self.fail(str(exc), path) from None

    def value(self, value: object, kind: str, path: str) -> PortValue:
        if kind == "number":
            return self.number(value, path)
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_LIST:
            raise self.fail(f"a list value holds 1..{MAX_LIST} numbers", path)
        return [self.number(v, join(path, i)) for i, v in enumerate(value)]


def check_program(program: object, *, code: str = "invalid-intent", path: str = "") -> JSON:
    """Check references, ports, types and units; return the interface ``{inputs, outputs}``."""
    return _check(program, code, path)[1]


def _check(program: object, code: str, path: str) -> tuple[Program, JSON]:
    """The cleaned program and its interface. Keys beyond inputs/steps/outputs are ignored here."""
    c = _Checker(code)
    if not isinstance(program, Mapping):
        raise c.fail("program must be an object", path)
    for key in ("inputs", "steps", "outputs"):
        if key not in program:
            raise c.fail(f"missing required field {key!r}", join(path, key))
    ports: dict[str, Port] = {}
    step_ids: set[str] = set()
    names: set[str] = set()
    at = {key: join(path, key) for key in ("inputs", "steps", "outputs")}
    inputs = c.items(program["inputs"], at["inputs"], 1, MAX_ELEMENTS)
    inputs = [_check_input(c, x, join(at["inputs"], i), ports) for i, x in enumerate(inputs)]
    steps = c.items(program["steps"], at["steps"], 1, MAX_ELEMENTS)
    steps = [_check_step(c, x, join(at["steps"], i), ports, step_ids) for i, x in enumerate(steps)]
    outputs = c.items(program["outputs"], at["outputs"], 1, MAX_ELEMENTS)
    outputs = [_check_output(c, x, join(at["outputs"], i), ports, names) for i, x in enumerate(outputs)]
    interface = {
        "inputs": [{"name": x["name"], "type": x["type"], "unit": x["unit"]} for x in inputs],
        "outputs": [{"name": x["name"], "type": x["type"], "unit": x["unit"]} for x in outputs],
    }
    return {"inputs": inputs, "steps": steps, "outputs": outputs}, interface


def _check_input(c: _Checker, item: object, path: str, ports: dict[str, Port]) -> JSON:
    item = c.record(item, INPUT_FIELDS, path, "an input")
    name = c.name(item["name"], join(path, "name"))
    kind = c.choice(item["type"], TYPES, join(path, "type"))
    unit = c.unit(item["unit"], join(path, "unit"))
    value = c.value(item["value"], kind, join(path, "value"))
    if name in ports:
        raise c.fail(f"port {name!r} is already defined", join(path, "name"))
    ports[name] = (kind, unit)
    return {"name": name, "type": kind, "unit": unit, "value": value}


def _check_step(c: _Checker, item: object, path: str, ports: dict[str, Port], ids: set[str]) -> JSON:
    item = c.record(item, STEP_FIELDS, path, "a step")
    ident = c.name(item["id"], join(path, "id"))
    if ident in ids:
        raise c.fail(f"step id {ident!r} is already used", join(path, "id"))
    ids.add(ident)
    op = c.choice(item["op"], OPS, join(path, "op"))
    try:
        args = check_args(op, item["args"])
    except ArgError as exc:
        where = join(path, "args") if exc.key is None else join(join(path, "args"), exc.key)
        raise c.fail(str(exc), where) from None
    sources = c.items(item["in"], join(path, "in"), 1, 1)
    for i, port in enumerate(sources):
        c.name(port, join(join(path, "in"), i))
        if port not in ports:
            raise c.fail(
                f"port {port!r} is not defined by an input or an earlier step", join(join(path, "in"), i)
            )
    count = out_port_count(op)
    targets = c.items(item["out"], join(path, "out"), count, count)
    for i, port in enumerate(targets):
        c.name(port, join(join(path, "out"), i))
        if port in ports or port in targets[:i]:
            raise c.fail(f"port {port!r} is already defined", join(join(path, "out"), i))
    try:
        produced = signature(op, ports[sources[0]])
    except SignatureError as exc:
        raise c.fail(str(exc), join(path, "op")) from None
    ports.update(zip(targets, produced, strict=True))
    return {"id": ident, "op": op, "args": args, "in": list(sources), "out": list(targets)}


def _check_output(c: _Checker, item: object, path: str, ports: dict[str, Port], names: set[str]) -> JSON:
    item = c.record(item, OUTPUT_FIELDS, path, "an output")
    name = c.name(item["name"], join(path, "name"))
    if name in names:
        raise c.fail(f"output {name!r} is already declared", join(path, "name"))
    names.add(name)
    port = c.name(item["from"], join(path, "from"))
    if port not in ports:
        raise c.fail(f"port {port!r} is not defined", join(path, "from"))
    kind = c.choice(item["type"], TYPES, join(path, "type"))
    unit = c.unit(item["unit"], join(path, "unit"))
    produced_kind, produced_unit = ports[port]
    if kind != produced_kind:
        raise c.fail(f"port {port!r} produces a {produced_kind}, not a {kind}", join(path, "type"))
    if unit != produced_unit:
        raise c.fail(f"port {port!r} produces unit {produced_unit!r}, not {unit!r}", join(path, "unit"))
    return {"name": name, "from": port, "type": kind, "unit": unit}


def _reject_unknown_fields(value: object, path: str) -> None:
    """Closed records: the first unknown field anywhere → ``invalid-request``."""

    def closed(obj: object, fields: tuple[str, ...], where: str) -> None:
        if isinstance(obj, Mapping):
            for key in obj:
                if key not in fields:
                    raise QuinelingError("invalid-request", f"unknown field {key!r}", join(where, str(key)))

    closed(value, INTENT_FIELDS, path)
    if not isinstance(value, Mapping):
        return
    for group, fields in (("inputs", INPUT_FIELDS), ("steps", STEP_FIELDS), ("outputs", OUTPUT_FIELDS)):
        items = value.get(group)
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            where = join(join(path, group), i)
            closed(item, fields, where)
            if (
                group == "steps"
                and isinstance(item, Mapping)
                and isinstance(item.get("op"), str)
                and item["op"] in ARG_KEYS
            ):
                closed(item.get("args"), ARG_KEYS[item["op"]], join(where, "args"))


def validate_intent(value: object, path: str = "intent") -> JSON:
    """The cleaned intent (integral floats made ints), or the first problem as a ``QuinelingError``."""
    ensure_finite(value, path)
    _reject_unknown_fields(value, path)
    c = _Checker("invalid-intent")
    if not isinstance(value, Mapping):
        raise c.fail("intent must be an object", path)
    for key in INTENT_FIELDS[:4]:
        if key not in value:
            raise c.fail(f"missing required field {key!r}", join(path, key))
    if value["format"] != FORMAT:
        raise c.fail(f"format must be {FORMAT!r}", join(path, "format"))
    version = value["version"]
    if isinstance(version, bool) or not isinstance(version, int | float) or version != VERSION:
        raise c.fail(f"version must be {VERSION}", join(path, "version"))
    name = c.name(value["name"], join(path, "name"), INTENT_NAME)
    thought = value["thought"]
    if not isinstance(thought, str) or len(thought) > MAX_THOUGHT_CHARS:
        raise c.fail(
            f"thought must be a string of at most {MAX_THOUGHT_CHARS} characters", join(path, "thought")
        )
    program, _ = _check(value, "invalid-intent", path)
    return {"format": FORMAT, "version": VERSION, "name": name, "thought": thought, **program}


def intent_hash(intent: Mapping[str, Any]) -> str:
    """``sha256:…`` of the intent's canonical JSON (pass a validated intent)."""
    return hash_json(dict(intent))


def program_of_intent(intent: Mapping[str, Any]) -> Program:
    """A detached copy of the intent's program (inputs, steps, outputs)."""
    return copy.deepcopy({"inputs": intent["inputs"], "steps": intent["steps"], "outputs": intent["outputs"]})
