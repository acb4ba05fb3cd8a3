"""Statements of the docs that the code can contradict, checked against the code (issue: docs that match)."""

from __future__ import annotations

import re
from pathlib import Path

from quineling.app import create_app
from quineling.cli_a2a.options import BY_DEST
from tests.a2a.conftest import text, user_message
from tests.support.bindings import V1

ROOT = Path(__file__).resolve().parents[2]
CLI_DOC = (ROOT / "docs/cli.md").read_text()
CONFORMANCE_DOC = (ROOT / "docs/conformance.md").read_text()
SQUARE_SUM = "[2,3,4] | square | sum | report total"


def test_one_default_for_a2a_version_in_help_and_docs() -> None:
    option = BY_DEST["a2a_version"]
    row = re.search(r"^\| `--a2a-version V` \| ([^|]+) \|", CLI_DOC, re.MULTILINE)
    assert row is not None and option.default == row.group(1).strip() == "1.0"
    assert "highest" not in option.help  # --help says the same default as the table, nothing else


def test_the_cli_doc_says_this_server_numbers_its_stream_events() -> None:
    """The server sends an SSE ``id:`` with every stream event, so the compliance row must not say otherwise."""
    client = create_app().test_client()
    response = client.post(
        "/a2a/rest/message:stream", json={"message": user_message(text(SQUARE_SUM))}, headers=V1
    )
    events = response.get_data(as_text=True).split("\n\n")
    data = [event for event in events if "data:" in event]
    assert data and all(re.search(r"^id: \S+", event, re.MULTILINE) for event in data)
    row = next(line for line in CLI_DOC.splitlines() if line.startswith("| TASK_SUBSCRIBE_002 "))
    assert "sends none" not in row and "Last-Event-ID" in row


def test_the_conformance_doc_runs_the_default_server_to_the_end() -> None:
    """The default (gevent) server does not stall the kit, and no 5 s stream limit is described as current."""
    rows = [line for line in CONFORMANCE_DOC.splitlines() if line.startswith("| 1.0, ")]
    defaults = [row for row in rows if "defaults" in row]
    assert defaults and all("stalled" not in row and "passed" in row for row in defaults)
    assert "5 s of silence" not in CONFORMANCE_DOC and "5-second read-timeout defect" not in CONFORMANCE_DOC
