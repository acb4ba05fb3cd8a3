"""Canonical Quineling source: the text form whose SHA-256 is an artifact's identity.

A source is UTF-8 text (in practice ASCII) of at most 1 MiB, made of lines each ending in one LF (so the text
ends with exactly one newline). No CR, no tabs, no blank lines, no leading/trailing or doubled spaces: tokens
are separated by exactly one space. Lines appear in this order::

    source  := header body parent* input* step* output*
    header  := "quineling 1"
    body    := "body repeats=" INT " length=" INT " girth=" INT " curl=" INT " hue=" INT " gait=" INT
               " temper=" INT                        (repeats 1..8, traits -1000..1000)
    parent  := "parent sha256:" HEX64                (lowercase hex; parents in heredity order)
    input   := "input " NAME " " TYPE [" " UNIT] " = " VALUE
    step    := "step " ID " " OP (" " ARG)* (" " PORT)+ [" -> " PORT (" " PORT)*]
    output  := "output " NAME " " TYPE [" " UNIT] " = " PORT

    NAME, ID, PORT := [a-z][a-z0-9_]{0,31}
    TYPE    := "number" | "list"
    UNIT    := a unit in its canonical spelling (``units.canonical_unit(u) == u``): factors NAME or NAME^n
               (n a non-zero integer, |n| <= 16) sorted by name and joined by "*", e.g. credits, m^2,
               m*s^-1; omitted for dimensionless
    VALUE   := NUMBER                                 when TYPE is number
             | "[" NUMBER (", " NUMBER)* "]"          when TYPE is list (1..1024 items)
    NUMBER  := INT | FLOAT
    INT     := "0" | "-"? [1-9][0-9]{0,399}
    FLOAT   := Python ``repr`` of a finite float that is not integral below 2**53, e.g. 0.5, -1.25,
               1e-05, 1.5e+16, 9007199254740994.0 (shortest round-trip digits; exponent form exactly when
               ``repr`` uses it, i.e. decimal exponent < -4 or >= 16)

``OP`` is one of the closed catalogue (:mod:`quineling.runtime.catalogue`). Its ``ARG`` tokens are written
``key=value`` in this fixed order and must all be present:

    square double negate abs increment sort reverse sum mean min max product count   (no args)
    scale k=NUMBER | keep parity=even|odd | take n=INT (n >= 1) | allocate from=NUMBER

After the args come the step's in-ports (one or more, in order). The out-ports are written after ``->``
unless they are exactly ``[ID]`` (a single out-port named like the step), in which case ``->`` is omitted.
So ``step s1 square xs`` has ``out: ["s1"]``, ``step s3 allocate from=20 x -> a r`` has ``out: ["a", "r"]``
and ``step s4 double s1 -> twice`` has ``out: ["twice"]``; any out-port names round-trip losslessly.

Numbers: ints are written in decimal; integral floats below 2**53 are written as integers too (``2.0`` ->
``2``; ``-0.0`` -> ``0``) and parse back as ints; every other finite float is written as ``repr`` and parses
back as a float.

Parsing is strict: anything that is not exactly what :func:`render_source` would print for the parsed model
fails with ``invalid-source`` (nothing is ever canonicalised or evaluated). Types, unit arithmetic, port
references, name uniqueness and op arity are *not* checked here; the caller runs
``intent.check_program(program, code="invalid-source")`` on the result.
"""

from __future__ import annotations

import math
import re

from quineling.runtime.catalogue import ARG_KEYS, PARITIES
from quineling.runtime.errors import QuinelingError
from quineling.runtime.program import (
    REPEATS_MAX,
    REPEATS_MIN,
    TRAIT_MAX,
    TRAIT_MIN,
    TRAITS,
    Body,
    PortValue,
    Program,
)
from quineling.runtime.units import canonical_unit
from stores.jsontypes import JSON

MAX_SOURCE_BYTES = 1 << 20
MAX_LIST_ITEMS = 1024
HEADER = "quineling 1"

# Argument keys per op, in their fixed order, come from the shared catalogue; a kind says how a value is spelled.
_ARG_KINDS = {"k": "number", "n": "positive-int", "parity": "parity", "from": "number"}
OP_ARGS: dict[str, tuple[tuple[str, str], ...]] = {
    op: tuple((key, _ARG_KINDS[key]) for key in keys) for op, keys in ARG_KEYS.items()
}

_NAME = r"[a-z][a-z0-9_]{0,31}"
_NAME_RX = re.compile(_NAME)
_INT_RX = re.compile(r"0|-?[1-9][0-9]{0,399}")
_FLOAT_RX = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:e[+-][0-9]+)?")
_HASH_RX = re.compile(r"sha256:[0-9a-f]{64}")
_BODY_RX = re.compile(
    "body repeats=(\\S+) " + " ".join(f"{t}=(\\S+)" for t in TRAITS),
)
_DECL_RX = re.compile(rf"(input|output) ({_NAME}) (number|list)(?: ([^ =]+))? = (.+)")
_RANK = {"quineling": 0, "body": 1, "parent": 2, "input": 3, "step": 4, "output": 5}


