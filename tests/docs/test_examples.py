"""The checker behind the executable documents must be able to fail: abridged matching, placeholders, the
fence conventions, and a wrong answer in a document."""

from __future__ import annotations

from pathlib import Path

import pytest

from quineling.app import create_app
from tests.docs.examples import (
    DocError,
    Document,
    JsonRpcSender,
    fill,
    mismatches,
    run_examples,
    state_of,
)


@pytest.mark.parametrize(
    ("shown", "real"),
    [
        ({"a": 1}, {"a": 1, "b": 2}),  # an object shows some fields
        ([1, 2, "…"], [1, 2, 3, 4]),  # an open array shows its first items
        ([1, "…"], [1]),
        ("sha256:4c…", "sha256:4cad"),  # a string ending in … shows its beginning
        ({"x": [{"y": None}]}, {"x": [{"y": None, "z": 0}]}),
        (29, 29.0),  # JSON numbers: 29 and 29.0 are one value
    ],
)
def test_abridged_answers_match(shown: object, real: object) -> None:
    assert mismatches(shown, real) == []


@pytest.mark.parametrize(
    ("shown", "real", "where"),
    [
        ({"a": 1}, {"a": 2}, "a"),
        ({"a": 1}, {"b": 1}, "a"),
        ([1, 2], [1, 2, 3], "(top)"),  # an array without "…" is complete
        ([1, 2, "…"], [1], "(top)"),
        ([{"k": 1}], [{"k": 2}], "[0].k"),
        ("abc…", "abd", "(top)"),
        ("abc", "abcd", "(top)"),
        (True, 1, "(top)"),  # a boolean is not a number
        (0, False, "(top)"),
        (None, 0, "(top)"),
        ("1", 1, "(top)"),
        ({"a": {}}, {"a": []}, "a"),
    ],
)
def test_differences_are_reported_with_their_path(shown: object, real: object, where: str) -> None:
    problems = mismatches(shown, real)
    assert problems and problems[0].startswith(where)


def test_placeholders_take_values_or_text() -> None:
    answers = {"sq": {"result": {"id": "sha256:ab", "list": [{"n": 3}], "obj": {"k": 1}}}}
    assert fill({"a": "{{sq.result.id}}"}, answers) == {"a": "sha256:ab"}
    assert fill(["{{sq.result.obj}}"], answers) == [{"k": 1}]
    assert fill("n={{sq.result.list[0].n}}!", answers) == "n=3!"
    with pytest.raises(DocError, match="names no earlier answer"):
        fill("{{other.result}}", answers)
    with pytest.raises(DocError, match="nothing at"):
        fill("{{sq.result.missing}}", answers)
    with pytest.raises(DocError, match="only strings and numbers"):
        fill("x {{sq.result.obj}}", answers)


def test_the_task_state_follows_from_the_answer() -> None:
    assert state_of({"error": {"code": "busy"}}) == "TASK_STATE_FAILED"
    assert state_of({"result": {"status": "clarify"}}) == "TASK_STATE_INPUT_REQUIRED"
    assert state_of({"result": {"status": "inconsistent"}}) == "TASK_STATE_REJECTED"
    assert state_of({"result": {"status": "rejected"}}) == "TASK_STATE_COMPLETED"  # a preview's answer
    assert state_of({"result": {"id": "rec_1"}}) == "TASK_STATE_COMPLETED"


def _doc(tmp_path: Path, text: str) -> Document:
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    return Document.load(path)


SQ = "send sq '" + '{"operation": "create", "thought": "[2,3,4] | square | sum | report total"}' + "'"
RUN = "send r '" + '{"operation": "run", "artifactId": "{{sq.result.artifact.id}}"}' + "'"


def _execute(tmp_path: Path, text: str) -> None:
    run_examples(
        _doc(tmp_path, text), JsonRpcSender(create_app(config={"store_url": "memory://"}).test_client())
    )


def test_a_correct_document_runs(tmp_path: Path) -> None:
    _execute(
        tmp_path,
        f'```sh\n{SQ}\n{RUN}\n```\n\n```json answer\n{{"result": {{"outputs": {{"total": 29}}}}}}\n```\n',
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            f'```sh\n{SQ}\n{RUN}\n```\n```json answer\n{{"result": {{"outputs": {{"total": 30}}}}}}\n```\n',
            "total",
        ),
        (f'```sh\n{SQ}\n```\n```json answer\n{{"result": {{"status": "clarify"}}}}\n```\n', "status"),
        # A failing request shown without its answer: the reader would believe it completed.
        ('```sh\nsend x \'{"operation": "explode"}\'\n```\n', "show its answer"),
        ("```json answer\n{}\n```\n", "must follow"),
        (f"```sh\n{SQ}\n```\n```json answer\n{{}}\n```\n```json answer\n{{}}\n```\n", "already has"),
        (f"```sh\n{SQ}\n{SQ}\n```\n", "used twice"),
        ("```sh\nsend Bad-Name '{}'\n```\n", "is not `send NAME"),
        (f"```sh\n{RUN}\n```\n", "names no earlier answer"),
        ("```sh\nsend x '{not json}'\n```\n", "not JSON"),
    ],
)
def test_a_wrong_document_fails(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DocError, match=message):
        _execute(tmp_path, text)
