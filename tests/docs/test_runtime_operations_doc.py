"""``docs/runtime-operations.md`` is executable: every request runs against the real app, in document order,
and every answer shown must be contained in the real one (conventions: ``tests/docs/examples.py``).

Also checked: all sixteen operations have a section with a completed example of their own, the error table
lists exactly the runtime's error codes, the capacity table is ``RuntimeLimits()``, and the ``send`` helper the
page tells readers to paste really gives those answers over HTTP.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from quineling.app import create_app
from quineling.runtime.context import RuntimeLimits
from quineling.runtime.errors import ERROR_CODES
from quineling.runtime.product_operations import ALL_OPERATIONS
from tests.docs.examples import Document, JsonRpcSender, Run, run_examples
from tests.docs.helper import run_helper

DOC = "docs/runtime-operations.md"


@pytest.fixture(scope="module")
def doc() -> Document:
    return Document.load(DOC)


@pytest.fixture(scope="module")
def run(doc: Document) -> Run:
    app = create_app(config={"store_url": "memory://"})
    return run_examples(doc, JsonRpcSender(app.test_client()))


def test_every_example_gives_the_answer_shown(doc: Document, run: Run) -> None:
    """The work is done by the ``run`` fixture, which raises on the first example that differs."""
    examples = doc.examples()
    assert examples and len(run.answers) == len(examples)


def _sections(doc: Document) -> dict[str, tuple[int, int]]:
    """``operation -> (first line, last line)`` of each ``### `operation``` section."""
    lines = doc.text.splitlines()
    heads = [(i + 1, line) for i, line in enumerate(lines) if line.startswith("#")]
    sections: dict[str, tuple[int, int]] = {}
    for n, (line_no, line) in enumerate(heads):
        match = re.fullmatch(r"### `(\w+)`", line)
        if match:
            end = heads[n + 1][0] - 1 if n + 1 < len(heads) else len(lines)
            assert match[1] not in sections, f"two sections for {match[1]}"
            sections[match[1]] = (line_no, end)
    return sections


def test_all_sixteen_operations_have_a_section_with_a_completed_example(doc: Document, run: Run) -> None:
    sections = _sections(doc)
    assert sorted(sections) == sorted(ALL_OPERATIONS)
    for operation, (first, last) in sections.items():
        own = [
            e
            for e in doc.examples()
            if e.kind == "send"
            and first <= e.line <= last
            and run.requests[e.name].get("operation") == operation
            and e.answer_text is not None
            and run.states[e.name] == "TASK_STATE_COMPLETED"
        ]
        assert own, f"the {operation} section has no completed example of {operation} with its answer"
        # Each section states its fields in a table with a required column.
        body = "\n".join(doc.text.splitlines()[first - 1 : last])
        assert "| field | required |" in body, f"the {operation} section has no field table"


def _table_rows(doc: Document, heading: str) -> list[list[str]]:
    text = doc.text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]  # skip head, rule


def test_error_table_lists_exactly_the_runtime_error_codes(doc: Document) -> None:
    codes = [row[0].strip("`") for row in _table_rows(doc, "## Error codes")]
    assert len(codes) == len(set(codes))
    assert set(codes) == ERROR_CODES


def test_capacity_table_is_the_runtime_default_limits(doc: Document) -> None:
    table = {row[0].strip("`"): int(row[1]) for row in _table_rows(doc, "## Capacity")}
    assert table == dataclasses.asdict(RuntimeLimits())


def _masked(answer: Any) -> Any:
    """An answer with what is fresh on every run (record ids, timestamps) blanked."""
    text = json.dumps(answer)
    text = re.sub(r"rec_[0-9a-f]{32}", "rec_", text)
    text = re.sub(r'"createdAt": "[^"]*"', '"createdAt": ""', text)
    return json.loads(text)


@pytest.mark.slow
def test_the_send_helper_gives_the_documented_answers_over_http(doc: Document, run: Run) -> None:
    """The pasted helper, run by bash against a real HTTP server, prints what the test client saw."""
    chosen = ["sq", "first-run", "again", "unknown", "incomplete"]
    examples = {e.name: e for e in doc.examples()}
    printed = run_helper(doc.fence("sh", "helper").body, [(n, examples[n].request_text) for n in chosen])
    for name in chosen:
        state, answer = printed[name]
        assert state == run.states[name], name
        assert _masked(answer) == _masked(run.answers[name]), name


def test_the_two_capacity_variables_set_the_limits_the_page_names(doc: Document) -> None:
    assert "`QUINELING_MAX_ARTIFACTS` sets `max_artifacts`" in doc.text
    assert "`QUINELING_MAX_RECORDS` sets `max_records`" in doc.text
    app = create_app(config={"store_url": "memory://", "max_artifacts": 3, "max_records": 5})
    limits = app.extensions["quineling"].extras["runtime"].limits
    assert (limits.max_artifacts, limits.max_records) == (3, 5)
    assert dataclasses.replace(limits, max_artifacts=128, max_records=256) == RuntimeLimits()