# ----------------------------------------------------------------------------------------------- rendering


def format_number(value: object) -> str:
    """The canonical spelling of a finite number (see the module docstring)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ValueError("numbers must be finite")
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def _unit_suffix(unit: str | None) -> str:
    return "" if unit is None else f" {unit}"


def _render_value(type_: str, value: object) -> str:
    if type_ == "list":
        if not isinstance(value, list):
            raise ValueError(f"a list value must be a list, not {value!r}")
        return "[" + ", ".join(format_number(v) for v in value) + "]"
    return format_number(value)


def _render_arg(kind: str, value: object) -> str:
    return str(value) if kind == "parity" else format_number(value)


def _render_step(step: JSON) -> str:
    spec = OP_ARGS[step["op"]]
    if set(step["args"]) != {key for key, _ in spec}:
        raise ValueError(f"step {step['id']}: args must be exactly {[k for k, _ in spec]}")
    parts = ["step", step["id"], step["op"]]
    parts += [f"{key}={_render_arg(kind, step['args'][key])}" for key, kind in spec]
    parts += list(step["in"])
    if list(step["out"]) != [step["id"]]:
        parts += ["->", *step["out"]]
    return " ".join(parts)


def render_source(program: Program, body: Body, parents: list[str]) -> str:
    """Print the canonical source of a (valid) program, body and ordered parent hashes."""
    traits = body["traits"]
    lines = [
        HEADER,
        f"body repeats={body['repeats']} " + " ".join(f"{t}={traits[t]}" for t in TRAITS),
    ]
    lines += [f"parent {p}" for p in parents]
    for item in program["inputs"]:
        lines.append(
            f"input {item['name']} {item['type']}{_unit_suffix(item['unit'])} = "
            + _render_value(item["type"], item["value"])
        )
    lines += [_render_step(step) for step in program["steps"]]
    for item in program["outputs"]:
        lines.append(f"output {item['name']} {item['type']}{_unit_suffix(item['unit'])} = {item['from']}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------- parsing


class _Fail(Exception):
    """A line-local syntax problem; :func:`parse_source` adds the line number and path."""


def _int(token: str, lo: int | None = None, hi: int | None = None, what: str = "integer") -> int:
    if not _INT_RX.fullmatch(token):
        raise _Fail(f"{what} {token[:40]!r} is not a canonical integer")
    value = int(token)
    if lo is not None and value < lo:
        raise _Fail(f"{what} {value} is below {lo}")
    if hi is not None and value > hi:
        raise _Fail(f"{what} {value} is above {hi}")
    return value


def parse_number(token: str) -> int | float:
    """Inverse of :func:`format_number`; rejects every non-canonical spelling, NaN and infinities."""
    if _INT_RX.fullmatch(token):
        return int(token)
    if len(token) > 32 or not _FLOAT_RX.fullmatch(token):
        raise _Fail(f"{token[:40]!r} is not a canonical number")
    value = float(token)
    if not math.isfinite(value) or format_number(value) != token:
        raise _Fail(f"{token[:40]!r} is not a canonical number")
    return value


def _name(token: str, what: str) -> str:
    if not _NAME_RX.fullmatch(token):
        raise _Fail(f"{what} {token[:40]!r} must match [a-z][a-z0-9_]{{0,31}}")
    return token


def _parse_value(type_: str, text: str) -> PortValue:
    if type_ == "number":
        return parse_number(text)
    if not (text.startswith("[") and text.endswith("]")) or len(text) < 3:
        raise _Fail("a list value must be written [n, n, ...] with 1..1024 numbers")
    items = text[1:-1].split(", ")
    if len(items) > MAX_LIST_ITEMS:
        raise _Fail(f"a list holds at most {MAX_LIST_ITEMS} numbers")
    return [parse_number(item) for item in items]


def _parse_unit(token: str | None) -> str | None:
    if token is None:
        return None
    try:
        canonical = canonical_unit(token)
    except ValueError as exc:
        raise _Fail(f"bad unit {token[:40]!r}: {exc}") from None
    if canonical != token:
        raise _Fail(f"unit {token[:40]!r} is not in canonical spelling ({canonical!r})")
    return token


def _parse_body(line: str) -> Body:
    match = _BODY_RX.fullmatch(line)
    if not match:
        raise _Fail("body line must be: body repeats=R " + " ".join(f"{t}=N" for t in TRAITS))
    repeats = _int(match.group(1), REPEATS_MIN, REPEATS_MAX, "repeats")
    traits = {t: _int(match.group(i + 2), TRAIT_MIN, TRAIT_MAX, t) for i, t in enumerate(TRAITS)}
    return {"traits": traits, "repeats": repeats}


def _parse_decl(line: str) -> tuple[str, JSON]:
    match = _DECL_RX.fullmatch(line)
    if not match:
        kind = line.split(" ", 1)[0]
        target = "VALUE" if kind == "input" else "PORT"
        raise _Fail(f"{kind} line must be: {kind} NAME number|list [UNIT] = {target}")
    kind, name, type_, unit, rest = match.groups()
    unit = _parse_unit(unit)
    if kind == "input":
        return kind, {"name": name, "type": type_, "unit": unit, "value": _parse_value(type_, rest)}
    return kind, {"name": name, "from": _name(rest, "output port"), "type": type_, "unit": unit}


def _parse_arg(token: str, key: str, kind: str) -> int | float | str:
    prefix = key + "="
    if not token.startswith(prefix):
        raise _Fail(f"expected argument {key}=…, got {token[:40]!r}")
    text = token[len(prefix) :]
    if kind == "parity":
        if text not in PARITIES:
            raise _Fail("parity must be even or odd")
        return text
    if kind == "positive-int":
        return _int(text, 1, None, key)
    return parse_number(text)


def _parse_step(line: str) -> JSON:
    tokens = line.split(" ")
    if len(tokens) < 4:
        raise _Fail("step line must be: step ID OP [ARGS] IN... [-> OUT...]")
    step_id = _name(tokens[1], "step id")
    op = tokens[2]
    if op not in OP_ARGS:
        raise _Fail(f"unknown operation {op[:40]!r}")
    spec = OP_ARGS[op]
    arg_tokens = tokens[3 : 3 + len(spec)]
    if len(arg_tokens) < len(spec):
        raise _Fail(f"{op} needs arguments {' '.join(k + '=…' for k, _ in spec)}")
    args = {key: _parse_arg(tok, key, kind) for tok, (key, kind) in zip(arg_tokens, spec, strict=True)}
    rest = tokens[3 + len(spec) :]
    if "->" in rest:
        cut = rest.index("->")
        ins, outs = rest[:cut], rest[cut + 1 :]
        if not outs:
            raise _Fail("-> must be followed by at least one out-port")
    else:
        ins, outs = rest, [step_id]
    if not ins:
        raise _Fail("a step needs at least one in-port")
    return {
        "id": step_id,
        "op": op,
        "args": args,
        "in": [_name(t, "in-port") for t in ins],
        "out": [_name(t, "out-port") for t in outs],
    }


def parse_source(text: object, path: str = "source") -> tuple[Program, Body, list[str]]:
    """Parse canonical source into ``(program, body, parents)``; anything else raises ``invalid-source``."""

    def fail(message: str) -> QuinelingError:
        return QuinelingError("invalid-source", message, path)

    if not isinstance(text, str):
        raise fail("source must be a string")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise fail("source is not valid UTF-8 text") from exc
    if size > MAX_SOURCE_BYTES:
        raise fail(f"source is {size} bytes; the limit is {MAX_SOURCE_BYTES}")
    if "\r" in text:
        raise fail("source must use LF line endings (no CR characters)")
    if not text.endswith("\n"):
        raise fail("source must end with exactly one newline")

    program: Program = {"inputs": [], "steps": [], "outputs": []}
    body: Body | None = None
    parents: list[str] = []
    last_rank = -1
    for number, line in enumerate(text[:-1].split("\n"), start=1):
        try:
            kind = line.split(" ", 1)[0]
            rank = _RANK.get(kind)
            if rank is None:
                raise _Fail(f"unknown line kind {kind[:40]!r}" if line else "blank lines are not allowed")
            if number == 1 and rank != 0:
                raise _Fail(f"the first line must be {HEADER!r}")
            if number == 2 and rank != 1:
                raise _Fail("the second line must be the body line")
            if rank == last_rank and rank < 2:
                raise _Fail(f"duplicate {kind} line")
            if rank < last_rank:
                raise _Fail(
                    f"{kind} line out of order (order: header, body, parents, inputs, steps, outputs)"
                )
            last_rank = rank
            if kind == "quineling":
                if line != HEADER:
                    raise _Fail(f"unsupported header {line[:40]!r}; expected {HEADER!r}")
            elif kind == "body":
                body = _parse_body(line)
            elif kind == "parent":
                digest = line[len("parent ") :]
                if not _HASH_RX.fullmatch(digest) or line != f"parent {digest}":
                    raise _Fail("parent line must be: parent sha256:<64 lowercase hex>")
                parents.append(digest)
            elif kind == "step":
                program["steps"].append(_parse_step(line))
            else:
                decl_kind, decl = _parse_decl(line)
                program[decl_kind + "s"].append(decl)
        except _Fail as exc:
            raise fail(f"line {number}: {exc}") from None
    if body is None:
        raise fail("source must start with the header and body lines")
    # Belt and braces: only the exact printed form is canonical.
    if render_source(program, body, parents) != text:
        raise fail("source is not in canonical form")
    return program, body, parents
