"""The program model shared by the thought parser, intent compiler, source format, kernel and offspring.

A *program* is the executable part of a lifeform, independent of how it was written down::

    Program = {
      "inputs":  [{"name": str, "type": "number" | "list", "unit": str | None, "value": number | [number]}],
      "steps":   [{"id": str, "op": str, "args": dict, "in": [port], "out": [port]}],
      "outputs": [{"name": str, "from": port, "type": "number" | "list", "unit": str | None}],
    }

Ports are names: every input name and every name in a step's ``out`` is a port; ``in`` and ``from`` refer to
earlier ports. ``allocate`` has two ordered out-ports ``[allocated, remaining]``; every other op has one.
Units are canonical unit strings (see :mod:`quineling.runtime.units`) or ``None`` for dimensionless.

A *body* is ``{"traits": {"length", "girth", "curl", "hue", "gait", "temper": int −1000..1000},
"repeats": int 1..8}``. A lifeform's canonical source (:mod:`quineling.runtime.source`) holds program, body and
ordered parent hashes; its SHA-256 is the artifact id.

An *intent* (:mod:`quineling.runtime.intent`) is a program plus ``format``, ``version``, ``name`` and
``thought``.
"""

from __future__ import annotations

from stores.jsontypes import JSON

TRAITS = ("length", "girth", "curl", "hue", "gait", "temper")
TRAIT_MIN, TRAIT_MAX = -1000, 1000
REPEATS_MIN, REPEATS_MAX = 1, 8

# Programs and bodies are JSON documents (stored in artifacts, hashed, sent on the wire); the names say which
# shape a value has, and the checker in quineling.runtime.intent is what guarantees it.
Program = JSON
Body = JSON
# The value of an input, an output or a step's port: a number, or a list of numbers for a "list" port.
PortValue = int | float | list[int | float]


def program_of(intent: JSON) -> Program:
    """The program part of an intent (or of any mapping holding inputs/steps/outputs)."""
    return {"inputs": intent["inputs"], "steps": intent["steps"], "outputs": intent["outputs"]}
