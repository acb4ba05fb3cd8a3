"""Executable documentation: the example conventions of ``docs/*.md`` and ``README.md``, and their checker.

The documents state these conventions to their readers (``docs/runtime-operations.md``, "How to read the
examples"); this module is the one implementation the tests use, so a document cannot claim what the running
service does not do.

* A request is a ``send NAME 'REQUEST'`` line in a `` ```sh `` fence: the shell helper ``send`` defined in
  ``docs/runtime-operations.md`` posts ``REQUEST`` (a JSON runtime request) as one data part of a JSON-RPC
  ``SendMessage`` and prints the answer. ``NAME`` labels the answer for later requests.
* An answer is a `` ```json answer `` fence right after such an ``sh`` fence: it belongs to the fence's last
  ``send``. It is the data of the task's ``quineling-result`` artifact, ``{"operation", "result"}``, or for a
  FAILED task ``{"error": {code, message, path}}`` (the status message's ``metadata.quinelingError``).
* Answers are abridged: an object shows only some of its fields, an array whose last item is ``"…"`` only its
  first items, a string ending in ``…`` only its beginning. Everything shown must equal the real answer.
* ``{{NAME.path}}`` in a request or an answer stands for the value at ``path`` (``result.artifact.id``,
  ``result.derivations[0].index``) in the answer labelled ``NAME``. A string that is only a placeholder takes
  the value itself (an object, a number); inside a longer string the value is written as text.
* The task state follows from the answer: ``error`` → FAILED; ``result.status`` ``clarify`` →
  INPUT_REQUIRED; ``unsupported`` or ``inconsistent`` → REJECTED; anything else → COMPLETED.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ELLIPSIS = "…"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SEND = re.compile(r"^send[ \t]+([a-z][a-z0-9-]*)[ \t]+'([^']*)'[ \t]*(?:#[^\n]*)?$", re.MULTILINE)
PLACEHOLDER = re.compile(r"\{\{([^{}]+)\}\}")
REJECTING = {"unsupported": "TASK_STATE_REJECTED", "inconsistent": "TASK_STATE_REJECTED"}


class DocError(AssertionError):
    """The document breaks its own conventions, or an example does not do what the document says."""


@dataclass(frozen=True, slots=True)
class Fence:
    info: str
    body: str
    line: int  # of the opening ```

    @property
    def language(self) -> str:
        return self.info.split()[0] if self.info.split() else ""

    @property
    def tags(self) -> list[str]:
        return self.info.split()[1:]


@dataclass(slots=True)
class Example:
    """One request: a ``send NAME '…'`` line (``kind`` "send") or a whole JSON-RPC body (``kind`` "rpc")."""

    kind: str
    name: str
    request_text: str
    line: int
    answer_text: str | None = None
    answer_line: int | None = None


@dataclass(slots=True)
class Document:
    path: Path
    text: str
    fences: list[Fence] = field(default_factory=list)

    @classmethod
    def load(cls, relative: str | Path) -> Document:
        path = ROOT / relative  # an absolute path stays as it is
        text = path.read_text(encoding="utf-8")
        fences = [Fence(m[1].strip(), m[2], text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]
        return cls(path, text, fences)

    def where(self, line: int) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{line}"

    def fence(self, language: str, tag: str | None = None) -> Fence:
        """The one fence with this language and tag (e.g. the ``sh helper`` fence)."""
        found = [f for f in self.fences if f.language == language and (tag is None or tag in f.tags)]
        if len(found) != 1:
            raise DocError(
                f"{self.path.name}: expected one ```{language} {tag or ''} fence, found {len(found)}"
            )
        return found[0]

    def examples(self) -> list[Example]:
        """Every request in document order, each with the answer shown right after its fence (if any).

        ``json rpc NAME`` fences hold a whole JSON-RPC request body; its answer is the whole response.
        An answer fence after any other fence is an error: nothing would check it.
        """
        examples: list[Example] = []
        previous: list[Example] = []  # the requests of the fence just before
        for fence in self.fences:
            if fence.language == "json" and "answer" in fence.tags:
                if not previous:
                    raise DocError(f"{self.where(fence.line)}: an answer must follow a fence of requests")
                if previous[-1].answer_text is not None:
                    raise DocError(f"{self.where(fence.line)}: the request before already has an answer")
                previous[-1].answer_text, previous[-1].answer_line = fence.body, fence.line
                continue
            if fence.language == "sh":
                previous = self._sends(fence)
            elif fence.language == "json" and "rpc" in fence.tags:
                names = [t for t in fence.tags if t != "rpc"]
                if len(names) != 1:
                    raise DocError(f"{self.where(fence.line)}: write ```json rpc NAME")
                previous = [Example("rpc", names[0], fence.body, fence.line)]
            else:
                previous = []
            examples += previous
        names = [e.name for e in examples]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise DocError(f"{self.path.name}: answer names used twice: {duplicates}")
        return examples

    def _sends(self, fence: Fence) -> list[Example]:
        found = []
        for match in SEND.finditer(fence.body):
            line = fence.line + 1 + fence.body.count("\n", 0, match.start())
            found.append(Example("send", match[1], match[2], line))
        # A line that starts like a send but is not one would be silently skipped: refuse it instead.
        starts = [m.start() for m in re.finditer(r"^send[ \t]", fence.body, re.MULTILINE)]
        if len(starts) != len(found):
            raise DocError(f"{self.where(fence.line)}: a send line is not `send NAME '<json>'`")
        return found


# --------------------------------------------------------------------------------------- placeholders


def lookup(reference: str, answers: dict[str, Any]) -> Any:
    name, _, path = reference.strip().partition(".")
    if name not in answers:
        raise DocError(f"{{{{{reference}}}}} names no earlier answer ({name!r})")
    value = answers[name]
    for key in re.findall(r"[^.\[\]]+", path):
        try:
            value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, ValueError, TypeError):
            raise DocError(f"{{{{{reference}}}}}: the answer {name!r} has nothing at {key!r}") from None
    return value


def fill(value: Any, answers: dict[str, Any]) -> Any:
    """``value`` with every ``{{NAME.path}}`` replaced (see the module docstring)."""
    if isinstance(value, dict):
        return {k: fill(v, answers) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, answers) for v in value]
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole:
            return lookup(whole[1], answers)
        return PLACEHOLDER.sub(lambda m: _as_text(lookup(m[1], answers)), value)
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DocError(f"only strings and numbers can be written inside a string, not {value!r}")
    return str(value)


def parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise DocError(f"{where}: not JSON: {exc}") from None


# ------------------------------------------------------------------------------------------- matching


def mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where the abridged ``expected`` is not contained in ``actual`` (empty: it is)."""
    here = path or "(top)"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{here}: expected an object, got {_short(actual)}"]
        problems = []
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else key
            if key not in actual:
                problems.append(f"{sub}: missing from the real answer")
            else:
                problems += mismatches(value, actual[key], sub)
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{here}: expected an array, got {_short(actual)}"]
        open_ended = bool(expected) and expected[-1] == ELLIPSIS
        shown = expected[:-1] if open_ended else expected
        if len(actual) < len(shown) or (not open_ended and len(actual) != len(shown)):
            more = " or more" if open_ended else ""
            return [f"{here}: expected {len(shown)}{more} items, got {len(actual)}"]
        return [p for i, item in enumerate(shown) for p in mismatches(item, actual[i], f"{path}[{i}]")]
    if isinstance(expected, str) and expected.endswith(ELLIPSIS):
        if isinstance(actual, str) and actual.startswith(expected[:-1]):
            return []
        return [f"{here}: expected a string starting {expected[:-1]!r}, got {_short(actual)}"]
    if type(expected) is bool or type(actual) is bool or expected is None or actual is None:
        same = expected is actual
    elif isinstance(expected, int | float) and isinstance(actual, int | float):
        same = expected == actual
    else:
        same = type(expected) is type(actual) and expected == actual
    return [] if same else [f"{here}: expected {_short(expected)}, got {_short(actual)}"]


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def state_of(answer: dict[str, Any]) -> str:
    """The task state the documents promise for an answer."""
    if "error" in answer:
        return "TASK_STATE_FAILED"
    result = answer.get("result")
    status = result.get("status") if isinstance(result, dict) else None
    if status == "clarify":
        return "TASK_STATE_INPUT_REQUIRED"
    return REJECTING.get(status, "TASK_STATE_COMPLETED")


