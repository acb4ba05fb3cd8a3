"""``docs/ranch-guide.md`` is executable: every ``send`` runs against the real app in document order, and every
answer shown must be contained in the real one (conventions: ``tests/docs/examples.py``)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from quineling.app import create_app
from tests.docs.examples import Document, JsonRpcSender, Run, run_examples

DOC = "docs/ranch-guide.md"


@pytest.fixture(scope="module")
def doc() -> Document:
    return Document.load(DOC)


@pytest.fixture(scope="module")
def run(doc: Document) -> Run:
    app = create_app(config={"store_url": "memory://"})
    return run_examples(doc, JsonRpcSender(app.test_client()))


def test_every_request_of_the_guide_gives_the_answer_shown(doc: Document, run: Run) -> None:
    examples = doc.examples()
    assert examples and len(run.answers) == len(examples)
    operations = {run.requests[e.name]["operation"] for e in examples}
    # The guide's story: parents, a library birth, a world birth, and annotation.
    assert {"offspringPreview", "offspringFrame", "offspringAdmit", "lineage", "annotate"} <= operations
    assert {"worldCreate", "worldInspect", "worldCommand"} <= operations


def test_the_world_birth_and_the_annotation_happened(run: Run) -> None:
    residents = run.answers["annotated-world"]["result"]["residents"]
    child = [r for r in residents if r["artifactId"] == run.answers["birth"]["result"]["artifactId"]]
    assert [r["stage"] for r in child] == ["nursery"]
    assert child[0]["intentHash"] == run.answers["annotated"]["result"]["companions"]["intentHash"]


def test_the_world_id_recipe_gives_the_id_of_the_answer(doc: Document, run: Run) -> None:
    """The guide says where a world id comes from and shows a Python one-liner that computes it."""
    command = doc.fence("sh", "world-id").body.strip()
    assert command.startswith("python3 -c '") and "\n" not in command
    bash = shutil.which("bash")
    assert bash
    done = subprocess.run([bash, "-c", command], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == run.answers["world"]["result"]["id"]
