"""The closed operation catalogue: names, arguments, and type/unit rules.

Shared by the intent validator, the thought parser and the kernel so that "what an op accepts and
produces" is written down once. Arithmetic lives in :mod:`quineling.runtime.kernel`.

Rules beyond the table of names:

* ``take.n`` is an integer ``1..1024`` (lists never exceed 1024 values, so a larger N means nothing new).
* ``keep`` is typed ``list → list`` only; at run time a non-integral value is neither even nor odd and is
  dropped by both ``keep even`` and ``keep odd``.
* ``count`` accepts a list of any unit and yields a dimensionless number; ``product`` requires a
  dimensionless list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from quineling.runtime.fields import normalize_number
from quineling.runtime.units import unit_power
from stores.jsontypes import JSON

OPS = (
    "square", "double", "negate", "abs", "increment", "scale", "sort", "reverse", "keep", "take",
    "sum", "mean", "min", "max", "product", "count", "allocate",
)  # fmt: skip
ARG_KEYS: dict[str, tuple[str, ...]] = {op: () for op in OPS} | {
    "scale": ("k",),
    "take": ("n",),
    "keep": ("parity",),
    "allocate": ("from",),
}
PARITIES = ("even", "odd")
TAKE_MAX = 1024

_SAME_SHAPE = frozenset({"double", "negate", "abs", "increment", "scale"})
_LIST_TO_LIST = frozenset({"sort", "reverse", "keep", "take"})
_REDUCE = frozenset({"sum", "mean", "min", "max"})

Port = tuple[str, str | None]  # (type, unit)


class NonFinite(ValueError):
    """A number that is not a finite IEEE double (NaN, ±Infinity, or an integer too large for a double)."""


class ArgError(ValueError):
    """A bad op argument; ``key`` names the offending argument, or None when the args object is wrong."""

    def __init__(self, message: str, key: str | None = None, *, missing: bool = False) -> None:
        super().__init__(message)
        self.key = key
        self.missing = missing


class SignatureError(ValueError):
    """The op cannot take this input; ``field`` is ``"type"`` or ``"unit"``."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def to_number(value: object) -> int | float:
    """A finite double, integral values as ints. Raises ``ValueError`` (``NonFinite`` for non-finite)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a number")
    try:
        as_float = float(value)
    except OverflowError:
        raise NonFinite("must be a finite number") from None
    if not math.isfinite(as_float):
        raise NonFinite("must be a finite number")
    # Numbers are doubles on the wire (protobuf Struct); normalising through float keeps hashes stable.
    return normalize_number(as_float)


def out_port_count(op: str) -> int:
    return 2 if op == "allocate" else 1


def check_args(op: str, args: object) -> JSON:
    """The cleaned args of a catalogue op. Raises :class:`ArgError`."""
    if not isinstance(args, Mapping):
        raise ArgError("args must be an object")
    allowed = ARG_KEYS[op]
    for key in args:
        if key not in allowed:
            raise ArgError(f"{op} takes no argument {key!r}", str(key))
    for key in allowed:
        if key not in args:
            raise ArgError(f"{op} needs argument {key!r}", key, missing=True)
    if op == "scale":
        return {"k": _number_arg(args["k"], "k")}
    if op == "take":
        n = args["n"]
        if isinstance(n, float) and n.is_integer():
            n = int(n)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= TAKE_MAX:
            raise ArgError(f"take needs an integer n in 1..{TAKE_MAX}", "n")
        return {"n": n}
    if op == "keep":
        if args["parity"] not in PARITIES:
            raise ArgError("keep needs parity 'even' or 'odd'", "parity")
        return {"parity": args["parity"]}
    if op == "allocate":
        k = _number_arg(args["from"], "from")
        if k < 0:
            raise ArgError("allocate needs from >= 0", "from")
        return {"from": k}
    return {}


def _number_arg(value: object, key: str) -> int | float:
    try:
        return to_number(value)
    except ValueError as exc:
        raise ArgError(f"{key} {exc}", key) from None


def signature(op: str, port: Port) -> list[Port]:
    """The (type, unit) of each out-port of ``op`` fed ``port``. Raises :class:`SignatureError`."""
    kind, unit = port
    if op == "square":
        try:
            return [(kind, unit_power(unit, 2))]
        except ValueError as exc:
            raise SignatureError(f"square: {exc}", "unit") from None
    if op in _SAME_SHAPE:
        return [(kind, unit)]
    if op == "allocate":
        if kind != "number":
            raise SignatureError("allocate needs a number, got a list", "type")
        return [("number", unit), ("number", unit)]
    if kind != "list":
        raise SignatureError(f"{op} needs a list, got a number", "type")
    if op in _LIST_TO_LIST:
        return [("list", unit)]
    if op in _REDUCE:
        return [("number", unit)]
    if op == "product":
        if unit is not None:
            raise SignatureError(f"product needs dimensionless values, got {unit}", "unit")
        return [("number", None)]
    if op == "count":
        return [("number", None)]
    raise SignatureError(f"unknown operation {op!r}", "op")