# ---------------------------------------------------------------------------------------------- running


class JsonRpcSender:
    """What ``send`` does, through the app's Flask test client: one SendMessage per request."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._ids = itertools.count(1)

    def post(self, body: Any) -> Any:
        """POST a whole JSON-RPC body to ``/a2a/jsonrpc`` with ``A2A-Version: 1.0``; the parsed response."""
        response = self.client.post("/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"})
        if response.status_code != 200:
            raise DocError(
                f"POST /a2a/jsonrpc answered HTTP {response.status_code}: {response.get_data(True)}"
            )
        return response.get_json()

    def send(self, request: Any) -> tuple[str, dict[str, Any]]:
        """``(task state, answer)`` for one runtime request."""
        n = next(self._ids)
        message = {
            "messageId": f"doc-{n}",
            "role": "ROLE_USER",
            "parts": [{"mediaType": "application/json", "data": request}],
        }
        reply = self.post(
            {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": message}}
        )
        if "error" in reply:
            raise DocError(f"SendMessage itself failed: {reply}")
        return answer_of(reply["result"]["task"])


def answer_of(task: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    state = task["status"]["state"]
    if state == "TASK_STATE_FAILED":
        return state, {"error": task["status"]["message"]["metadata"]["quinelingError"]}
    (artifact,) = [a for a in task.get("artifacts", []) if a["artifactId"] == "quineling-result"]
    return state, artifact["parts"][0]["data"]


@dataclass(slots=True)
class Run:
    """What executing a document's examples gave: each labelled answer, in order."""

    answers: dict[str, Any] = field(default_factory=dict)
    requests: dict[str, Any] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)


def run_examples(doc: Document, sender: JsonRpcSender) -> Run:
    """Execute every example of ``doc`` in order and check each shown answer; raises :class:`DocError`."""
    run = Run()
    for example in doc.examples():
        where = doc.where(example.line)
        request = fill(parse_json(example.request_text, where), run.answers)
        if example.kind == "rpc":
            answer = sender.post(request)
        else:
            state, answer = sender.send(request)
            run.states[example.name] = state
            if state != state_of(answer):
                raise DocError(
                    f"{where}: {example.name} ended {state}, but its answer implies {state_of(answer)}"
                )
            if example.answer_text is None and state != "TASK_STATE_COMPLETED":
                raise DocError(f"{where}: {example.name} ended {state} {_short(answer)}; show its answer")
        run.requests[example.name], run.answers[example.name] = request, answer
        if example.answer_text is None:
            continue
        assert example.answer_line is not None
        shown = fill(parse_json(example.answer_text, doc.where(example.answer_line)), run.answers)
        problems = mismatches(shown, answer)
        if problems:
            raise DocError(
                f"{doc.where(example.answer_line)}: the answer shown for {example.name} differs from the real "
                "one:\n  " + "\n  ".join(problems)
            )
    return run
