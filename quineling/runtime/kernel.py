"""The evaluation kernel: runs a checked program with the closed catalogue.

Arithmetic is IEEE double arithmetic (as in the protobuf/JSON wire model), so every input is converted to
``float`` first: this keeps results identical to a JavaScript runtime and makes overflow visible as
infinity instead of an unbounded Python integer. Any non-finite intermediate fails with ``non-finite`` and
path ``steps[i]``. Results and trace values write integral floats as ints.

Edge cases (lists may become empty after ``keep``):

* ``sum`` of an empty list is 0, ``product`` 1, ``count`` 0;
* ``mean`` of an empty list is 0/0 and ``min``/``max`` are ±infinity, so all three fail with
  ``non-finite``;
* ``keep`` drops non-integral values (they are neither even nor odd); ``take N`` of a shorter list is the
  whole list; ``sort`` is ascending;
* ``allocate from K``: allocated = clamp(x, 0, K), remaining = K − allocated.

The program must already have passed :func:`quineling.runtime.intent.check_program`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from quineling.runtime.errors import QuinelingError
from quineling.runtime.fields import normalize_number
from quineling.runtime.program import PortValue, Program
from stores.jsontypes import JSON

Value = float | list[float]
# (outputs {name: value}, units {name: unit}, trace [{step, op, values}])
Execution = tuple[JSON, dict[str, str | None], list[JSON]]


def _elementwise(fn: Callable[[float], float]) -> Callable[[Value, JSON], list[Value]]:
    def apply(x: Value, _args: JSON) -> list[Value]:
        return [[fn(v) for v in x] if isinstance(x, list) else fn(x)]

    return apply


def _scale(x: Value, args: JSON) -> list[Value]:
    k = float(args["k"])
    return [[v * k for v in x] if isinstance(x, list) else x * k]


def _keep(xs: list[float], args: JSON) -> list[Value]:
    want = 0.0 if args["parity"] == "even" else 1.0
    return [[v for v in xs if v.is_integer() and abs(math.fmod(v, 2.0)) == want]]


def _sum(xs: list[float]) -> float:
    total = 0.0
    for v in xs:  # sequential, like a JavaScript reduce, so results match bit for bit
        total += v
    return total


def _product(xs: list[float]) -> float:
    total = 1.0
    for v in xs:
        total *= v
    return total


def _allocate(x: float, args: JSON) -> list[Value]:
    k = float(args["from"])
    allocated = min(max(x, 0.0), k)
    return [allocated, k - allocated]


# An op's input is a float or a list of floats as its signature says (the checked program guarantees it),
# so each entry takes the one it needs.
OPS: dict[str, Callable[[Any, JSON], list[Value]]] = {
    "square": _elementwise(lambda v: v * v),
    "double": _elementwise(lambda v: v * 2.0),
    "negate": _elementwise(lambda v: -v),
    "abs": _elementwise(abs),
    "increment": _elementwise(lambda v: v + 1.0),
    "scale": _scale,
    "sort": lambda xs, _a: [sorted(xs)],
    "reverse": lambda xs, _a: [xs[::-1]],
    "keep": _keep,
    "take": lambda xs, a: [xs[: a["n"]]],
    "sum": lambda xs, _a: [_sum(xs)],
    "mean": lambda xs, _a: [_sum(xs) / len(xs) if xs else math.nan],
    "min": lambda xs, _a: [min(xs, default=math.inf)],
    "max": lambda xs, _a: [max(xs, default=-math.inf)],
    "product": lambda xs, _a: [_product(xs)],
    "count": lambda xs, _a: [float(len(xs))],
    "allocate": _allocate,
}


def _finite(value: Value) -> bool:
    if isinstance(value, list):
        return all(math.isfinite(v) for v in value)
    return math.isfinite(value)


def _public(value: Value) -> PortValue:
    if isinstance(value, list):
        return [normalize_number(v) for v in value]
    return normalize_number(value)


def execute(program: Program) -> Execution:
    """``(outputs {name: value}, units {name: unit}, trace [{step, op, values}])`` of a checked program."""
    ports: dict[str, Value] = {}
    for item in program["inputs"]:
        value = item["value"]
        ports[item["name"]] = [float(v) for v in value] if isinstance(value, list) else float(value)
    trace: list[JSON] = []
    for i, step in enumerate(program["steps"]):
        results = OPS[step["op"]](ports[step["in"][0]], step["args"])
        for port, value in zip(step["out"], results, strict=True):
            if not _finite(value):
                raise QuinelingError(
                    "non-finite",
                    f"step {step['id']} ({step['op']}) produced a non-finite value",
                    f"steps[{i}]",
                )
            ports[port] = value
        trace.append({"step": step["id"], "op": step["op"], "values": [_public(v) for v in results]})
    outputs = {o["name"]: _public(ports[o["from"]]) for o in program["outputs"]}
    units = {o["name"]: o["unit"] for o in program["outputs"]}
    return outputs, units, trace
