"""The thought parser: QDL pipeline text → typed intent.

``parse_thought(thought)`` returns ``{status, intent?, diagnostics, assumptions, sourceMap}`` and never
touches any state. Grammar (stages separated by ``|``, surrounding whitespace ignored)::

    source  := "[" NUMBER ("," NUMBER)* "]" [UNIT] | NUMBER [UNIT] | "range" N [UNIT]
    op      := NAME [ARGS]        square | scale K | keep even | take N | allocate from K [UNIT] | …
    report  := "report" NAME ("," NAME)*

Rules beyond the grammar:

* Spans are ``[start, end)`` offsets in Unicode code points into the original (untrimmed) thought.
* ``range N`` is the list ``1, 2, …, N`` (N an integer 1..1024); this is recorded as an assumption.
* Keywords and op names are lowercase and matched exactly (``Sum`` is not in the catalogue).
* ``scale K`` takes a dimensionless K; writing a unit after it is a unit mismatch. ``allocate from K`` may
  name K's unit, which must equal the pipeline's unit; without one K is read in the pipeline's unit.
* Naming: the input is ``xs`` (list) or ``x`` (number); steps are ``s1, s2, …`` and each step's out-port is
  its id, except ``allocate`` whose ports are ``<id>_allocated`` and ``<id>_remaining``. The intent name is
  the report names joined by ``-`` (``_`` becomes ``-``), cut to 64 characters.
* Outcome when several problems exist: ``unsupported`` beats ``clarify`` beats ``inconsistent``; all
  diagnostics found before type checking are returned (sorted by span). Type checking runs only on a
  structurally complete pipeline and stops at its first error.
* ``clarify``: empty thought, missing source/report/operation, an empty stage, a missing op argument.
  ``unsupported``: an op outside the catalogue, more than 64 operations. ``inconsistent``: malformed
  values/arguments/units/names, a source or report in the middle, type or unit mismatch (including an op
  after ``allocate``, whose two values only ``report`` may take), report-name count ≠ port count, duplicate
  report names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from quineling.runtime.catalogue import (
    OPS,
    PARITIES,
    TAKE_MAX,
    NonFinite,
    Port,
    SignatureError,
    out_port_count,
    signature,
    to_number,
)
from quineling.runtime.errors import QuinelingError
from quineling.runtime.intent import FORMAT, MAX_ELEMENTS, MAX_LIST, MAX_THOUGHT_CHARS, VERSION
from quineling.runtime.program import PortValue
from quineling.runtime.units import canonical_unit
from stores.jsontypes import JSON

NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER = re.compile(NUMBER)
_INTEGER = re.compile(r"[0-9]{1,6}")
_SOURCE_START = re.compile(r"\[|[+-]?\.?[0-9]|range(?![a-z0-9_])")
_REPORT = re.compile(r"report(?![a-z0-9_])")
_WORD = re.compile(r"\S+")

# Which outcome wins when problems of several kinds are present.
_RANK = {"unsupported": 0, "clarify": 1, "inconsistent": 2}


@dataclass(frozen=True, slots=True)
class _Text:
    """A piece of the thought: its trimmed text and where it sits in the original."""

    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def span(self) -> list[int]:
        return [self.start, self.end]

    def sub(self, start: int, end: int | None = None) -> _Text:
        """The trimmed slice ``text[start:end]``."""
        raw = self.text[start:end]
        lead = len(raw) - len(raw.lstrip())
        return _Text(raw.strip(), self.start + start + lead)

    def words(self) -> list[_Text]:
        return [_Text(m.group(), self.start + m.start()) for m in _WORD.finditer(self.text)]


class _Problems:
    def __init__(self) -> None:
        self.found: list[tuple[str, JSON]] = []

    def add(self, outcome: str, code: str, message: str, span: list[int]) -> None:
        self.found.append((outcome, {"code": code, "message": message, "span": list(span)}))

    def status(self) -> str:
        return min((outcome for outcome, _ in self.found), key=_RANK.__getitem__)

    def diagnostics(self) -> list[JSON]:
        return [d for _, d in sorted(self.found, key=lambda item: item[1]["span"][0])]


def _parts(text: _Text, separator: str) -> list[_Text]:
    """The trimmed parts of ``text`` between separators (empty parts kept, so ``1,,2`` is noticed)."""
    parts, start = [], 0
    for part in text.text.split(separator):
        parts.append(text.sub(start, start + len(part)))
        start += len(part) + 1
    return parts


def _number(word: _Text, what: str, problems: _Problems) -> int | float | None:
    if not _NUMBER.fullmatch(word.text):
        problems.add("inconsistent", "invalid-value", f"{word.text!r} is not a number ({what})", word.span)
        return None
    try:
        return to_number(float(word.text))
    except NonFinite:
        problems.add("inconsistent", "non-finite", f"{word.text!r} is not a finite number", word.span)
        return None


def _unit(text: _Text, problems: _Problems, assumptions: list[str]) -> tuple[bool, str | None]:
    """``(ok, canonical unit)`` of an optional unit written after a value."""
    if not text.text:
        return True, None
    try:
        unit = canonical_unit(text.text)
    except ValueError as exc:
        problems.add("inconsistent", "invalid-unit", f"{text.text!r} is not a unit: {exc}", text.span)
        return False, None
    if unit != text.text:
        assumptions.append(f"unit {text.text} is read as {unit or 'dimensionless'}")
    return True, unit


@dataclass(slots=True)
class _Source:
    kind: str
    value: PortValue
    unit: str | None


def _parse_source(stage: _Text, problems: _Problems, assumptions: list[str]) -> _Source | None:
    text = stage.text
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            problems.add("inconsistent", "invalid-value", "the list has no closing ']'", stage.span)
            return None
        body = stage.sub(1, close)
        items = _parts(body, ",") if body.text else []
        if not items or len(items) > MAX_LIST:
            problems.add("inconsistent", "invalid-value", f"a list holds 1..{MAX_LIST} numbers", stage.span)
            return None
        values = [_number(item, "list item", problems) for item in items]
        kind, rest = "list", stage.sub(close + 1)
        numbers = [v for v in values if v is not None]
        if len(numbers) != len(values):
            return None
        value: PortValue = numbers
    elif text.startswith("range") and _SOURCE_START.match(text):
        words = stage.sub(5).words()
        if not words:
            problems.add("clarify", "missing-argument", "range needs a count N", stage.span)
            return None
        count = words[0]
        if not _INTEGER.fullmatch(count.text) or not 1 <= int(count.text) <= MAX_LIST:
            problems.add(
                "inconsistent", "invalid-argument", f"range needs an integer N in 1..{MAX_LIST}", count.span
            )
            return None
        n = int(count.text)
        value, kind = list(range(1, n + 1)), "list"
        rest = stage.sub(count.end - stage.start)
        assumptions.append(f"range {n} is the list 1..{n}")
    else:
        match = _NUMBER.match(text)
        end = match.end() if match else 0
        if match is None or (end < len(text) and not text[end].isspace()):
            problems.add(
                "inconsistent",
                "invalid-value",
                "the source must be a number, a [list] or range N",
                stage.span,
            )
            return None
        number = _number(stage.sub(0, end), "source", problems)
        if number is None:
            return None
        value = number
        kind, rest = "number", stage.sub(end)
    ok, unit = _unit(rest, problems, assumptions)
    if not ok:
        return None
    if rest.text == "":
        assumptions.append("no unit given; values are dimensionless")
    return _Source(kind, value, unit)


@dataclass(slots=True)
class _Op:
    op: str
    args: JSON
    stage: _Text
    unit: _Text | None = None  # allocate's optional unit for K


def _parse_op(stage: _Text, problems: _Problems) -> _Op | None:
    words = stage.words()
    name, args = words[0], words[1:]
    op = name.text
    if op not in OPS:
        problems.add(
            "unsupported", "unsupported-operation", f"{op!r} is not an operation in the catalogue", stage.span
        )
        return None

    def bad(message: str, where: _Text = stage) -> None:
        problems.add("inconsistent", "invalid-argument", message, where.span)

    def missing(message: str) -> None:
        problems.add("clarify", "missing-argument", message, stage.span)

    if op == "scale":
        if not args:
            missing("scale needs a factor K, e.g. 'scale 3'")
            return None
        k = _number(args[0], "scale factor", problems)
        if len(args) > 1:
            where = stage.sub(args[1].start - stage.start)
            try:
                canonical_unit(where.text)
            except ValueError:
                bad("scale takes one factor K", where)
                return None
            problems.add("inconsistent", "unit-mismatch", "the scale factor is dimensionless", where.span)
            return None
        return None if k is None else _Op(op, {"k": k}, stage)
    if op == "take":
        if not args:
            missing("take needs a count N, e.g. 'take 2'")
            return None
        if len(args) > 1 or not _INTEGER.fullmatch(args[0].text) or not 1 <= int(args[0].text) <= TAKE_MAX:
            bad(f"take needs one integer N in 1..{TAKE_MAX}")
            return None
        return _Op(op, {"n": int(args[0].text)}, stage)
    if op == "keep":
        if not args:
            missing("keep needs 'even' or 'odd'")
            return None
        if len(args) > 1 or args[0].text not in PARITIES:
            bad("keep needs 'even' or 'odd'")
            return None
        return _Op(op, {"parity": args[0].text}, stage)
    if op == "allocate":
        if not args or (args[0].text == "from" and len(args) == 1):
            missing("allocate needs a budget, e.g. 'allocate from 20'")
            return None
        if args[0].text != "from":
            bad("write 'allocate from K'")
            return None
        k = _number(args[1], "allocate budget", problems)
        if k is None:
            return None
        if k < 0:
            bad("allocate needs a budget K >= 0", args[1])
            return None
        unit = stage.sub(args[1].end - stage.start) if len(args) > 2 else None
        return _Op(op, {"from": k}, stage, unit)
    if args:
        bad(f"{op} takes no argument")
        return None
    return _Op(op, {}, stage)


def _parse_report(stage: _Text, problems: _Problems) -> list[_Text] | None:
    rest = stage.sub(len("report"))
    if not rest.text:
        problems.add("clarify", "missing-argument", "report needs at least one name", stage.span)
        return None
    names = _parts(rest, ",")
    for name in names:
        if not NAME.fullmatch(name.text):
            message = f"{name.text!r} is not a name ([a-z][a-z0-9_]{{0,31}})"
            problems.add("inconsistent", "invalid-name", message, name.span)
            return None
    return names


def _outcome(status: str, problems: _Problems, assumptions: list[str]) -> JSON:
    return {
        "status": status,
        "diagnostics": problems.diagnostics(),
        "assumptions": assumptions,
        "sourceMap": [],
    }


def parse_thought(thought: str) -> JSON:
    """Parse a thought into ``{status, intent?, diagnostics, assumptions, sourceMap}``."""
    if not isinstance(thought, str):
        raise QuinelingError("invalid-request", "thought must be a string", "thought")
    if len(thought) > MAX_THOUGHT_CHARS:
        raise QuinelingError("invalid-request", f"thought is over {MAX_THOUGHT_CHARS} characters", "thought")
    problems = _Problems()
    assumptions: list[str] = []
    if not thought.strip():
        problems.add(
            "clarify",
            "empty-thought",
            "the thought is empty; describe a pipeline to build",
            [0, len(thought)],
        )
        return _outcome("clarify", problems, assumptions)

    stages = _parts(_Text(thought, 0), "|")
    report_stage = stages[-1] if _REPORT.match(stages[-1].text) else None
    # Without a report, a trailing empty stage ("… | sum |") is the missing report, not an empty op.
    trailing = report_stage is not None or (len(stages) > 1 and not stages[-1].text)
    middle = stages[1:-1] if trailing else stages[1:]
    source: _Source | None = None
    first = stages[0]
    if first is report_stage or not _SOURCE_START.match(first.text):
        message = "the pipeline must start with a number, a [list] or range N"
        problems.add("clarify", "missing-source", message, first.span)
    else:
        source = _parse_source(first, problems, assumptions)
    if report_stage is None:
        end = stages[-1].end if stages[-1].text else len(thought.rstrip())
        problems.add("clarify", "missing-report", "end the pipeline with 'report NAME'", [end, end])
        names = None
    else:
        names = _parse_report(report_stage, problems)

    ops: list[_Op] = []
    for stage in middle:
        if not stage.text:
            problems.add("clarify", "empty-stage", "there is nothing between two '|'", stage.span)
        elif _REPORT.match(stage.text):
            problems.add("inconsistent", "misplaced-report", "report must be the last stage", stage.span)
        elif _SOURCE_START.match(stage.text):
            problems.add(
                "inconsistent", "misplaced-source", "a source can only be the first stage", stage.span
            )
        elif (op := _parse_op(stage, problems)) is not None:
            ops.append(op)
    if not middle and report_stage is not None and source is not None:
        problems.add(
            "clarify", "missing-operation", "add at least one operation, e.g. 'sum'", report_stage.span
        )
    if len(middle) > MAX_ELEMENTS:
        span = [middle[MAX_ELEMENTS].start, middle[-1].end]
        problems.add(
            "unsupported", "too-many-steps", f"a pipeline holds at most {MAX_ELEMENTS} operations", span
        )
    if problems.found or source is None or names is None:
        return _outcome(problems.status(), problems, assumptions)
    return _typed(thought, source, first, ops, names, problems, assumptions)


def _typed(
    thought: str,
    source: _Source,
    first: _Text,
    ops: list[_Op],
    names: list[_Text],
    problems: _Problems,
    assumptions: list[str],
) -> JSON:
    """Type-check the complete pipeline and build the intent."""
    input_name = "xs" if source.kind == "list" else "x"
    current_ports = [input_name]
    current: list[Port] = [(source.kind, source.unit)]
    steps: list[JSON] = []
    for i, op in enumerate(ops, start=1):
        ident = f"s{i}"
        if len(current_ports) > 1:
            message = f"{op.op} cannot choose between the {len(current_ports)} values before it; report them"
            problems.add("inconsistent", "type-mismatch", message, op.stage.span)
            return _outcome("inconsistent", problems, assumptions)
        if op.unit is not None:
            try:
                k_unit = canonical_unit(op.unit.text)
            except ValueError as exc:
                problems.add(
                    "inconsistent", "invalid-unit", f"{op.unit.text!r} is not a unit: {exc}", op.unit.span
                )
                return _outcome("inconsistent", problems, assumptions)
            if k_unit != current[0][1]:
                message = f"allocate budget is in {k_unit or 'no unit'} but the value is in {current[0][1] or 'no unit'}"
                problems.add("inconsistent", "unit-mismatch", message, op.unit.span)
                return _outcome("inconsistent", problems, assumptions)
        elif op.op == "allocate" and current[0][1] is not None:
            assumptions.append(f"allocate from {op.args['from']} is read in {current[0][1]}")
        try:
            produced = signature(op.op, current[0])
        except SignatureError as exc:
            code = "unit-mismatch" if exc.field == "unit" else "type-mismatch"
            problems.add("inconsistent", code, str(exc), op.stage.span)
            return _outcome("inconsistent", problems, assumptions)
        outs = [f"{ident}_allocated", f"{ident}_remaining"] if out_port_count(op.op) == 2 else [ident]
        steps.append({"id": ident, "op": op.op, "args": op.args, "in": [current_ports[0]], "out": outs})
        current_ports, current = outs, produced

    if len(names) != len(current_ports):
        message = f"report names {len(names)} value(s) but the pipeline ends with {len(current_ports)}"
        problems.add("inconsistent", "report-count", message, [names[0].start, names[-1].end])
        return _outcome("inconsistent", problems, assumptions)
    seen: set[str] = set()
    for name in names:
        if name.text in seen:
            problems.add("inconsistent", "duplicate-name", f"{name.text!r} is reported twice", name.span)
            return _outcome("inconsistent", problems, assumptions)
        seen.add(name.text)

    outputs = [
        {"name": name.text, "from": port, "type": kind, "unit": unit}
        for name, port, (kind, unit) in zip(names, current_ports, current, strict=True)
    ]
    intent = {
        "format": FORMAT,
        "version": VERSION,
        "name": "-".join(n.text for n in names).replace("_", "-")[:64].rstrip("-"),
        "thought": thought,
        "inputs": [{"name": input_name, "type": source.kind, "unit": source.unit, "value": source.value}],
        "steps": steps,
        "outputs": outputs,
    }
    source_map = [{"element": "inputs[0]", "span": first.span}]
    source_map += [{"element": f"steps[{i}]", "span": op.stage.span} for i, op in enumerate(ops)]
    source_map += [{"element": f"outputs[{j}]", "span": name.span} for j, name in enumerate(names)]
    return {
        "status": "parsed",
        "intent": intent,
        "diagnostics": [],
        "assumptions": assumptions,
        "sourceMap": source_map,
    }
