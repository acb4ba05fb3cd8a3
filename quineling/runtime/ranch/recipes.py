"""The four offspring recipes: how parent programs combine into the child's program.

Each recipe returns the child program or raises :class:`Rejected` with typed diagnostics; a rejection is a
semantic outcome of ``offspringPreview``, not an error.

Naming rule (compose and merge): parent A's names are kept verbatim. A name coming from parent B keeps its
spelling unless it collides with a name already in the child — a step id with a step id, a port (input or
step out-port) with a port — in which case it gets the first free suffix ``_2``, ``_3``, … (the base is
shortened so the name stays within 32 characters). A step whose single out-port is named like the step keeps
that property, so ``step s1 sum xs`` of B becomes ``step s1_2 sum …`` with out-port ``s1_2``. References in B
(step ``in`` ports and output ``from`` ports) follow the renaming.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

from quineling.runtime.program import Program
from stores.jsontypes import JSON

NAME_MAX = 32


class Rejected(Exception):
    """The candidate cannot be built; ``diagnostics`` are ``{code, message, path}`` items."""

    def __init__(self, diagnostics: list[JSON]) -> None:
        super().__init__(diagnostics[0]["message"])
        self.diagnostics = diagnostics


def diagnostic(code: str, message: str, path: str | None) -> JSON:
    return {"code": code, "message": message, "path": path}


def _fresh(name: str, *taken: set[str]) -> str:
    if not any(name in t for t in taken):
        return name
    k = 2
    while True:
        suffix = f"_{k}"
        candidate = name[: NAME_MAX - len(suffix)] + suffix
        if not any(candidate in t for t in taken):
            return candidate
        k += 1


class _Namer:
    """Tracks the child's step ids and ports while B's parts are copied in."""

    def __init__(self, program: Program) -> None:
        self.ids = {s["id"] for s in program["steps"]}
        self.ports = {i["name"] for i in program["inputs"]}
        self.ports.update(p for s in program["steps"] for p in s["out"])
        self.rename: dict[str, str] = {}

    def add_input(self, item: JSON) -> JSON:
        name = _fresh(item["name"], self.ports)
        self.ports.add(name)
        self.rename[item["name"]] = name
        return {**item, "name": name}

    def add_step(self, step: JSON) -> JSON:
        sources = [self.rename.get(p, p) for p in step["in"]]
        if step["out"] == [step["id"]]:
            ident = _fresh(step["id"], self.ids, self.ports)
            outs = [ident]
        else:
            ident = _fresh(step["id"], self.ids)
            outs = [_fresh(p, self.ports) for p in step["out"]]
        self.ids.add(ident)
        self.ports.update(outs)
        self.rename.update(zip(step["out"], outs, strict=True))
        return {**copy.deepcopy(step), "id": ident, "in": sources, "out": outs}

    def add_output(self, output: JSON) -> JSON:
        return {**output, "from": self.rename.get(output["from"], output["from"])}


def _signature(ports: Iterable[JSON]) -> list[tuple[str, str | None]]:
    return [(p["type"], p["unit"]) for p in ports]


def _show(port: JSON) -> str:
    return f"{port['name']} ({port['type']}, unit {port['unit'] or 'none'})"


def compose(a: Program, b: Program) -> Program:
    """A feeds B: A's outputs replace B's inputs position by position (B's literal values are dropped)."""
    if len(a["outputs"]) != len(b["inputs"]):
        raise Rejected([diagnostic(
            "compose-arity",
            f"parent A has {len(a['outputs'])} output(s) but parent B has {len(b['inputs'])} input(s)",
            "input.parents[1]",
        )])  # fmt: skip
    problems = []
    for out, inp in zip(a["outputs"], b["inputs"], strict=True):
        for field, code in (("type", "compose-type"), ("unit", "compose-unit")):
            if out[field] != inp[field]:
                problems.append(diagnostic(
                    code, f"A's output {_show(out)} cannot feed B's input {_show(inp)}", "input.parents[1]"
                ))  # fmt: skip
    if problems:
        raise Rejected(problems)
    child = copy.deepcopy(a)
    namer = _Namer(child)
    namer.rename.update(
        {inp["name"]: out["from"] for out, inp in zip(a["outputs"], b["inputs"], strict=True)}
    )
    child["steps"] += [namer.add_step(s) for s in b["steps"]]
    child["outputs"] = [namer.add_output(o) for o in b["outputs"]]
    return child


def merge(a: Program, b: Program) -> Program:
    """Both programs side by side: A's inputs, steps and outputs, then B's (renamed where they collide)."""
    clashes = sorted({o["name"] for o in a["outputs"]} & {o["name"] for o in b["outputs"]})
    if clashes:
        raise Rejected([diagnostic(
            "merge-collision", f"both parents declare output(s) {', '.join(clashes)}", "input.parents[1]"
        )])  # fmt: skip
    child = copy.deepcopy(a)
    namer = _Namer(child)
    child["inputs"] += [namer.add_input(i) for i in b["inputs"]]
    child["steps"] += [namer.add_step(s) for s in b["steps"]]
    child["outputs"] += [namer.add_output(o) for o in b["outputs"]]
    return child


def mate(a: Program, b: Program) -> Program:
    """A's program; only the traits are crossed. Needs the same output signature (types, units, order)."""
    if _signature(a["outputs"]) != _signature(b["outputs"]):
        raise Rejected([diagnostic(
            "mate-signature",
            "mating needs the same output types and units in the same order "
            f"(A: {[_show(o) for o in a['outputs']]}, B: {[_show(o) for o in b['outputs']]})",
            "input.parents[1]",
        )])  # fmt: skip
    return copy.deepcopy(a)


def body(a: Program) -> Program:
    """The parent's program unchanged; only the body is new."""
    return copy.deepcopy(a)


RECIPES: dict[str, Callable[..., Program]] = {"compose": compose, "mate": mate, "merge": merge, "body": body}


def combine(recipe: str, programs: list[Program]) -> Program:
    return RECIPES[recipe](*programs)
